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
// Scopes have the upper half to themselves: the many values writes bump
// would otherwise land, now and then, on a counter that every entry of a
// database depends on (its routines, a table's definition or AnyScope).
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
    Definition = 6, // a table's definition, by pg_class OID: its columns, indexes,
                    // privileges, policies, triggers; bumped with its Relation
                    // counter by DDL and memo.invalidate, never by row writes
    StandbyReplay = 7, // cluster-wide (database 0, object id 0), on a standby only:
                       // announced while the standby does not serve, bumped
                       // when it starts to (src/pg/durability/wal_records.hpp)
    Scope = 8,     // the rows of a table whose scope column holds one value, by a
                   // hash of (table, column, value): bumped by row writes whose
                   // old or new rows hold it (docs/consistency.md, "Scopes")
    AnyScope = 9,  // every scope of a table, by pg_class OID: bumped by the row
                   // writes that cannot name their scopes (TRUNCATE, bulk
                   // statements, apply workers); DDL moves Definition instead
};

// One dependency of a cache entry: which counter, and its value when read.
struct DepStamp {
    uint32_t slot;
    uint32_t flags;  // kDeltaStamp: see below
    uint64_t generation;
};

// Times are microseconds since 2000-01-01 (PostgreSQL's TimestampTz); the
// core only compares them.
using Micros = int64_t;
constexpr Micros kUnknownTime = INT64_MIN;

// On the dependency of an entry kept by deltas (docs/consistency.md,
// "Deltas"): its result is exactly the table's committed rows as of this
// stamp, so the deltas after it can carry the entry forward.
constexpr uint32_t kDeltaStamp = 1;

// On a dependency that only row writes move without changing what the
// query means (a table's Relation counter, next to its Definition
// counter): an entry whose other stamps still hold is an older answer to
// the same question, which a caller may accept within a bound
// (pg_memo.max_staleness, pg_memo.stale_on_error).
constexpr uint32_t kDataStamp = 2;

// On a scoped entry's Relation stamp (docs/consistency.md, "Scopes"): not a
// dependency (writes to other scopes move it), only the position its deltas
// are read from. Checks and waits skip it; carrying reads its records.
constexpr uint32_t kCarryPosition = 4;

// On a Scope stamp: its counter never has delta records of its own; the
// writes that moved it have theirs on the table's Relation counter.
constexpr uint32_t kScopeStamp = 8;

// Whether a stamp guards the entry: moved, it is stale; announced, hidden.
inline bool guards(const DepStamp &d) noexcept { return !(d.flags & kCarryPosition); }

inline bool kept_by_deltas(const DepStamp *deps, uint32_t ndeps) noexcept {
    for (uint32_t i = 0; i < ndeps; i++)
        if (deps[i].flags & kDeltaStamp) return true;
    return false;
}

class Generations {
public:
    static constexpr uint32_t kSlots = 1u << 17;
    static constexpr uint32_t kScopeSlots = kSlots / 2;  // the upper half: GenerationKind::Scope only

    static size_t shared_size() noexcept {
        return (2 * sizeof(std::atomic<uint64_t>) + sizeof(std::atomic<uint32_t>)) * kSlots;
    }

    // counters points at shared_size() bytes; initialize once, attach often.
    static Generations initialize(void *counters) noexcept;
    static Generations attach(void *counters) noexcept;

    static uint32_t slot_of(uint32_t dbid, GenerationKind kind, uint32_t oid) noexcept;

    uint64_t read(uint32_t slot) const noexcept { return counters_[slot].load(std::memory_order_seq_cst); }
    // The bump, returning the value it produced. visible_after: a time no
    // later than the moment the change became visible (a commit's
    // pre-commit), remembered with the value for invalidated_after.
    uint64_t bump_to(uint32_t slot, Micros visible_after) noexcept {
        uint64_t value = counters_[slot].fetch_add(1, std::memory_order_seq_cst) + 1;
        marks_[slot].store(pack_mark(visible_after, value), std::memory_order_seq_cst);
        return value;
    }
    void bump(uint32_t slot, Micros visible_after) noexcept { (void)bump_to(slot, visible_after); }

    // When the change that moved this stamp's counter first became visible,
    // at the earliest: known only when exactly one bump followed the stamp
    // and its mark is still the newest; otherwise kUnknownTime.
    Micros invalidated_after(const DepStamp &d) const noexcept {
        uint64_t first = d.generation + 1;
        if (read(d.slot) != first) return kUnknownTime;
        uint64_t mark = marks_[d.slot].load(std::memory_order_seq_cst);
        if ((mark & kTagMask) != (first & kTagMask) || read(d.slot) != first) return kUnknownTime;
        return Micros(mark >> kTagBits) * 1000;
    }

    // Warm restart: a counter's value as saved, before any backend runs.
    void restore(uint32_t slot, uint64_t value) noexcept {
        counters_[slot].store(value, std::memory_order_relaxed);
        marks_[slot].store(0, std::memory_order_relaxed);
    }

    // Before the commit is visible, and after its bump (or its abort).
    void begin_commit(uint32_t slot) noexcept { pending_[slot].fetch_add(1, std::memory_order_seq_cst); }
    void end_commit(uint32_t slot) noexcept { pending_[slot].fetch_sub(1, std::memory_order_seq_cst); }
    bool commit_pending(uint32_t slot) const noexcept {
        return pending_[slot].load(std::memory_order_seq_cst) != 0;
    }

    bool any_commit_pending(const DepStamp *deps, uint32_t ndeps) const noexcept {
        for (uint32_t i = 0; i < ndeps; i++)
            if (guards(deps[i]) && commit_pending(deps[i].slot)) return true;
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
            if (!guards(deps[i])) continue;
            bool pending = commit_pending(deps[i].slot);
            if (read(deps[i].slot) != deps[i].generation) return StampState::Stale;
            if (pending) state = StampState::CommitPending;
        }
        return state;
    }

private:
    // A mark packs the bump's time (milliseconds, rounded down: earlier is
    // the safe side) above the low bits of the value it produced, so a
    // reader can tell whether the mark belongs to the bump it asks about.
    static constexpr int kTagBits = 22;
    static constexpr uint64_t kTagMask = (uint64_t(1) << kTagBits) - 1;
    static uint64_t pack_mark(Micros t, uint64_t value) noexcept {
        uint64_t ms = t > 0 ? uint64_t(t / 1000) : 0;
        return (ms << kTagBits) | (value & kTagMask);
    }

    Generations(std::atomic<uint64_t> *counters, std::atomic<uint32_t> *pending, std::atomic<uint64_t> *marks)
        : counters_(counters), pending_(pending), marks_(marks) {}
    std::atomic<uint64_t> *counters_;
    std::atomic<uint32_t> *pending_;
    std::atomic<uint64_t> *marks_;  // per slot: the newest bump's time and value (pack_mark)
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
