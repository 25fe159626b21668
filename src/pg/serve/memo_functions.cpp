// memo.list, memo.list_as and memo.count: the hit path, and handing rows
// over.
//
// Hit path: build the key, one shared-lock lookup that copies the entry
// out, re-check privileges, hand the rows over. Nothing is parsed, planned
// or locked. A miss goes to a flight (flights.cpp) or straight to the miss
// path (compute.cpp).
#include "compute/flights.hpp"
#include "invalidate/catalog_changes.hpp"
#include "compute/compute.hpp"
#include "copy_out_sink.hpp"
#include "privileges.hpp"
#include "query_errors.hpp"
#include "invalidate/write_set.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/tupconvert.h"
#include "access/xlog.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/rls.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_list);
PG_FUNCTION_INFO_V1(pg_memo_list_as);
PG_FUNCTION_INFO_V1(pg_memo_count);
PG_FUNCTION_INFO_V1(pg_memo_list_1_2);
PG_FUNCTION_INFO_V1(pg_memo_list_as_1_2);
PG_FUNCTION_INFO_V1(pg_memo_count_1_2);
Datum pg_memo_list(PG_FUNCTION_ARGS);
Datum pg_memo_list_as(PG_FUNCTION_ARGS);
Datum pg_memo_count(PG_FUNCTION_ARGS);
Datum pg_memo_list_1_2(PG_FUNCTION_ARGS);
Datum pg_memo_list_as_1_2(PG_FUNCTION_ARGS);
Datum pg_memo_count_1_2(PG_FUNCTION_ARGS);
}

#include "compute/carry.hpp"
#include "compute/keyed_settings.hpp"
#include "compute/learned_reads.hpp"
#include "compute/statement_snapshot.hpp"
#include "serve/call_options.hpp"
#include "serve/older_answers.hpp"
#include "compute/remembered_errors.hpp"
#include "serve/serve_statement.hpp"
#include "durability/wal_records.hpp"
#include "result_format.hpp"
#include "reason_log.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

namespace pgmemo {

namespace {

// How the last memoize call of this backend was answered (serve_statement).
Served last_served = Served::Computed;

// A transaction that wrote any watched table must see its own writes,
// which no other backend's computation contains: no flights for it.
// With row_security off, a query under policies fails for this session
// alone (the key does not hold the setting): its error is not its waiters'.
bool flights_usable(const Encoded &key) {
    return guc_singleflight && own_writes().count == 0 && row_security && flight_allowed(key);
}

// A registered statement whose snapshot is older than the present: the
// entry computed as of the state that snapshot sees, if the store holds
// one (current or not), is its answer (docs/consistency.md, "Entries as of
// their snapshot"). Looked up apart, after the ordinary lookup, so that
// hits as of now pay nothing for it.
bool served_as_of_snapshot(const Call &call, const Encoded &key, uint32_t slot, Result *out) {
    CopyOutSink sink;
    sink.as_of_print = as_of_print(call);
    if (sink.as_of_print == 0) return false;
    Shared &sh = shared_state();
    LookupStatus status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink);
    if (!entry_answers_call(call, status, sink) || !privileges_still_hold(sink.meta, sink.meta_len)) return false;
    sh.stats.add(slot, kHits);
    last_served = Served::Hit;
    *out = Result{sink.payload, sink.payload_len};
    return true;
}

Result serve_by_key(const Call &call, const Encoded &key, uint32_t slot);

// After a lookup that found no current entry (status, copied into sink):
// carry an entry kept by deltas forward, or compute (through a flight when
// singleflight is on) and store when allowed.
Result miss_path(const Call &call, const Encoded &key, uint32_t slot, CopyOutSink &sink, LookupStatus status) {
    Shared &sh = shared_state();
    // A statement this backend has not analyzed may read settings the key
    // does not hold (a policy's): learned first, then served by the key
    // that holds them from the lookup on, as by a backend that knew.
    if (key.settings_len == 0 && status != LookupStatus::OwnWrites && settings_unknown(call) &&
        learn_statement_settings(call, slot))
        return serve_by_key(call, key_with_settings(call), slot);
    // An entry kept by deltas that only needs carrying forward: this call
    // carries it: routing carries through flights cut read throughput to a
    // fifth under 100 writes/s (bench/directory_writes.sh).
    if (status == LookupStatus::StaleKept) status = carry_and_look_up(call, key, slot, sink);
    if (status == LookupStatus::Hit && privileges_still_hold(sink.meta, sink.meta_len) &&
        answers_as_of_now(call)) {
        sh.stats.add(slot, kHits);
        last_served = Served::Hit;
        return Result{sink.payload, sink.payload_len};
    }
    last_served = Served::Computed;
    // A failure remembered for the key (pg_memo.error_ttl): raised again,
    // as a failed computation would be (stale_on_error may answer it).
    raise_if_remembered(call, key, slot);
    bool own_writes_hidden = status == LookupStatus::OwnWrites;
    if (own_writes_hidden) last_served = Served::Bypassed;
    if (!own_writes_hidden && flights_usable(key)) return memoize_in_flight(call, key, slot);
    return compute_and_store(call, key, slot, own_writes_hidden ? kBypassOwnWrites : kCounterCount, nullptr);
}

// Under max_staleness, with an older answer in the bound: served at once,
// unless it is due for a refresh and no one is computing it, when this
// caller computes it (others keep being served). Returns false if the
// caller must take the miss path after all.
bool serve_or_refresh(const Call &call, const Encoded &key, uint32_t slot, const OlderAnswer &older, Result *out) {
    if (!within_bound(older, guc_max_staleness_ms)) return false;
    if (refresh_due(older)) {
        if (!flights_usable(key)) return false;  // no one to refresh it for the others
        // A failed refresh is a failed computation: stale_on_error decides.
        *out = older_on_error(older, slot, [&]() -> Result {
            Result result{};
            if (lead_refresh(call, key, slot, &result)) return result;
            if (serve_older(older, slot, kStaleHits, &result)) return result;
            return Result{};  // not readable by this caller: the miss path
        });
        return out->present();
    }
    return serve_older(older, slot, kStaleHits, out);
}

// Why this call may not use the cache (a bypass counter), or
// kCounterCount. pg_memo.enabled = off rules the cache out; transactions
// with one snapshot must not see newer commits; a standby serves only
// while it replays the records of every commit (wal_records.hpp); in
// replica mode (logical replication apply) row triggers may run before the
// apply worker marks its tables at pre-commit; a transaction that changed
// names may resolve a query differently than any entry did; a parallel
// worker (a function marked PARALLEL SAFE that calls memo) is not where
// the leader observes what its computation reads.
Counter bypass_reason() {
    if (!guc_enabled) return kBypassDisabled;
    if (IsolationUsesXactSnapshot()) return kBypassTransactionSnapshot;
    if (RecoveryInProgress() && !standby_serves()) return kBypassStandby;
    if (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA) return kBypassReplicaRole;
    if (transaction_changed_catalogs()) return kBypassCatalogChanged;
    if (IsParallelWorker()) return kBypassParallelWorker;
    return kCounterCount;
}

// The memoized result of a call: from the cache, or computed (through a
// flight when singleflight is on) and stored when allowed.
Result memoize(const Call &call) {
    Shared &sh = shared_state();
    note_memo_call();  // inside another call's computation, it cannot store what this returns
    uint32_t slot = stats_slot_for(VARDATA_ANY(call.cache_name), VARSIZE_ANY_EXHDR(call.cache_name));
    sh.stats.add(slot, kCalls);

    Counter bypass = call.uncached ? kBypassDisabled : bypass_reason();
    Encoded key = key_with_settings(call);

    if (bypass != kCounterCount) {
        last_served = Served::Bypassed;
        return compute_and_store(call, key, slot, bypass, nullptr);
    }
    return serve_by_key(call, key, slot);
}

// The call served by its key: a hit, an entry as of a registered
// statement's snapshot, an older answer, or the miss path.
Result serve_by_key(const Call &call, const Encoded &key, uint32_t slot) {
    Shared &sh = shared_state();
    CopyOutSink sink;
    sink.want_stale = true;
    sink.want_older = older_answers_wanted();
    LookupStatus status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink);
    if (sink.invalidated_by != kCounterCount) log_reason(call.cache_name, "entry stale", sink.invalidated_by);
    // What the lookup found (an entry, an older answer) holds as of now: a
    // registered statement whose snapshot is older gets an entry as of
    // that snapshot, or its own answer.
    if (!answers_as_of_now(call)) {
        Result r;
        if (served_as_of_snapshot(call, key, slot, &r)) return r;
        last_served = Served::Bypassed;
        return compute_and_store(call, key, slot, kBypassStatementSnapshot, nullptr);
    }
    if (status == LookupStatus::Hit && privileges_still_hold(sink.meta, sink.meta_len)) {
        sh.stats.add(slot, kHits);
        last_served = Served::Hit;
        return Result{sink.payload, sink.payload_len};
    }

    OlderAnswer older = older_answer(sink, status);
    Result r;
    last_served = Served::Older;  // unless the refresh below computes it
    if (older.present && serve_or_refresh(call, key, slot, older, &r)) return r;
    log_state_if_due();  // a primary's sign of life for its standbys
    return older_on_error(older, slot, [&] { return miss_path(call, key, slot, sink, status); });
}

// The memoized result with options in place of the session's settings, for
// this call only (restored however it ends).
Result memoize_with(const Call &call, const StatementOptions &options) {
    int max_staleness = guc_max_staleness_ms, stale_on_error = guc_stale_on_error_ms, error_ttl = guc_error_ttl_ms;
    guc_max_staleness_ms = options.max_staleness_ms;
    guc_stale_on_error_ms = options.stale_on_error_ms;
    guc_error_ttl_ms = options.error_ttl_ms;
    Result r{};
    PG_TRY();
    { r = memoize(call); }
    PG_FINALLY();
    {
        guc_max_staleness_ms = max_staleness;
        guc_stale_on_error_ms = stale_on_error;
        guc_error_ttl_ms = error_ttl;
    }
    PG_END_TRY();
    return r;
}

}  // namespace

namespace {

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

// The result's rows into the spill's tuplestore (there already if the
// result was too large to store).
void put_result_rows(const Result &r, RowSpill *spill) {
    if (r.spilled) return;
    // A failed attempt's rows (stale_on_error answered it) are dropped.
    if (spill->store) tuplestore_end(spill->store);
    spill->store = nullptr;
    spill->map = nullptr;
    put_rows_for_caller(r.payload, r.len, spill);
}

Datum return_rows(FunctionCallInfo fcinfo, TupleDesc expected, const Result &r, RowSpill *spill) {
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    put_result_rows(r, spill);
    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    rsinfo->returnMode = SFRM_Materialize;
    rsinfo->setResult = spill->store;
    rsinfo->setDesc = CreateTupleDescCopy(expected);
    MemoryContextSwitchTo(old);
    return (Datum)0;
}

// 1.2's overloads take the options after the parameters (kNoOptions: 1.0's).
constexpr int kNoOptions = -1;

Result memoize_call(FunctionCallInfo fcinfo, const Call &call, int options_arg) {
    if (options_arg == kNoOptions) return memoize(call);
    return memoize_with(call, call_options(fcinfo, options_arg));
}

Datum list_entry(FunctionCallInfo fcinfo, int first_arg, int options_arg) {
    TupleDesc expected = expected_row_type(fcinfo);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    DeclaredBy declared_by = first_arg == 0 ? DeclaredBy::ColumnList : DeclaredBy::RowTypeArgument;
    RowSpill spill{rsinfo->econtext->ecxt_per_query_memory, CurrentResourceOwner, expected, declared_by,
                   (rsinfo->allowedModes & SFRM_Materialize_Random) != 0, nullptr, nullptr};
    Call call;
    read_arguments(fcinfo, first_arg, Kind::List, &call);
    call.spill = &spill;
    return return_rows(fcinfo, expected, memoize_call(fcinfo, call, options_arg), &spill);
}

}  // namespace

Served serve_statement(const Call &call, const StatementOptions &options) {
    int warning_level = limit_warning_level;
    limit_warning_level = LOG;
    PG_TRY();
    { put_result_rows(memoize_with(call, options), call.spill); }
    PG_FINALLY();
    { limit_warning_level = warning_level; }
    PG_END_TRY();
    return last_served;
}

}  // namespace pgmemo

namespace pgmemo {
namespace {

Datum count_entry(FunctionCallInfo fcinfo, int options_arg) {
    Call call;
    read_arguments(fcinfo, 0, Kind::Count, &call);
    Result r = memoize_call(fcinfo, call, options_arg);
    ResultReader rd(r.payload, r.len);
    if (!rd.valid() || rd.kind() != ResultKind::Count) elog(ERROR, "pg_memo: corrupt count result");
    PG_RETURN_INT64(rd.count());
}

}  // namespace
}  // namespace pgmemo

// 1.0's: (cache_name, query, params text[]).
Datum pg_memo_list(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 0, pgmemo::kNoOptions); }
Datum pg_memo_list_as(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 1, pgmemo::kNoOptions); }
Datum pg_memo_count(PG_FUNCTION_ARGS) { return pgmemo::count_entry(fcinfo, pgmemo::kNoOptions); }

// 1.2's: (cache_name, query, params memo.params, max_staleness,
// stale_on_error, error_ttl).
Datum pg_memo_list_1_2(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 0, 3); }
Datum pg_memo_list_as_1_2(PG_FUNCTION_ARGS) { return pgmemo::list_entry(fcinfo, 1, 4); }
Datum pg_memo_count_1_2(PG_FUNCTION_ARGS) { return pgmemo::count_entry(fcinfo, 3); }
