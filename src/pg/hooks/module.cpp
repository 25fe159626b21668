// pg_memo's entry point: what loading the library installs.
#include "pg_memo.hpp"

#include "commit_counts.hpp"
#include "invalidate/catalog_changes.hpp"
#include "hooks/relcache_events.hpp"
#include "hooks/transaction_events.hpp"
#include "hooks/utility_events.hpp"
#include "compute/keyed_settings.hpp"
#include "compute/learned_reads.hpp"
#include "durability/two_phase.hpp"
#include "durability/wal_records.hpp"
#include "durability/warm_restart.hpp"
#include "admission/shapes_table.hpp"
#include "registered/memo_scan.hpp"
#include "registered/observed_executions.hpp"
#include "registered/plan_hook.hpp"
#include "registered/registrations.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

extern "C" {
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "utils/inval.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

// Every hook, callback and resource manager pg_memo installs is installed
// here, in this order, each after keeping the hook it replaces (which it
// calls first, or instead of PostgreSQL's own), and nowhere else but for
// two exit callbacks that belong to one process: a backend's first flight
// registers a before_shmem_exit callback that leaves it (flights.cpp), and
// the postmaster's warm restart an on_shmem_exit callback that saves the
// cache (warm_restart.cpp); callbacks registered here would be dropped in
// every child anyway.
void _PG_init(void) {
    if (!process_shared_preload_libraries_in_progress) {
        // Loaded by CREATE EXTENSION or a function call without preloading:
        // functions raise a clear error through shared_state().
        return;
    }
    pgmemo::define_settings();

    // One shared region: the core's structures first, then these parts, in
    // this order (warm restart last: it restores into the rest).
    pgmemo::add_shared_region_part({pgmemo::standby_replay_shared_size, pgmemo::standby_replay_attach});
    pgmemo::add_shared_region_part({pgmemo::commit_counts_shared_size, pgmemo::commit_counts_attach});
    pgmemo::add_shared_region_part({pgmemo::learned_reads_shared_size, pgmemo::learned_reads_attach});
    pgmemo::add_shared_region_part({pgmemo::shapes_shared_size, pgmemo::shapes_attach});
    pgmemo::add_shared_region_part({pgmemo::keyed_settings_shared_size, pgmemo::keyed_settings_attach});
    pgmemo::add_shared_region_part({pgmemo::warm_restart_shared_size, pgmemo::warm_restart_attach});
    pgmemo::shmem_request_before_memo = shmem_request_hook;
    shmem_request_hook = pgmemo::request_shared_memory;
    pgmemo::shmem_startup_before_memo = shmem_startup_hook;
    shmem_startup_hook = pgmemo::start_shared_memory;

    // The one hub of the transaction's events, which calls each subsystem
    // in a written order (transaction_events.cpp).
    RegisterXactCallback(pgmemo::on_transaction_event, nullptr);
    RegisterSubXactCallback(pgmemo::on_subtransaction_event, nullptr);
    RegisterResourceReleaseCallback(pgmemo::on_resource_release, nullptr);

    // The one hub of utility statements, which calls registered
    // statements, catalog changes and two-phase commit in a written order
    // (utility_events.cpp).
    pgmemo::utility_before_memo = ProcessUtility_hook;
    ProcessUtility_hook = pgmemo::process_utility;

    // DDL seen as it happens (catalog_changes.hpp).
    pgmemo::object_access_before_memo = object_access_hook;
    object_access_hook = pgmemo::note_object_access;

    // RegisterCustomRmgr: the standby records (wal_records.hpp), which also
    // wrap the redo of RM_XACT, RM_XLOG and RM_DBASE on a standby; told when
    // an archive recovery ends, for the prepared transactions a promoted or
    // restored server inherits (two_phase.hpp).
    pgmemo::register_wal_records(pgmemo::note_inherited_prepared_transactions);

    // What the statements a miss's functions run read (learned_reads.hpp).
    pgmemo::ReadObserverHook::before = ExecutorCheckPerms_hook;
    ExecutorCheckPerms_hook = pgmemo::ReadObserverHook::hook;

    // Registered statements served (registered/README.md): the planner
    // hook and the "pg_memo" custom scan; and the one relcache callback,
    // which keeps this backend's copy of memo.statements and forgets the
    // shapes it knows (relcache_events.cpp).
    pgmemo::planner_before_memo = planner_hook;
    planner_hook = pgmemo::plan_statement;
    RegisterCustomScanMethods(&pgmemo::memo_scan_methods);
    CacheRegisterRelcacheCallback(pgmemo::on_relcache_invalidation, (Datum)0);

    // Automatic admission's measurements (observed_executions.hpp): each
    // run of a plan the planner hook observes is timed, each execution
    // counted at its end, served or not.
    pgmemo::ExecutionTimer::before = ExecutorRun_hook;
    ExecutorRun_hook = pgmemo::ExecutionTimer::hook;
    pgmemo::executor_end_before_memo = ExecutorEnd_hook;
    ExecutorEnd_hook = pgmemo::end_executor;
}
