// The PostgreSQL glue of pg_memo: what its files share.
//
// C/C++ boundary rules for every file under src/pg:
//   - PostgreSQL headers are included only through this file, in extern "C".
//   - PostgreSQL ERRORs longjmp. Glue functions therefore hold no C++ objects
//     with destructors, and the core they call is noexcept: nothing throws
//     across the boundary, and nothing is skipped by a longjmp.
//   - Locks are LWLocks, released by PostgreSQL on ERROR and FATAL.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

#include <exception>

#include "flight.hpp"
#include "generations.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace pgmemo {

// ---- shared state (pg_memo.cpp) -------------------------------------------

// Settings (GUCs).
extern int guc_cache_size_kb;       // pg_memo.cache_size
extern int guc_max_result_size_kb;  // pg_memo.max_result_size
extern int guc_max_cache_names;     // pg_memo.max_cache_names
extern int guc_max_flights;         // pg_memo.max_flights
extern bool guc_singleflight;       // pg_memo.singleflight
extern int guc_wait_timeout_ms;     // pg_memo.wait_timeout
extern int guc_commit_wait_ms;      // pg_memo.commit_wait_timeout

// The shared state, attached in this process. Raises 55000 unless pg_memo is
// in shared_preload_libraries.
struct Shared {
    Generations gens;
    StatsTable stats;
    Store store;
    FlightTable flights;
};
Shared &shared_state();

// The lock of the flight table (see src/pg/flights.cpp).
LWLock *flight_lock();

// Stats slot for a cache name in the current database (per-backend memo of
// the shared table). Raises 22023 for names that are empty or too long.
uint32_t stats_slot_for(const char *name, size_t len);

// ---- invalidation (invalidation.cpp) --------------------------------------

// Registers the transaction callbacks and hooks; called from _PG_init.
void register_invalidation_callbacks();

// The counters the current transaction has written (tables it wrote, DDL).
SlotSetView own_writes();

// Marks a counter as written by this transaction: bumped at commit, and this
// transaction bypasses entries that depend on it until then.
void mark_written(uint32_t slot);

// This transaction ran DDL (any utility statement that can change the
// catalogs: ALTER TABLE, GRANT, CREATE CAST, ...) or created, renamed or
// moved a relation or type: until it ends, its queries may mean something
// no entry was computed for, and its uncommitted catalog state must not
// reach the cache, so it uses no cached result.
bool transaction_changed_catalogs();

// The schemas the parser looked up by a qualified name since the last
// start_schema_lookups(), until stop_schema_lookups() (an error in between
// stops it at the end of the (sub)transaction).
void start_schema_lookups();
void stop_schema_lookups();
const Oid *explicit_namespaces(int *n);

// A watched table's trigger fired: its rows are being written.
void mark_rows_written(Oid relid);

uint32_t relation_slot(Oid relid);

// ---- query analysis (query_analysis.cpp) ----------------------------------

// Why a query may run but not be cached.
enum class Uncacheable {
    No,
    TriggersDisabled,  // a watched table's trigger is not enabled ALWAYS
    CatalogsChanging,  // catalog changes kept arriving while it was analyzed, or
                       // the search path changed since the call was keyed
};

// What a computed result depends on, and what a hit must re-check.
struct Analysis {
    DepStamp *deps;  // palloc'd, generations filled in by read_generations()
    uint32_t ndeps;
    char *meta;  // privilege checks for hits (encoded)
    uint32_t meta_len;
    Uncacheable uncacheable;
};

// Checks that query is one cacheable SELECT over watched tables (ERROR if
// not) and collects its dependencies and privilege checks. sql is the text
// query was parsed from (its literals are looked at by location).
void analyze_query(Query *query, const char *sql, const Oid *search_path, int search_path_len, Analysis *out);

// Whether a date/time input text names the clock: 'now', 'today',
// 'tomorrow' or 'yesterday' (as a word, in any case).
bool names_clock_time(const char *input);

// Whether values of type hold date/time values (through domains, arrays,
// ranges and composite types).
bool type_holds_clock_values(Oid type);

// Waits, at most pg_memo.commit_wait_timeout, while a commit on one of the
// dependencies is in progress. Call before read_generations, when the
// result is to be stored: the commit would make it stale as soon as it lands.
void wait_for_commits_in_progress(const Analysis &analysis);

// Stamps each dependency with its counter's current value. Call before the
// computation's snapshot is taken.
void read_generations(Analysis *analysis);

// Re-runs the executor's SELECT privilege checks stored in meta, as the
// current user, and checks that row level security still does not apply.
// False if any fails (the caller then computes, which raises PostgreSQL's
// own error or pg_memo's refusal).
bool privileges_still_hold(const char *meta, uint32_t meta_len);

// Whether this trigger is named and calls like pg_memo's (for noticing its
// drop), and whether it is exactly what memo.watch creates (for watching).
bool is_pg_memo_trigger(Oid trigger_oid);
bool is_watch_trigger(Oid trigger_oid);

// The table a trigger is on, or InvalidOid.
Oid trigger_relation(Oid trigger_oid);

// Whether rel carries pg_memo's trigger, and in which state.
enum class WatchState { NotWatched, Watched, Disabled };
WatchState relation_watch_state(Relation rel);

// Refuses anything but exactly one plain SELECT in the text (ERROR). With
// statement, sets it to the SELECT's own text (palloc'd): without the
// semicolon that may end it, or what follows that (white space, comments).
void check_single_select(const char *query_text, char **statement = nullptr);

}  // namespace pgmemo

// Turns any C++ exception that reaches a PostgreSQL entry point into an
// ERROR. The message is copied out first: ereport must not longjmp out of a
// catch block, which would leave the exception alive.
#define PG_MEMO_ENTRY_BEGIN \
    char pg_memo_cxx_error[256] = {0}; \
    try {
#define PG_MEMO_ENTRY_END \
    } \
    catch (const std::exception &e) { \
        strlcpy(pg_memo_cxx_error, e.what(), sizeof pg_memo_cxx_error); \
    } \
    catch (...) { \
        strlcpy(pg_memo_cxx_error, "unknown C++ exception", sizeof pg_memo_cxx_error); \
    } \
    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), \
                    errmsg("pg_memo internal error: %s", pg_memo_cxx_error)));
