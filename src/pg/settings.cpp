// pg_memo's settings (GUCs).
#include "pg_memo.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace pgmemo {

int guc_cache_size_kb = 64 * 1024;
int guc_max_result_size_kb = 1024;
int guc_max_cache_names = 1000;
int guc_max_flights = 1024;
bool guc_singleflight = true;
bool guc_enabled = true;
int guc_wait_timeout_ms = 10000;
int guc_commit_wait_ms = 100;
int guc_max_delta_rows = 1000;
int guc_delta_log_size_kb = 8 * 1024;

void define_settings() {
    DefineCustomIntVariable("pg_memo.cache_size", "Size of the shared arena that holds cached results.",
                            "Entries are evicted (CLOCK) when it is full; memory never grows past it.",
                            &guc_cache_size_kb, 64 * 1024, 1024, MAX_KILOBYTES, PGC_POSTMASTER, GUC_UNIT_KB,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.max_result_size", "Largest encoded result that is stored in the cache.",
        "Larger results are still returned, but computed on every call and counted as too_large.",
        &guc_max_result_size_kb, 1024, 1, MAX_KILOBYTES, PGC_SUSET, GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("pg_memo.max_cache_names",
                            "Number of (database, cache name) rows memo.stats can track.",
                            "Further names are counted in the row named (other).", &guc_max_cache_names, 1000,
                            16, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.max_flights", "Number of computations that can be in flight at once.",
        "A miss that finds the flight table full computes on its own (counted as flight_full). "
        "A backend takes part in one flight at a time, so more slots than backends are never "
        "used; at most 65536.",
        &guc_max_flights, 1024, 1, int(kMaxFlights), PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("pg_memo.enabled", "Serves and stores memoized results.",
                             "Off makes every memo call compute its query directly, counted as a bypass: "
                             "for ruling the cache out while diagnosing, without changing the queries.",
                             &guc_enabled, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("pg_memo.singleflight",
                             "Collapses concurrent misses on one key into one computation.",
                             "Off makes every miss compute, for A/B measurements.", &guc_singleflight, true,
                             PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("pg_memo.wait_timeout", "Longest a miss waits for another backend's computation.",
                            "After it, the waiter computes on its own (counted as wait_timeouts).",
                            &guc_wait_timeout_ms, 10000, 1, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable(
        "pg_memo.commit_wait_timeout",
        "Longest a computation waits for a commit in progress on a table it reads.",
        "Waiting lets the result include that commit, so that the commit does not make it stale "
        "at once; 0 computes without waiting.",
        &guc_commit_wait_ms, 100, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.max_delta_rows",
        "Most rows one statement may change in a table watched with deltas and still keep them.",
        "A statement that changes more invalidates the table's entries at commit, as a table "
        "watched without deltas does (counted in memo.info as delta_fallbacks).",
        &guc_max_delta_rows, 1000, 0, 1000000, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.delta_log_size", "Size of the shared ring that keeps committed deltas for readers.",
        "A transaction's rows of one table may take a quarter of it at most; older deltas are "
        "overwritten, and an entry that needs an overwritten one is recomputed.",
        &guc_delta_log_size_kb, 8 * 1024, 64, MAX_KILOBYTES, PGC_POSTMASTER, GUC_UNIT_KB, nullptr, nullptr,
        nullptr);
    MarkGUCPrefixReserved("pg_memo");
}

}  // namespace pgmemo
