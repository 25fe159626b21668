// Functions for DBAs: statistics, arena info, manual invalidation, resets.
#include "pg_memo.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_stats);
PG_FUNCTION_INFO_V1(pg_memo_info);
PG_FUNCTION_INFO_V1(pg_memo_invalidate);
PG_FUNCTION_INFO_V1(pg_memo_reset);
PG_FUNCTION_INFO_V1(pg_memo_reset_stats);
PG_FUNCTION_INFO_V1(pg_memo_generation);
Datum pg_memo_stats(PG_FUNCTION_ARGS);
Datum pg_memo_info(PG_FUNCTION_ARGS);
Datum pg_memo_invalidate(PG_FUNCTION_ARGS);
Datum pg_memo_reset(PG_FUNCTION_ARGS);
Datum pg_memo_reset_stats(PG_FUNCTION_ARGS);
Datum pg_memo_generation(PG_FUNCTION_ARGS);
}

#include <initializer_list>

namespace {

constexpr int kStatsColumns = 15;

double nanos_to_ms(uint64_t ns) { return double(ns) / 1e6; }

}  // namespace

Datum pg_memo_stats(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    using namespace pgmemo;
    StatsTable &stats = shared_state().stats;
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

    for (uint32_t i = 0; i < stats.size(); i++) {
        if (!stats.ready(i)) continue;
        const StatsSlot &s = stats.slot(i);
        if (i == StatsTable::kOverflowSlot && stats.get(i, kCalls) == 0) continue;
        Datum values[kStatsColumns];
        bool nulls[kStatsColumns] = {false};
        int c = 0;
        uint64_t computations = stats.get(i, kComputations);
        double total_ms = nanos_to_ms(stats.get(i, kComputeNanos));
        values[c++] = ObjectIdGetDatum(s.dbid);
        values[c++] = CStringGetTextDatum(s.name);
        for (Counter k : {kCalls, kHits, kMisses, kComputations, kBypasses, kInvalidations, kEvictions,
                          kTooLarge, kEntries, kBytes})
            values[c++] = Int64GetDatum(int64(stats.get(i, k)));
        values[c++] = Float8GetDatum(total_ms);
        if (computations)
            values[c++] = Float8GetDatum(total_ms / double(computations));
        else
            nulls[c++] = true;
        values[c++] = TimestampTzGetDatum(s.stats_reset.load());
        Assert(c == kStatsColumns);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
    PG_MEMO_ENTRY_END
}

Datum pg_memo_info(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    pgmemo::StoreInfo info = pgmemo::shared_state().store.info();
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "memo.info must return a record");
    Datum values[5] = {Int64GetDatum(int64(info.arena_bytes)), Int64GetDatum(int64(info.used_bytes)),
                       Int64GetDatum(int64(info.free_bytes)), Int64GetDatum(int64(info.entries)),
                       Int64GetDatum(int64(info.evictions))};
    bool nulls[5] = {false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
    PG_MEMO_ENTRY_END
}

// Marks the table (and its partitions or children) as written: the bump
// happens now and again at commit, so entries computed meanwhile die too.
Datum pg_memo_invalidate(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    Oid relid = PG_GETARG_OID(0);
    pgmemo::Shared &sh = pgmemo::shared_state();
    if (!get_rel_name(relid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relid)));
    if (!pg_class_ownercheck(relid, GetUserId()))
        aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)), get_rel_name(relid));
    List *rels = find_all_inheritors(relid, AccessShareLock, nullptr);
    ListCell *lc;
    foreach (lc, rels) {
        uint32_t slot = pgmemo::relation_slot(lfirst_oid(lc));
        pgmemo::mark_written(slot);
        sh.gens.bump(slot);
    }
    PG_RETURN_VOID();
    PG_MEMO_ENTRY_END
}

Datum pg_memo_reset(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    PG_RETURN_INT64(int64(pgmemo::shared_state().store.remove_all()));
    PG_MEMO_ENTRY_END
}

Datum pg_memo_reset_stats(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    pgmemo::shared_state().stats.reset_counters(GetCurrentTimestamp());
    PG_RETURN_VOID();
    PG_MEMO_ENTRY_END
}

Datum pg_memo_generation(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    pgmemo::Shared &sh = pgmemo::shared_state();
    PG_RETURN_INT64(int64(sh.gens.read(pgmemo::relation_slot(PG_GETARG_OID(0)))));
    PG_MEMO_ENTRY_END
}
