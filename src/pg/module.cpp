// pg_memo's entry point: what loading the library installs.
#include "pg_memo.hpp"

#include "invalidation.hpp"
#include "learned_reads.hpp"
#include "two_phase.hpp"
#include "wal_records.hpp"
#include "warm_restart.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

extern "C" {
#include "miscadmin.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

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
    pgmemo::add_shared_region_part({pgmemo::learned_reads_shared_size, pgmemo::learned_reads_attach});
    pgmemo::add_shared_region_part({pgmemo::warm_restart_shared_size, pgmemo::warm_restart_attach});
    pgmemo::register_invalidation_callbacks();
    // The custom resource manager (standby records); the prepared
    // transactions a promoted or restored server inherits.
    pgmemo::register_wal_records(pgmemo::note_inherited_prepared_transactions);
    // ExecutorCheckPerms_hook: what the statements a miss's functions run
    // read (learned_reads.hpp).
    pgmemo::register_read_observer();
}
