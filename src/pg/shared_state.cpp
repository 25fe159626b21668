// The shared state: one region, "pg_memo", laid out as
//   [Generations counters][StatsTable slots][FlightTable slots]
//   [Store: header, buckets, arena][DeltaLog: chain heads, ring]
//   [the parts other subsystems own, in the order _PG_init adds them
//    (module.cpp): add_shared_region_part()]
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
#include "settings.hpp"
#include "shared_state.hpp"

extern "C" {
#include "storage/sinval.h"
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

// Where each structure starts in the region (offsets): computed one way
// for the request and the creation.
struct Layout {
    size_t gens, stats, flights, store, deltas, parts, total;
};

constexpr int kMaxRegionParts = 8;
SharedRegionPart region_parts[kMaxRegionParts];
int nregion_parts = 0;
CoreRegions core_memory{};

Layout region_layout() {
    Layout l;
    size_t at = 0;
    auto place = [&at](size_t size) {
        size_t start = at;
        at = add_size(at, size);
        return start;
    };
    l.gens = place(Generations::shared_size());
    l.stats = place(StatsTable::shared_size(guc_max_cache_names));
    l.flights = place(FlightTable::shared_size(guc_max_flights));
    l.store = place(Store::shared_size(store_config()));
    l.deltas = place(DeltaLog::shared_size(uint64_t(guc_delta_log_size_kb) * 1024));
    l.parts = at;
    for (int i = 0; i < nregion_parts; i++) place(region_parts[i].size());
    l.total = at;
    return l;
}

// Per-backend memo of stats slots: names are looked up in shared memory once.
// A remembered slot is used only while its incarnation holds: an idle
// row may be reclaimed for another name.
struct LocalSlot {
    Oid dbid;
    uint32_t slot;
    uint32_t incarnation;
    uint8_t len;
    char name[kMaxCacheNameLen + 1];
};
constexpr uint32_t kLocalSlots = 64;

// A full statistics table gives a new cache name the row of a name with no
// entries and no call for this long (the oldest such): rows of names an
// application stopped using do not keep new names in "(other)" for good.
constexpr int64_t kStatsIdleMicros = 60 * USECS_PER_SEC;
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

namespace {

// Said once per session (the row "(other)" counts the calls of every such
// name): a cache name that found no row of its own in memo.stats.
void warn_stats_full(const char *name, size_t len) {
    if (!limit_message_due(Limit::StatsFull)) return;
    ereport(limit_warning_level, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                      errmsg("pg_memo's statistics table is full: cache name \"%.*s\" is counted in the row "
                             "\"%s\" of memo.stats",
                             int(len), name, StatsTable::kOverflowName),
                      errdetail("All pg_memo.max_cache_names (%d) rows are taken (by every database's cache "
                                "names), and none is idle (no entries and no call for a minute); its results "
                                "are cached as before. This warning is given once per session.",
                                guc_max_cache_names),
                      errhint("Raise pg_memo.max_cache_names in postgresql.conf and restart the server, or use "
                              "fewer cache names.")));
}

}  // namespace

uint32_t stats_slot_for(const char *name, size_t len) {
    if (len == 0 || len > kMaxCacheNameLen)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("cache name must be 1 to %d bytes long", int(kMaxCacheNameLen))));
    Shared &sh = shared_state();
    LocalSlot &ls = local_slots[(len * 31 + uint8_t(name[0]) + uint8_t(name[len - 1])) % kLocalSlots];
    TimestampTz now = GetCurrentTimestamp();
    if (ls.len == len && ls.dbid == MyDatabaseId && memcmp(ls.name, name, len) == 0 &&
        sh.stats.incarnation(ls.slot) == ls.incarnation) {
        sh.stats.touch(ls.slot, now);
        return ls.slot;
    }
    uint32_t slot = sh.stats.find_or_claim(MyDatabaseId, name, len, now, kStatsIdleMicros);
    // The overflow row is not the name's for good: a slot may be freed later.
    if (slot == StatsTable::kOverflowSlot) {
        warn_stats_full(name, len);
        return slot;
    }
    sh.stats.touch(slot, now);
    ls.dbid = MyDatabaseId;
    ls.slot = slot;
    ls.incarnation = sh.stats.incarnation(slot);
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

void add_shared_region_part(const SharedRegionPart &part) {
    if (nregion_parts == kMaxRegionParts) elog(ERROR, "pg_memo: too many shared region parts");
    region_parts[nregion_parts++] = part;
}

CoreRegions core_regions() { return core_memory; }

shmem_request_hook_type shmem_request_before_memo = nullptr;
shmem_startup_hook_type shmem_startup_before_memo = nullptr;

void request_shared_memory() {
    if (shmem_request_before_memo) shmem_request_before_memo();
    RequestAddinShmemSpace(region_layout().total);
    RequestNamedLWLockTranche(kTrancheName, kLockCount);
}

void start_shared_memory() {
    if (shmem_startup_before_memo) shmem_startup_before_memo();

    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found;
    Layout l = region_layout();
    char *region = static_cast<char *>(ShmemInitStruct("pg_memo", l.total, &found));
    char *gens_mem = region + l.gens;
    char *stats_mem = region + l.stats;
    char *flights_mem = region + l.flights;
    char *store_mem = region + l.store;
    char *deltas_mem = region + l.deltas;
    StoreConfig cfg = store_config();

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
               Store(store_mem, Generations::attach(gens_mem), StatsTable::attach(stats_mem, guc_max_cache_names),
                     &store_locks),
               FlightTable::attach(flights_mem, guc_max_flights), DeltaLog::attach(deltas_mem)};
    core_memory = CoreRegions{gens_mem, stats_mem, uint32_t(guc_max_cache_names), store_mem};
    LWLockRelease(AddinShmemInitLock);

    // In the order they were added: warm restart last (module.cpp), as in
    // the postmaster it restores the cache saved at the last clean shutdown
    // into what the parts before it set up.
    char *part = region + l.parts;
    for (int i = 0; i < nregion_parts; i++) {
        region_parts[i].attach(part, !found);
        part += region_parts[i].size();
    }
}

void send_relcache_invalidation(Oid relid) {
    SharedInvalidationMessage message;
    memset(&message, 0, sizeof message);
    message.rc.id = SHAREDINVALRELCACHE_ID;
    message.rc.dbId = MyDatabaseId;
    message.rc.relId = relid;
    SendSharedInvalidMessages(&message, 1);
}

}  // namespace pgmemo
