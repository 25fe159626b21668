// Generation counters: the clock that invalidation runs on.
//
// Every watched object (a table, a view, a schema, the set of routines of a
// database) maps to one 64-bit counter, picked by hashing (database, kind,
// object id) into a fixed array. A committed write bumps its counter; a cache
// entry remembers the counters it read before its snapshot and is valid only
// while they are unchanged (docs/consistency.md).
//
// A commit is visible to other snapshots before its callback can bump the
// counter. So a committing transaction first raises the slot's "commits in
// progress" count (before it becomes visible) and lowers it after the bump:
// while it is raised, no entry depending on the slot counts as current.
//
// Two objects may share a counter. That only makes one's writes invalidate
// the other's entries too: over-invalidation is safe, under-invalidation is
// not, and a fixed array needs no locks, no allocation and no capacity limit.
// noexcept means "throws no C++ exception" (see StoreLocks in store.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pgmemo {

enum class GenerationKind : uint32_t {
    Relation = 1,   // a table, partition or view, by pg_class OID
    Namespace = 2,  // a schema, by pg_namespace OID: name resolution changed
    Routines = 3,   // what a query resolves outside its relations, database-wide
                    // (object id 0): functions, operators, casts, operator
                    // classes, types, collations, schemas, privileges on them
    Names = 4,      // names of relations and types, database-wide (object id 0):
                    // what reg* constants and parameters resolved to
    Roles = 5,      // role names, cluster-wide (database 0, object id 0): regrole
};

// One dependency of a cache entry: which counter, and its value when read.
struct DepStamp {
    uint32_t slot;
    uint32_t flags;  // kDeltaStamp: see below
    uint64_t generation;
};

// On the dependency of an entry kept by deltas (docs/consistency.md,
// "Deltas"): its result is exactly the table's committed rows as of this
// stamp, so the deltas after it can carry the entry forward.
constexpr uint32_t kDeltaStamp = 1;

inline bool kept_by_deltas(const DepStamp *deps, uint32_t ndeps) noexcept {
    for (uint32_t i = 0; i < ndeps; i++)
        if (deps[i].flags & kDeltaStamp) return true;
    return false;
}

class Generations {
public:
    static constexpr uint32_t kSlots = 1u << 16;

    static size_t shared_size() noexcept {
        return (sizeof(std::atomic<uint64_t>) + sizeof(std::atomic<uint32_t>)) * kSlots;
    }

    // counters points at shared_size() bytes; initialize once, attach often.
    static Generations initialize(void *counters) noexcept;
    static Generations attach(void *counters) noexcept;

    static uint32_t slot_of(uint32_t dbid, GenerationKind kind, uint32_t oid) noexcept;

    uint64_t read(uint32_t slot) const noexcept { return counters_[slot].load(std::memory_order_seq_cst); }
    void bump(uint32_t slot) noexcept { counters_[slot].fetch_add(1, std::memory_order_seq_cst); }
    // The bump, returning the value it produced.
    uint64_t bump_to(uint32_t slot) noexcept { return counters_[slot].fetch_add(1, std::memory_order_seq_cst) + 1; }

    // Before the commit is visible, and after its bump (or its abort).
    void begin_commit(uint32_t slot) noexcept { pending_[slot].fetch_add(1, std::memory_order_seq_cst); }
    void end_commit(uint32_t slot) noexcept { pending_[slot].fetch_sub(1, std::memory_order_seq_cst); }
    bool commit_pending(uint32_t slot) const noexcept {
        return pending_[slot].load(std::memory_order_seq_cst) != 0;
    }

    bool any_commit_pending(const DepStamp *deps, uint32_t ndeps) const noexcept {
        for (uint32_t i = 0; i < ndeps; i++)
            if (commit_pending(deps[i].slot)) return true;
        return false;
    }

    // Stale: a stamp no longer matches its counter, for good. CommitPending:
    // none is stale, but a commit on one of the slots is in progress; the
    // entry must not be served now, and is current again if that commit
    // aborts. Each slot's pending count is read before its counter: seeing
    // it at zero after a commit's begin means its bump is already visible.
    enum class StampState { Current, CommitPending, Stale };
    StampState check(const DepStamp *deps, uint32_t ndeps) const noexcept {
        StampState state = StampState::Current;
        for (uint32_t i = 0; i < ndeps; i++) {
            bool pending = commit_pending(deps[i].slot);
            if (read(deps[i].slot) != deps[i].generation) return StampState::Stale;
            if (pending) state = StampState::CommitPending;
        }
        return state;
    }

private:
    Generations(std::atomic<uint64_t> *counters, std::atomic<uint32_t> *pending)
        : counters_(counters), pending_(pending) {}
    std::atomic<uint64_t> *counters_;
    std::atomic<uint32_t> *pending_;
};

// A backend's own set of counters its transaction has written. Held in memory
// the caller owns (it grows in a trigger, where failing is still allowed).
struct SlotSetView {
    const uint32_t *slots = nullptr;
    uint32_t count = 0;
    uint64_t filter = 0;  // bit (slot % 64) set for every member: quick "no"

    static uint64_t filter_bit(uint32_t slot) noexcept { return uint64_t(1) << (slot & 63); }

    bool contains(uint32_t slot) const noexcept {
        if (!(filter & filter_bit(slot))) return false;
        for (uint32_t i = 0; i < count; i++)
            if (slots[i] == slot) return true;
        return false;
    }
    bool intersects(const DepStamp *deps, uint32_t ndeps) const noexcept {
        if (count == 0) return false;
        for (uint32_t i = 0; i < ndeps; i++)
            if (contains(deps[i].slot)) return true;
        return false;
    }
};

}  // namespace pgmemo
