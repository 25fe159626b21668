// The shared state: one region of shared memory and one LWLock tranche,
// attached in every backend (layout and locks in shared_state.cpp).
#pragma once

#include "pg_memo.hpp"
#include "delta_log.hpp"
#include "flight.hpp"
#include "generations.hpp"
#include "stats.hpp"
#include "store.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
}

namespace pgmemo {

// Sends every backend of this database (this one too, at its next
// AcceptInvalidationMessages) a relcache invalidation of relid at once,
// whatever the current transaction does: plans that depend on relid are
// made again. No catalog access, no error.
void send_relcache_invalidation(Oid relid);

// The shared state, attached in this process.
struct Shared {
    Generations gens;
    StatsTable stats;
    Store store;
    FlightTable flights;
    DeltaLog deltas;
};

// Raises 55000 unless pg_memo is in shared_preload_libraries.
Shared &shared_state();

// The lock of the flight table (see src/pg/compute/flights.cpp).
LWLock *flight_lock();

// The lock of the delta log (see src/core/delta_log.hpp).
LWLock *delta_lock();

// Stats slot for a cache name in the current database (per-backend memo of
// the shared table). Raises 22023 for names that are empty or too long.
uint32_t stats_slot_for(const char *name, size_t len);

// The cache name a stats slot counts, for messages.
inline const char *cache_name_of(uint32_t stats_slot) { return shared_state().stats.slot(stats_slot).name; }

// A database was dropped (on this server, or replayed on a standby): frees
// its entries and its statistics rows. Its flights are gone already: no
// backend is connected to a database being dropped, and a flight lives only
// while a backend takes part in it.
void forget_database(Oid dbid);

// shmem_request_hook: requests the region and the locks; shmem_startup_hook:
// attaches them (initializes them in the postmaster). Installed by
// _PG_init, each after the hook it replaces, which it calls first.
extern shmem_request_hook_type shmem_request_before_memo;
extern shmem_startup_hook_type shmem_startup_before_memo;
void request_shared_memory();
void start_shared_memory();

// A part of pg_memo's region that another subsystem owns, laid out after
// the core's structures in the order the parts were added (in _PG_init,
// before the region is requested): its size, read when the region is
// requested and again when it is created, and its attachment once the
// region exists (initialize: the region is new; the postmaster, before any
// other process). Keeps this file free of the subsystems it serves.
struct SharedRegionPart {
    size_t (*size)();
    void (*attach)(char *mem, bool initialize);
};
void add_shared_region_part(const SharedRegionPart &part);

// The core's structures' memory, raw (warm restart saves and restores it).
struct CoreRegions {
    char *generations;
    char *stats;
    uint32_t stats_slots;
    char *store;
};
CoreRegions core_regions();

}  // namespace pgmemo
