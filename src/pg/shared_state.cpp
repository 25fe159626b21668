// The shared state: one region, "pg_memo", laid out as
//   [Generations counters][StatsTable slots][FlightTable slots]
//   [Store: header, buckets, arena][DeltaLog: chain heads, ring]
//   [standby replay state (src/pg/wal_records.hpp)]
//   [each backend's flags for its parallel workers (src/pg/learned_reads.hpp)]
//   [warm restart's status (src/pg/warm_restart.hpp)]
// plus the named LWLock tranche "pg_memo":
//   locks[0 .. kPartitions-1]  index partitions (see src/core/store.hpp)
//   locks[kPartitions]         the arena allocator
//   locks[kPartitions + 1]     the flight table (see src/core/flight.hpp):
//                              every field of every flight slot
//   locks[kPartitions + 2]     the delta log (see src/core/delta_log.hpp)
// The locking protocol itself is documented in src/core/store.hpp and
// docs/architecture.md.
#include "pg_memo.hpp"
#include "call.hpp"
#include "learned_reads.hpp"
#include "wal_records.hpp"
#include "warm_restart.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include <cstring>
#include <new>

namespace pgmemo {

namespace {

constexpr uint32_t kPartitions = 64;
constexpr uint32_t kAllocatorLock = kPartitions;
constexpr uint32_t kFlightLock = kPartitions + 1;
constexpr uint32_t kDeltaLock = kPartitions + 2;
constexpr uint32_t kLockCount = kPartitions + 3;
constexpr const char *kTrancheName = "pg_memo";

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

class LWLockStoreLocks final : public StoreLocks {
public:
    void attach(LWLockPadded *locks) { locks_ = locks; }
    void lock_partition(uint32_t p, bool exclusive) noexcept override {
        LWLockAcquire(&locks_[p].lock, exclusive ? LW_EXCLUSIVE : LW_SHARED);
    }
    void unlock_partition(uint32_t p) noexcept override { LWLockRelease(&locks_[p].lock); }
    void lock_allocator() noexcept override { LWLockAcquire(&locks_[kAllocatorLock].lock, LW_EXCLUSIVE); }
    void unlock_allocator() noexcept override { LWLockRelease(&locks_[kAllocatorLock].lock); }
    LWLock *flight_lock() { return &locks_[kFlightLock].lock; }
    LWLock *delta_lock() { return &locks_[kDeltaLock].lock; }

private:
    LWLockPadded *locks_ = nullptr;
};

LWLockStoreLocks store_locks;
alignas(Shared) char shared_storage[sizeof(Shared)];
Shared *attached = nullptr;

StoreConfig store_config() {
    uint64_t arena = uint64_t(guc_cache_size_kb) * 1024;
    uint32_t nbuckets = 1024;
    while (nbuckets < arena / 2048 && nbuckets < (1u << 26)) nbuckets <<= 1;
    return StoreConfig{arena, nbuckets, kPartitions};
}

size_t region_size() {
    size_t size = Generations::shared_size();
    size = add_size(size, StatsTable::shared_size(guc_max_cache_names));
    size = add_size(size, FlightTable::shared_size(guc_max_flights));
    size = add_size(size, Store::shared_size(store_config()));
    size = add_size(size, DeltaLog::shared_size(uint64_t(guc_delta_log_size_kb) * 1024));
    size = add_size(size, standby_replay_shared_size());
    size = add_size(size, learned_reads_shared_size());
    return add_size(size, warm_restart_shared_size());
}

void memo_shmem_request() {
    if (prev_shmem_request_hook) prev_shmem_request_hook();
    RequestAddinShmemSpace(region_size());
    RequestNamedLWLockTranche(kTrancheName, kLockCount);
}

void memo_shmem_startup() {
    if (prev_shmem_startup_hook) prev_shmem_startup_hook();

    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found;
    char *region = static_cast<char *>(ShmemInitStruct("pg_memo", region_size(), &found));
    char *gens_mem = region;
    char *stats_mem = gens_mem + Generations::shared_size();
    char *flights_mem = stats_mem + StatsTable::shared_size(guc_max_cache_names);
    char *store_mem = flights_mem + FlightTable::shared_size(guc_max_flights);
    StoreConfig cfg = store_config();
    char *deltas_mem = store_mem + Store::shared_size(cfg);
    char *replay_mem = deltas_mem + DeltaLog::shared_size(uint64_t(guc_delta_log_size_kb) * 1024);
    char *learned_mem = replay_mem + standby_replay_shared_size();
    char *warm_restart_mem = learned_mem + learned_reads_shared_size();

    if (!found) {
        Generations::initialize(gens_mem);
        StatsTable::initialize(stats_mem, guc_max_cache_names, GetCurrentTimestamp());
        FlightTable flights = FlightTable::initialize(flights_mem, guc_max_flights);
        for (uint32_t i = 0; i < flights.size(); i++)
            ConditionVariableInit(reinterpret_cast<ConditionVariable *>(flights.slot(int32_t(i)).wait_handle));
        DeltaLog::initialize(deltas_mem, uint64_t(guc_delta_log_size_kb) * 1024);
        if (!Store::initialize(store_mem, cfg)) {
            LWLockRelease(AddinShmemInitLock);
            ereport(FATAL, (errcode(ERRCODE_INSUFFICIENT_RESOURCES),
                            errmsg("pg_memo could not lay out its %d kB cache arena", guc_cache_size_kb)));
        }
    }
    store_locks.attach(GetNamedLWLockTranche(kTrancheName));
    attached = new (shared_storage)
        Shared{Generations::attach(gens_mem), StatsTable::attach(stats_mem, guc_max_cache_names),
               Store(store_mem, Generations::attach(gens_mem),
                     StatsTable::attach(stats_mem, guc_max_cache_names), &store_locks),
               FlightTable::attach(flights_mem, guc_max_flights), DeltaLog::attach(deltas_mem)};
    standby_replay_attach(replay_mem, !found);
    learned_reads_attach(learned_mem, !found);
    LWLockRelease(AddinShmemInitLock);

    // In the postmaster, before any other process exists: restores the
    // cache saved at the last clean shutdown, and registers its save.
    warm_restart_startup(WarmRestartRegion{gens_mem, stats_mem, uint32_t(guc_max_cache_names), store_mem,
                                           warm_restart_mem},
                         !found);
}

// Per-backend memo of stats slots: names are looked up in shared memory once.
struct LocalSlot {
    Oid dbid;
    uint32_t slot;
    uint8_t len;
    char name[kMaxCacheNameLen + 1];
};
constexpr uint32_t kLocalSlots = 64;
LocalSlot local_slots[kLocalSlots];

}  // namespace

LWLock *flight_lock() { return store_locks.flight_lock(); }

LWLock *delta_lock() { return store_locks.delta_lock(); }

Shared &shared_state() {
    if (!attached)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_memo must be loaded via shared_preload_libraries"),
                        errhint("Add pg_memo to shared_preload_libraries in postgresql.conf and "
                                "restart the server.")));
    return *attached;
}

uint32_t stats_slot_for(const char *name, size_t len) {
    if (len == 0 || len > kMaxCacheNameLen)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cache name must be 1 to %d bytes long", int(kMaxCacheNameLen))));
    Shared &sh = shared_state();
    LocalSlot &ls = local_slots[(len * 31 + uint8_t(name[0]) + uint8_t(name[len - 1])) % kLocalSlots];
    if (ls.len == len && ls.dbid == MyDatabaseId && memcmp(ls.name, name, len) == 0) return ls.slot;
    uint32_t slot = sh.stats.find_or_claim(MyDatabaseId, name, len, GetCurrentTimestamp());
    // The overflow row is not the name's for good: a slot may be freed later.
    if (slot == StatsTable::kOverflowSlot) return slot;
    ls.dbid = MyDatabaseId;
    ls.slot = slot;
    ls.len = uint8_t(len);
    memcpy(ls.name, name, len);
    return slot;
}

void forget_database(Oid dbid) {
    if (!attached || !OidIsValid(dbid)) return;
    uint64_t entries = attached->store.remove_matching(
        [](const char *key, uint32_t len, void *db) { return key_database(key, len) == *static_cast<Oid *>(db); },
        &dbid);
    uint32_t rows = attached->stats.release_database(dbid);
    if (entries > 0 || rows > 0)
        ereport(LOG, (errmsg("pg_memo: freed %llu cached entries and %u statistics rows of dropped database %u",
                             static_cast<unsigned long long>(entries), rows, dbid)));
}

void register_shared_memory_hooks() {
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = memo_shmem_request;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = memo_shmem_startup;
}

}  // namespace pgmemo
