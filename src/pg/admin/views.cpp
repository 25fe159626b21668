// The monitoring views' functions: memo.stats(), memo.flights(),
// memo.info(), under 1.0's symbols and 1.1's versioned ones.
//
// Locks: memo.flights copies the flight slots under the flight lock
// (shared; an out-of-memory error there only releases it); memo.info reads
// the delta log's record count under its lock (shared); statistics and the
// store's counts are atomics, read without a lock.
#include "admin/views.hpp"
#include "call.hpp"
#include "commit_counts.hpp"
#include "durability/warm_restart.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#include <initializer_list>

extern "C" {
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_stats);
PG_FUNCTION_INFO_V1(pg_memo_info);
PG_FUNCTION_INFO_V1(pg_memo_flights);
Datum pg_memo_stats(PG_FUNCTION_ARGS);
Datum pg_memo_info(PG_FUNCTION_ARGS);
Datum pg_memo_flights(PG_FUNCTION_ARGS);
}

namespace {

constexpr int kStatsColumns_1_0 = 22;
// 1.1: delta_kept, delta_corrected, delta_fallbacks, stale_hits,
// stale_on_error_hits, error_hits
constexpr int kStatsColumns_1_1 = 28;
// 1.2: failures
constexpr int kStatsColumns = 29;
// 1.1: delta_log_bytes, delta_records, delta_fallbacks, restored_at, restored_entries
constexpr int kInfoColumns_1_1 = 10;
// 1.2: writing_commits, counters_bumped
constexpr int kInfoColumns = 12;

double nanos_to_ms(uint64_t ns) { return double(ns) / 1e6; }

}  // namespace

// Members of pg_read_all_stats see everything. Others see the cache names
// of their own database (or of their own flights) only: names are the
// applications' own labels, which other databases' users have no need for.
bool pgmemo::reads_all_stats() { return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS); }

bool pgmemo::owns_key(const char *key, uint32_t key_len, Oid userid) {
    return has_privs_of_role(GetUserId(), userid) && (superuser() || key_holds_callers_settings(key, key_len));
}

namespace {

// Calls row(rsinfo, slot index, slot, whether its name is shown) for every
// claimed stats slot, into a materialized result.
template <class Row>
void each_stats_slot(FunctionCallInfo fcinfo, Row row) {
    using namespace pgmemo;
    StatsTable &stats = shared_state().stats;
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    bool all_stats = pgmemo::reads_all_stats();
    for (uint32_t i = 0; i < stats.size(); i++) {
        if (!stats.ready(i)) continue;
        const StatsSlot &s = stats.slot(i);
        row(rsinfo, i, s, all_stats || s.dbid == MyDatabaseId || s.dbid == InvalidOid);  // InvalidOid: "(other)"
    }
}

// Fills memo.stats: 1.0's columns, 1.1's or 1.2's (ncolumns).
Datum fill_stats(FunctionCallInfo fcinfo, int ncolumns) {
    using namespace pgmemo;
    StatsTable &stats = shared_state().stats;
    each_stats_slot(fcinfo, [&](ReturnSetInfo *rsinfo, uint32_t i, const StatsSlot &s, bool name_shown) {
        if (i == StatsTable::kOverflowSlot && stats.get(i, kCalls) == 0 && stats.get(i, kEntries) == 0) return;
        Datum values[kStatsColumns];
        bool nulls[kStatsColumns] = {false};
        int c = 0;
        uint64_t computations = stats.get(i, kComputations);
        double total_ms = nanos_to_ms(stats.get(i, kComputeNanos));
        values[c++] = ObjectIdGetDatum(s.dbid);
        if (name_shown)
            values[c++] = CStringGetTextDatum(s.name);
        else
            nulls[c++] = true;
        for (Counter k : {kCalls, kHits, kMisses, kComputations, kBypasses, kInvalidations, kEvictions,
                          kTooLarge, kEntries, kBytes})
            values[c++] = Int64GetDatum(int64(stats.get(i, k)));
        values[c++] = Float8GetDatum(total_ms);
        if (computations)
            values[c++] = Float8GetDatum(total_ms / double(computations));
        else
            nulls[c++] = true;
        values[c++] = Int64GetDatum(int64(stats.get(i, kShared)));
        values[c++] = Int64GetDatum(int64(stats.get(i, kWaits)));
        values[c++] = Float8GetDatum(nanos_to_ms(stats.get(i, kWaitNanos)));
        for (Counter k : {kTakeovers, kWaitTimeouts, kDoubleCheckHits, kFlightFull})
            values[c++] = Int64GetDatum(int64(stats.get(i, k)));
        values[c++] = TimestampTzGetDatum(s.stats_reset.load());
        if (ncolumns >= kStatsColumns_1_1)
            for (Counter k : {kDeltaKept, kDeltaCorrected, kDeltaFallbacks, kStaleHits, kStaleOnErrorHits, kErrorHits})
                values[c++] = Int64GetDatum(int64(stats.get(i, k)));
        if (ncolumns >= kStatsColumns) values[c++] = Int64GetDatum(int64(stats.get(i, kFailures)));
        Assert(c == ncolumns);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    });
    return (Datum)0;
}

// Fills memo.info: heap_form_tuple takes as many of the values as the
// caller's result type has columns (1.0's five, 1.1's ten, or 1.2's twelve).
Datum fill_info(FunctionCallInfo fcinfo) {
    using namespace pgmemo;
    Shared &sh = shared_state();
    StoreInfo info = sh.store.info();
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "memo.info must return a record");
    LWLockAcquire(delta_lock(), LW_SHARED);
    uint64_t records = sh.deltas.records_written();
    LWLockRelease(delta_lock());
    TimestampTz restored_at;
    int64 restored_entries;
    warm_restart_status(&restored_at, &restored_entries);
    CommitCounts commits = commit_counts();
    Datum values[kInfoColumns] = {Int64GetDatum(int64(info.arena_bytes)), Int64GetDatum(int64(info.used_bytes)),
                                  Int64GetDatum(int64(info.free_bytes)),  Int64GetDatum(int64(info.entries)),
                                  Int64GetDatum(int64(info.evictions)),
                                  Int64GetDatum(int64(guc_delta_log_size_kb) * 1024),
                                  Int64GetDatum(int64(records)),
                                  Int64GetDatum(int64(sh.deltas.fallbacks())),
                                  TimestampTzGetDatum(restored_at),
                                  Int64GetDatum(restored_entries),
                                  Int64GetDatum(int64(commits.commits)),
                                  Int64GetDatum(int64(commits.bumps))};
    bool nulls[kInfoColumns] = {false};
    nulls[8] = restored_at == 0;  // nothing restored at this start
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

}  // namespace

Datum pg_memo_stats(PG_FUNCTION_ARGS) { return fill_stats(fcinfo, kStatsColumns_1_0); }

namespace {

const char *flight_state_name(pgmemo::FlightState s) {
    switch (s) {
        case pgmemo::FlightState::Running: return "running";
        case pgmemo::FlightState::Done: return "done";
        case pgmemo::FlightState::Failed: return "failed";
        case pgmemo::FlightState::Abandoned: return "abandoned";
        default: return "free";
    }
}

// One flight, copied out under the flight lock.
struct FlightRow {
    pgmemo::FlightSlot slot;
    char *key;
};

}  // namespace

Datum pg_memo_flights(PG_FUNCTION_ARGS) {
    using namespace pgmemo;
    Shared &sh = shared_state();
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

    // Room for the flights in progress only (in_use counts the slots that
    // are not Free), not for every slot of pg_memo.max_flights.
    uint32_t n = sh.flights.size();
    uint32_t nrows = 0;
    LWLockAcquire(flight_lock(), LW_SHARED);
    auto *rows = static_cast<FlightRow *>(palloc(sizeof(FlightRow) * Max(sh.flights.in_use(), 1u)));
    for (uint32_t i = 0; i < n; i++) {
        const FlightSlot &s = sh.flights.slot(int32_t(i));
        if (s.state == FlightState::Free) continue;
        rows[nrows].slot = s;
        rows[nrows].key = static_cast<char *>(palloc(s.key_len));
        memcpy(rows[nrows].key, sh.store.block(s.key_block), s.key_len);
        nrows++;
    }
    LWLockRelease(flight_lock());

    bool all_stats = reads_all_stats();
    for (uint32_t r = 0; r < nrows; r++) {
        const FlightSlot &s = rows[r].slot;
        Datum values[9];
        bool nulls[9] = {false};
        Oid userid;
        text *query;
        ArrayType *params;
        bool described = describe_key(rows[r].key, s.key_len, &userid, &query, &params);
        bool own = described && owns_key(rows[r].key, s.key_len, userid);
        values[0] = ObjectIdGetDatum(s.dbid);
        if (all_stats || own || s.dbid == MyDatabaseId)
            values[1] = CStringGetTextDatum(sh.stats.slot(s.stats_slot).name);
        else
            nulls[1] = true;
        values[2] = Int32GetDatum(s.leader_pid);
        values[3] = Int32GetDatum(int32(s.waiters));
        values[4] = TimestampTzGetDatum(s.started_at);
        values[5] = CStringGetTextDatum(flight_state_name(s.state));
        if (described) values[6] = ObjectIdGetDatum(userid);
        nulls[6] = !described;
        if (described && (all_stats || own)) {
            values[7] = PointerGetDatum(query);
            values[8] = PointerGetDatum(params);
        } else {
            nulls[7] = nulls[8] = true;
        }
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}

Datum pg_memo_info(PG_FUNCTION_ARGS) { return fill_info(fcinfo); }

// ---- versioned entry points -------------------------------------------------
// The SQL definitions name a C symbol per extension version, as
// pg_stat_statements does: 1.0's scripts call pg_memo_stats, pg_memo_info and
// pg_memo_flights; 1.1's call the _1_1 symbols below, which check that the
// result type they are asked to fill has the columns this library fills. A
// library newer than its SQL then fails clearly instead of filling wrong
// columns.
extern "C" {
PG_FUNCTION_INFO_V1(pg_memo_stats_1_1);
PG_FUNCTION_INFO_V1(pg_memo_info_1_1);
PG_FUNCTION_INFO_V1(pg_memo_flights_1_1);
Datum pg_memo_stats_1_1(PG_FUNCTION_ARGS);
Datum pg_memo_info_1_1(PG_FUNCTION_ARGS);
Datum pg_memo_flights_1_1(PG_FUNCTION_ARGS);
}

namespace {

constexpr int kFlightsColumns = 9;

}  // namespace

void pgmemo::check_result_columns(FunctionCallInfo fcinfo, int expected) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE || desc->natts != expected)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_memo's SQL definitions do not match its library"),
                        errdetail("The function is declared with %d result columns; the library fills %d.",
                                  desc ? desc->natts : 0, expected),
                        errhint("Run ALTER EXTENSION pg_memo UPDATE.")));
}

Datum pg_memo_stats_1_1(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kStatsColumns_1_1);
    return fill_stats(fcinfo, kStatsColumns_1_1);
}

Datum pg_memo_info_1_1(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kInfoColumns_1_1);
    return fill_info(fcinfo);
}

Datum pg_memo_flights_1_1(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kFlightsColumns);
    return pg_memo_flights(fcinfo);
}

// ---- 1.2: bypasses by reason; memo.info with its commit counts; memo.stats
// with failures -------------------------------------------------------------
extern "C" {
PG_FUNCTION_INFO_V1(pg_memo_bypass_reasons_1_2);
PG_FUNCTION_INFO_V1(pg_memo_info_1_2);
PG_FUNCTION_INFO_V1(pg_memo_stats_1_2);
Datum pg_memo_bypass_reasons_1_2(PG_FUNCTION_ARGS);
Datum pg_memo_info_1_2(PG_FUNCTION_ARGS);
Datum pg_memo_stats_1_2(PG_FUNCTION_ARGS);
}

Datum pg_memo_stats_1_2(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kStatsColumns);
    return fill_stats(fcinfo, kStatsColumns);
}

namespace {

constexpr int kBypassReasonsColumns = 4;

// One row per (database, cache name, reason) that counted, for the reason
// counters first..last (reason_name): the same rows and the same names
// hidden as memo.stats.
Datum fill_reasons(FunctionCallInfo fcinfo, pgmemo::Counter first, pgmemo::Counter last) {
    using namespace pgmemo;
    pgmemo::check_result_columns(fcinfo, kBypassReasonsColumns);
    StatsTable &stats = shared_state().stats;
    each_stats_slot(fcinfo, [&](ReturnSetInfo *rsinfo, uint32_t i, const StatsSlot &s, bool name_shown) {
        for (int k = first; k <= last; k++) {
            uint64_t n = stats.get(i, Counter(k));
            if (n == 0) continue;
            Datum values[kBypassReasonsColumns] = {ObjectIdGetDatum(s.dbid),
                                                   name_shown ? CStringGetTextDatum(s.name) : (Datum)0,
                                                   CStringGetTextDatum(reason_name(Counter(k))), Int64GetDatum(int64(n))};
            bool nulls[kBypassReasonsColumns] = {false, !name_shown, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum)0;
}

}  // namespace

Datum pg_memo_bypass_reasons_1_2(PG_FUNCTION_ARGS) {
    return fill_reasons(fcinfo, pgmemo::kFirstBypassReason, pgmemo::kLastBypassReason);
}

extern "C" {
PG_FUNCTION_INFO_V1(pg_memo_recompute_reasons_1_2);
Datum pg_memo_recompute_reasons_1_2(PG_FUNCTION_ARGS);
}

Datum pg_memo_recompute_reasons_1_2(PG_FUNCTION_ARGS) {
    return fill_reasons(fcinfo, pgmemo::kFirstRecomputeReason, pgmemo::kLastRecomputeReason);
}

Datum pg_memo_info_1_2(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kInfoColumns);
    return fill_info(fcinfo);
}
