// The shared state: one region of shared memory and one LWLock tranche,
// attached in every backend (layout and locks in shared_state.cpp).
#pragma once

#include "delta_log.hpp"
#include "flight.hpp"
#include "generations.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace pgmemo {

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

// A database was dropped (on this server, or replayed on a standby): frees
// its entries and its statistics rows. Its flights are gone already: no
// backend is connected to a database being dropped, and a flight lives only
// while a backend takes part in it.
void forget_database(Oid dbid);

// Requests the region and the locks, and attaches them at startup; called
// from _PG_init.
void register_shared_memory_hooks();

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
