// memo.list, memo.list_as and memo.count: the hit path, and handing rows
// over.
//
// Hit path: build the key, one shared-lock lookup that copies the entry
// out, re-check privileges, hand the rows over. Nothing is parsed, planned
// or locked. A miss goes to a flight (flights.cpp) or straight to the miss
// path (compute.cpp).
#include "memoize.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "access/xlog.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_list);
PG_FUNCTION_INFO_V1(pg_memo_list_as);
PG_FUNCTION_INFO_V1(pg_memo_count);
Datum pg_memo_list(PG_FUNCTION_ARGS);
Datum pg_memo_list_as(PG_FUNCTION_ARGS);
Datum pg_memo_count(PG_FUNCTION_ARGS);
}

#include "delta_apply.hpp"
#include "result_format.hpp"

namespace pgmemo {

namespace {

// A transaction that wrote any watched table must see its own writes,
// which no other backend's computation contains: no flights for it.
bool flights_usable(const Encoded &key) {
    return guc_singleflight && own_writes().count == 0 && flight_allowed(key);
}

// The memoized result of a call: from the cache, or computed (through a
// flight when singleflight is on) and stored when allowed.
Result memoize(const Call &call) {
    Shared &sh = shared_state();
    uint32_t slot = stats_slot_for(VARDATA_ANY(call.cache_name), VARSIZE_ANY_EXHDR(call.cache_name));
    sh.stats.add(slot, kCalls);

    // pg_memo.enabled = off rules the cache out; transactions with one
    // snapshot must not see newer commits; a standby
    // has no triggers to invalidate anything; in replica mode (logical
    // replication apply) row triggers may run before the apply worker marks
    // its tables at pre-commit; a transaction that changed names may
    // resolve a query differently than any entry did.
    bool bypass = !guc_enabled || IsolationUsesXactSnapshot() || RecoveryInProgress() ||
                  SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA || transaction_changed_catalogs();
    Encoded key = encode_call(call);

    if (!bypass) {
        CopyOutSink sink;
        sink.want_stale = true;
        LookupStatus status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink);
        // An entry kept by deltas that only needs carrying forward: this call
        // carries it: routing carries through flights cut read throughput to
        // a fifth under 100 writes/s (bench/directory_writes.sh).
        if (status == LookupStatus::StaleKept) status = carry_and_look_up(call, key, slot, sink);
        if (status == LookupStatus::Hit && privileges_still_hold(sink.meta, sink.meta_len)) {
            sh.stats.add(slot, kHits);
            return Result{sink.payload, sink.payload_len};
        }
        if (status == LookupStatus::OwnWrites) bypass = true;
    }
    if (!bypass && flights_usable(key)) return memoize_in_flight(call, key, slot);
    return compute_and_store(call, key, slot, bypass, nullptr);
}

}  // namespace

TupleDesc stored_descriptor(const ResultReader &rd) {
    TupleDesc desc = CreateTemplateTupleDesc(int(rd.ncolumns()));
    for (uint32_t i = 0; i < rd.ncolumns(); i++)
        TupleDescInitEntry(desc, AttrNumber(i + 1), psprintf("column%u", i + 1), rd.columns()[i].type_oid,
                           rd.columns()[i].typmod, 0);
    return desc;
}

namespace {

// The stored rows have the query's own shape; they can be handed over as
// they are when the caller's row type has the same column types.
bool same_shape(const ResultReader &rd, TupleDesc expected) {
    if (uint32_t(expected->natts) != rd.ncolumns()) return false;
    for (int i = 0; i < expected->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(expected, i);
        if (att->attisdropped || att->atttypid != rd.columns()[i].type_oid) return false;
    }
    return true;
}

// The row type the caller expects; checked before anything is computed.
TupleDesc expected_row_type(FunctionCallInfo fcinfo) {
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (!rsinfo || !IsA(rsinfo, ReturnSetInfo) || !(rsinfo->allowedModes & SFRM_Materialize))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("set-valued function called in context that cannot accept a set")));
    TupleDesc expected = rsinfo->expectedDesc;
    if (!expected && get_call_result_type(fcinfo, nullptr, &expected) != TYPEFUNC_COMPOSITE)
        ereport(ERROR,
                (errcode(ERRCODE_SYNTAX_ERROR), errmsg("a column definition list is required for memo.list"),
                 errhint("Write SELECT * FROM memo.list(...) AS t(col type, ...), or use "
                         "memo.list_as(NULL::row_type, ...).")));
    return expected;
}

Datum return_rows(FunctionCallInfo fcinfo, TupleDesc expected, const Result &r) {
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

    ResultReader rd(r.payload, r.len);
    if (!rd.valid() || rd.kind() != ResultKind::Rows) elog(ERROR, "pg_memo: corrupt row result");

    TupleConversionMap *map = nullptr;
    if (!same_shape(rd, expected))
        map = convert_tuples_by_position(stored_descriptor(rd), expected,
                                         "query result does not match the column definition list");

    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    Tuplestorestate *store = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false,
                                                   work_mem);
    TupleDesc result_desc = CreateTupleDescCopy(expected);
    MemoryContextSwitchTo(old);

    const char *data;
    uint32_t len;
    while (rd.next_row(&data, &len)) {
        HeapTupleData tuple;
        tuple.t_len = len;
        tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(data));
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        if (map) {
            HeapTuple converted = execute_attr_map_tuple(&tuple, map);
            tuplestore_puttuple(store, converted);
            heap_freetuple(converted);
        } else {
            tuplestore_puttuple(store, &tuple);
        }
    }
    rsinfo->returnMode = SFRM_Materialize;
    rsinfo->setResult = store;
    rsinfo->setDesc = result_desc;
    return (Datum)0;
}

Datum list_entry(FunctionCallInfo fcinfo, int first_arg) {
    TupleDesc expected = expected_row_type(fcinfo);
    Call call;
    read_arguments(fcinfo, first_arg, Kind::List, &call);
    return return_rows(fcinfo, expected, memoize(call));
}

}  // namespace

}  // namespace pgmemo

Datum pg_memo_list(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 0); }

Datum pg_memo_list_as(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 1); }

Datum pg_memo_count(PG_FUNCTION_ARGS) {
    pgmemo::Call call;
    pgmemo::read_arguments(fcinfo, 0, pgmemo::Kind::Count, &call);
    pgmemo::Result r = pgmemo::memoize(call);
    pgmemo::ResultReader rd(r.payload, r.len);
    if (!rd.valid() || rd.kind() != pgmemo::ResultKind::Count) elog(ERROR, "pg_memo: corrupt count result");
    PG_RETURN_INT64(rd.count());
}
