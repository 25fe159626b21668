// The PostgreSQL glue of pg_memo: what its files share.
//
// C/C++ boundary rules for every file under src/pg:
//   - PostgreSQL headers are included inside extern "C" only; the core
//     (src/core) never includes them.
//   - The glue is compiled with -fno-exceptions (Makefile): it throws and
//     catches nothing, and the compiler refuses code that would. The core
//     functions it calls are noexcept, which here means "no C++ exception":
//     one implemented over PostgreSQL (a StoreLocks lock, say) can still
//     raise an ERROR. The one place that needs C++ exceptions (Boost laying
//     out the arena) is in the core and catches them itself.
//   - PostgreSQL ERRORs longjmp. Glue functions therefore hold no C++ objects
//     with non-trivial destructors in frames an ERROR can unwind.
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
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

#include "flight.hpp"
#include "generations.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace pgmemo {

// The extension's schema: fixed (schema = memo, relocatable = false in the
// control file); the SQL scripts spell it @extschema@.
constexpr const char *kExtensionSchema = "memo";

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

// Appends to an array kept in TopMemoryContext (it outlives transactions and
// errors), doubling it when it is full.
template <typename T, typename Count>
void append_kept(T **items, Count *count, Count *capacity, T item) {
    if (*count == *capacity) {
        Count grown = *capacity ? *capacity * 2 : 16;
        *items = static_cast<T *>(*items ? repalloc(*items, grown * sizeof(T))
                                         : MemoryContextAlloc(TopMemoryContext, grown * sizeof(T)));
        *capacity = grown;
    }
    (*items)[(*count)++] = item;
}

}  // namespace pgmemo
