// pg_memo's entry point: what loading the library installs.
#include "pg_memo.hpp"

#include "commit_counts.hpp"
#include "invalidate/catalog_changes.hpp"
#include "transaction_events.hpp"
#include "compute/learned_reads.hpp"
#include "durability/two_phase.hpp"
#include "durability/wal_records.hpp"
#include "durability/warm_restart.hpp"
#include "planner/memo_scan.hpp"
#include "planner/plan_hook.hpp"
#include "planner/registry.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

extern "C" {
#include "miscadmin.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

// Every hook, callback and resource manager pg_memo installs is installed
// here, in this order, and nowhere else but for two exit callbacks that
// belong to one process: a backend's first flight registers a
// before_shmem_exit callback that leaves it (flights.cpp), and the
// postmaster's warm restart an on_shmem_exit callback that saves the cache
// (warm_restart.cpp); callbacks registered here would be dropped in every
// child anyway.
void _PG_init(void) {
    if (!process_shared_preload_libraries_in_progress) {
        // Loaded by CREATE EXTENSION or a function call without preloading:
        // functions raise a clear error through shared_state().
        return;
    }
    pgmemo::define_settings();
    // shmem_request_hook and shmem_startup_hook: one region, the core's
    // structures first, then these parts, in this order (warm restart
    // last: it restores into the rest).
    pgmemo::register_shared_memory_hooks();
    pgmemo::add_shared_region_part({pgmemo::standby_replay_shared_size, pgmemo::standby_replay_attach});
    pgmemo::add_shared_region_part({pgmemo::commit_counts_shared_size, pgmemo::commit_counts_attach});
    pgmemo::add_shared_region_part({pgmemo::learned_reads_shared_size, pgmemo::learned_reads_attach});
    pgmemo::add_shared_region_part({pgmemo::warm_restart_shared_size, pgmemo::warm_restart_attach});
    // RegisterXactCallback, RegisterSubXactCallback and
    // RegisterResourceReleaseCallback: the one hub of the transaction's
    // events, which calls each subsystem in a written order
    // (transaction_events.cpp).
    pgmemo::register_transaction_events();
    // ProcessUtility_hook and object_access_hook: DDL (catalog_changes.hpp).
    pgmemo::register_catalog_hooks();
    // RegisterCustomRmgr: the standby records (wal_records.hpp), which also
    // wrap the redo of RM_XACT, RM_XLOG and RM_DBASE on a standby; told when
    // an archive recovery ends, for the prepared transactions a promoted or
    // restored server inherits (two_phase.hpp).
    pgmemo::register_wal_records(pgmemo::note_inherited_prepared_transactions);
    // ExecutorCheckPerms_hook: what the statements a miss's functions run
    // read (learned_reads.hpp).
    pgmemo::register_read_observer();
    // planner_hook, a second ProcessUtility_hook (a top-level EXECUTE's
    // source text), the "pg_memo" custom scan and a relcache callback for
    // memo.statements: registered statements served (planner/README.md).
    pgmemo::register_plan_hooks();
    pgmemo::register_memo_scan();
    pgmemo::register_registry_callback();
}
