// Shared fixtures for the core unit tests: a store in plain heap memory,
// locked with std::shared_mutex the way PostgreSQL locks it with LWLocks.
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "generations.hpp"
#include "stats.hpp"
#include "store.hpp"

namespace pgmemo::testing {

class MutexLocks : public StoreLocks {
public:
    explicit MutexLocks(uint32_t npartitions) : partitions_(npartitions) {}
    void lock_partition(uint32_t p, bool exclusive) noexcept override {
        if (exclusive)
            partitions_[p].lock();
        else
            partitions_[p].lock_shared();
        exclusive_held_ = exclusive;
    }
    void unlock_partition(uint32_t p) noexcept override {
        // Tests that share a store across threads only take shared locks
        // concurrently with lookups, so one flag per thread is enough.
        if (exclusive_held_)
            partitions_[p].unlock();
        else
            partitions_[p].unlock_shared();
    }
    void lock_allocator() noexcept override { allocator_.lock(); }
    void unlock_allocator() noexcept override { allocator_.unlock(); }

private:
    std::vector<std::shared_mutex> partitions_;
    std::mutex allocator_;
    static thread_local bool exclusive_held_;
};
inline thread_local bool MutexLocks::exclusive_held_ = false;

struct AlignedBuffer {
    explicit AlignedBuffer(size_t n) : bytes(n + 64) {}
    void *get() {
        auto p = reinterpret_cast<uintptr_t>(bytes.data());
        return reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
    }
    std::vector<char> bytes;
};

// A whole store with its generations and stats, as the extension lays it out.
struct TestStore {
    explicit TestStore(uint64_t arena_bytes, uint32_t nbuckets = 256, uint32_t npartitions = 16)
        : cfg{arena_bytes, nbuckets, npartitions},
          gens_mem(Generations::shared_size()),
          stats_mem(StatsTable::shared_size(64)),
          store_mem(Store::shared_size(cfg)),
          locks(npartitions),
          gens(Generations::initialize(gens_mem.get())),
          stats(StatsTable::initialize(stats_mem.get(), 64, 0)),
          initialized(Store::initialize(store_mem.get(), cfg)),
          store(store_mem.get(), gens, stats, &locks) {}

    StoreConfig cfg;
    AlignedBuffer gens_mem, stats_mem, store_mem;
    MutexLocks locks;
    Generations gens;
    StatsTable stats;
    bool initialized;
    Store store;
};

// The parts of an entry whose key and payload are these strings (which must
// outlive the insert).
inline EntryParts parts(uint64_t hash, const std::string &key, const std::string &payload,
                        const std::vector<DepStamp> &deps = {}, uint32_t stats_slot = 1) {
    EntryParts p;
    p.hash = hash;
    p.key = key.data();
    p.key_len = uint32_t(key.size());
    p.deps = deps.data();
    p.ndeps = uint32_t(deps.size());
    p.meta = "m";
    p.meta_len = 1;
    p.payload = payload.data();
    p.payload_len = uint32_t(payload.size());
    p.stats_slot = stats_slot;
    return p;
}

// Collects a hit's payload.
struct CopySink : HitSink {
    std::string meta, payload;
    Micros stamped_at = 0;
    uint64_t snapshot_print = 0;
    bool want_stale = false;  // take stale copies (accept_stale)
    StaleInfo stale{};

    bool accept(const EntryView &e) noexcept override {
        meta.assign(e.meta, e.meta_len);
        payload.assign(e.payload, e.payload_len);
        stamped_at = e.stamped_at;
        snapshot_print = e.snapshot_print;
        return true;
    }
    bool accept_stale(const EntryView &e, const StaleInfo &info) noexcept override {
        if (!want_stale) return false;
        stale = info;
        return accept(e);
    }
};

}  // namespace pgmemo::testing
