// pg_memo's entry point: what loading the library installs.
#include "pg_memo.hpp"

#include "invalidation.hpp"
#include "learned_reads.hpp"
#include "wal_records.hpp"

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
    pgmemo::register_shared_memory_hooks();
    pgmemo::register_invalidation_callbacks();
    pgmemo::register_wal_records();
    // ExecutorCheckPerms_hook: what the statements a miss's functions run
    // read (learned_reads.hpp).
    pgmemo::register_read_observer();
}
