// pg_memo's settings (GUCs).
#include "pg_memo.hpp"
#include "settings.hpp"
#include "flight.hpp"

extern "C" {
#include "utils/plancache.h"
#include "utils/guc.h"
}

namespace pgmemo {

int guc_cache_size_kb = 64 * 1024;
int guc_max_result_size_kb = 1024;
int guc_max_cache_names = 1000;
int guc_max_flights = 1024;
bool guc_singleflight = true;
bool guc_enabled = true;
bool guc_serve_statements = true;
int guc_wait_timeout_ms = 10000;
int guc_commit_wait_ms = 100;
int guc_max_delta_rows = 1000;
int guc_delta_log_size_kb = 8 * 1024;
int guc_max_staleness_ms = 0;
int guc_stale_on_error_ms = 0;
int guc_error_ttl_ms = 0;
bool guc_save = true;
bool guc_standby_records = false;
int guc_unwatched_tables = kUnwatchedError;
int guc_log_reasons = 0;
int guc_admission = kAdmissionOff;
int guc_admission_shapes = 1000;
int guc_admission_max_admitted = 100;
double guc_admission_min_cost_ms = 1.0;
int guc_admission_calls = 5;
int guc_admission_retry_s = 60;
int guc_admission_max_demotions = 3;
int guc_admission_memory_share = 50;
int guc_admission_window_ms = 1000;
uint64 admission_setting_changes = 0;
int limit_warning_level = WARNING;

bool limit_message_due(Limit limit) {
    static bool said[int(Limit::Count)][2];
    bool &s = said[int(limit)][limit_warning_level >= WARNING];
    if (s) return false;
    s = true;
    return true;
}

namespace {
const struct config_enum_entry unwatched_options[] = {
    {"error", kUnwatchedError, false}, {"compute", kUnwatchedCompute, false}, {nullptr, 0, false}};
// pg_memo.log_reasons: off, or the level messages are raised at.
const struct config_enum_entry log_reasons_options[] = {
    {"off", 0, false},        {"debug5", DEBUG5, false}, {"debug4", DEBUG4, false}, {"debug3", DEBUG3, false},
    {"debug2", DEBUG2, false}, {"debug1", DEBUG1, false}, {"debug", DEBUG2, true},  {"log", LOG, false},
    {"info", INFO, false},     {"notice", NOTICE, false}, {"warning", WARNING, false}, {nullptr, 0, false}};
const struct config_enum_entry admission_options[] = {
    {"off", kAdmissionOff, false}, {"advise", kAdmissionAdvise, false}, {"auto", kAdmissionAuto, false},
    {nullptr, 0, false}};

// pg_memo.admission assigned in this backend (SET, a reload): when
// whether it is auto changes (only then do plans differ), its plans are
// made again, so that a plan made for an admitted shape does not outlive
// "off" (the pg_memo node checks as well; plan_statement's kept plans
// follow admission_version()).
void admission_changed(int newval, void *) {
    if ((newval == kAdmissionAuto) == (guc_admission == kAdmissionAuto)) return;
    admission_setting_changes++;
    ResetPlanCache();
}

// The settings of automatic admission (docs/reference.md, "Automatic admission").
void define_admission_settings() {
    DefineCustomEnumVariable(
        "pg_memo.admission", "Whether pg_memo observes, and serves, statements nobody registered.",
        "off (the default) serves registered statements only; advise observes every top-level SELECT "
        "and says in memo.admission which statements it would serve and why; auto serves those.",
        &guc_admission, kAdmissionOff, admission_options, PGC_SUSET, 0, nullptr, admission_changed, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_shapes", "Number of statement shapes automatic admission can observe.",
        "Shapes past it are not observed; 0 observes none.",
        &guc_admission_shapes, 1000, 0, 100000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_max_admitted", "Number of shapes automatic admission serves at once.",
        "A shape that would be admitted past it waits, with that reason in memo.admission.",
        &guc_admission_max_admitted, 100, 0, 100000, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable(
        "pg_memo.admission_min_cost", "Mean execution time, in milliseconds, below which a shape is not admitted.",
        "A statement cheaper than this gains less from a hit than a miss costs it.",
        &guc_admission_min_cost_ms, 1.0, 0.0, 1e9, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_calls", "Executions of a shape in one window of automatic admission.",
        "A shape is judged after this many executions, and an admitted one after four times as many.",
        &guc_admission_calls, 5, 1, 1000000, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_retry", "How long a demoted or refused shape waits before it is observed again.",
        "Doubled at each further demotion.", &guc_admission_retry_s, 60, 0, INT_MAX / 1000, PGC_SUSET,
        GUC_UNIT_S, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_window", "The shortest time a window of an admitted shape's executions spans.",
        "So that the misses right after a write (a flight's waiters wait as its leader computes) are weighed "
        "with the hits that follow them.",
        &guc_admission_window_ms, 1000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_memory_share",
        "Share of pg_memo.cache_size, in percent, the entries of admitted shapes may hold.",
        "Past it no shape is admitted, and each admitted shape's next window demotes it.",
        &guc_admission_memory_share, 50, 0, 100, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.admission_max_demotions", "Demotions after which a shape is not admitted again.",
        "memo.admission_reset() forgets them; a registration serves a shape whatever its demotions.",
        &guc_admission_max_demotions, 3, 1, 1000, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}
}  // namespace

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
    DefineCustomBoolVariable("pg_memo.serve_statements", "Serves registered statements from the cache.",
                             "Off plans every statement as without pg_memo, registered or not "
                             "(memo.cache_statement): for A/B measurements and diagnosis.",
                             &guc_serve_statements, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
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
    DefineCustomEnumVariable(
        "pg_memo.unwatched_tables", "What a memo call over a table that is not watched does.",
        "error raises SQLSTATE 55000; compute runs the query without caching it, counted as a "
        "bypass, with a WARNING once per session.",
        &guc_unwatched_tables, kUnwatchedError, unwatched_options, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "pg_memo.log_reasons", "Logs why each entry is computed again and each call pg_memo does not serve.",
        "off, or the message level: an invalidation (writes, catalog_changes), a delta fallback and a "
        "bypass by its reason, a registered statement's refused planning with its error; the reasons "
        "memo.recompute_reasons and memo.bypass_reasons count.",
        &guc_log_reasons, 0, log_reasons_options, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.max_staleness",
        "How long after the commit that invalidated it a result may still be served.",
        "0 (the default) serves only exact results. Otherwise a result whose tables' rows changed "
        "at most this long ago is served at once while one caller recomputes it; never after DDL, "
        "to a transaction that wrote its tables, or under REPEATABLE READ or SERIALIZABLE.",
        &guc_max_staleness_ms, 0, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.stale_on_error",
        "How long after the commit that invalidated it a result may replace a failed recomputation.",
        "0 (the default) raises the error. Otherwise an error of the query, a lock timeout or a "
        "statement timeout returns the previous result, with a WARNING, if its rows changed at "
        "most this long ago.",
        &guc_stale_on_error_ms, 0, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "pg_memo.error_ttl", "How long the error of a failed computation is remembered for its key.",
        "0 (the default) remembers nothing. Otherwise later calls with the same key get the same "
        "error without running the query, until this time has passed or a commit changes what "
        "the query read. Cancels, timeouts and lost leaders are never remembered.",
        &guc_error_ttl_ms, 0, 0, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "pg_memo.save", "Saves the cache at a clean shutdown and restores it at the next start.",
        "Restored only when the server starts from that shutdown's own checkpoint; see "
        "docs/reference.md, \"Warm restart\".",
        &guc_save, true, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "pg_memo.standby_records", "Writes pg_memo's invalidations to WAL for hot standbys.",
        "A standby that replays them must preload pg_memo: its replay stops at the first record "
        "otherwise, until pg_memo is installed there.",
        &guc_standby_records, false, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    define_admission_settings();
    MarkGUCPrefixReserved("pg_memo");
}

}  // namespace pgmemo
