// Warm restart (pg_memo.save): the cache is saved at a clean shutdown and
// restored at the next start, when that start provably continues from the
// very state it was saved in (src/pg/durability/warm_restart.cpp says why that holds).
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// The pieces of pg_memo's shared region that warm restart reads and fills
// (laid out by src/pg/shared_state.cpp).
struct WarmRestartRegion {
    void *generations;     // Generations::shared_size() bytes
    void *stats;           // the StatsTable, of stats_slots slots
    uint32_t stats_slots;
    void *store;           // the Store: header, buckets, arena
    void *status;          // warm_restart_shared_size() bytes, warm restart's own
};

// Shared memory warm restart keeps for itself: when it restored, and how
// many results.
size_t warm_restart_shared_size();

// From the shmem startup hook, in every process that attaches the region,
// once it is laid out (created: this process has just initialized it). In
// the postmaster of a server (not single-user mode), that is before any
// other process exists: it restores the saved cache if it may, and
// arranges for the cache to be saved when the postmaster exits.
void warm_restart_startup(const WarmRestartRegion &region, bool created);

// Its part of the shared region (shared_state.hpp): warm_restart_startup
// over the core's structures and warm_restart_shared_size() bytes at mem.
void warm_restart_attach(char *mem, bool created);

// When this start restored the saved cache, and how many results it
// restored; 0 and 0 when nothing was restored.
void warm_restart_status(TimestampTz *restored_at, int64 *restored_entries);

}  // namespace pgmemo
