// Per-(database, cache name) counters, in shared memory.
//
// Locking: none. A slot is claimed with a compare-and-swap on its state and
// keeps its (database, name) until the database is dropped, so readers need
// no lock; every counter is an atomic. (Two claimers of one name that raced
// past a slot released meanwhile both keep the first slot of the name's
// probe sequence; the other is released again at once.) This keeps counting off the index
// locks entirely. A dropped database's slots are released (their state a
// tombstone that probing goes past, and a later claim takes): nothing can
// count into them any more, since no backend is connected to a dropped
// database and its entries are gone. Slot 0 is reserved for the overflow
// row "(other)", used once every slot is claimed and none is idle.
//
// Idle rows are reclaimed the same way, when every slot is claimed: a new
// name takes (by release, then claim) the row of the name longest unused
// whose last use is older than the caller's idle bound and which holds no
// entries. Its counters are zeroed but the gauges (entries, bytes): an
// entry still being stored under the old name counts, and later uncounts,
// in the row's next name, so a gauge never goes below zero. A backend that
// remembers a name's slot checks the slot's incarnation, which every
// release advances, before counting into it again.
// noexcept means "throws no C++ exception" (see StoreLocks in store.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pgmemo {

enum Counter : int {
    kCalls,
    kHits,
    kMisses,
    kComputations,
    kBypasses,
    kInvalidations,
    kEvictions,
    kTooLarge,
    kComputeNanos,     // total time spent computing
    kShared,           // callers served by another backend's computation
    kWaits,            // times a caller slept on a flight
    kWaitNanos,        // total time spent sleeping on flights
    kTakeovers,        // waiters that took over from a leader that went away
    kWaitTimeouts,     // waiters that gave up after pg_memo.wait_timeout
    kDoubleCheckHits,  // new leaders that found the result already stored
    kFlightFull,       // misses computed without a flight: the table was full
    kEntries,          // gauge: entries now stored
    kBytes,            // gauge: arena bytes those entries use
    kDeltaKept,        // entries carried past deltas that could not change them
    kDeltaCorrected,   // counts carried past deltas by correcting them
    kDeltaFallbacks,   // entries kept by deltas that had to be recomputed: the log could not say
    kStaleHits,        // older answers served under pg_memo.max_staleness
    kStaleOnErrorHits, // older answers served for a failed computation (pg_memo.stale_on_error)
    kErrorHits,        // remembered errors raised again (pg_memo.error_ttl)
    kFailures,         // computations that raised an error (refusals too): not in
                       // kComputations nor kComputeNanos
    // Bypasses by reason (each also counts in kBypasses, both once the
    // computation succeeded), then the plannings of a registered statement
    // refused (not calls: a generic plan is refused once, a statement
    // planned at every execution each time).
    kBypassDisabled,           // pg_memo.enabled = off
    kBypassTransactionSnapshot,// REPEATABLE READ or SERIALIZABLE
    kBypassStandby,            // a standby that does not serve (wal_records.hpp)
    kBypassReplicaRole,        // session_replication_role = replica
    kBypassCatalogChanged,     // this transaction changed catalogs
    kBypassParallelWorker,     // called in a parallel worker
    kBypassOwnWrites,          // this transaction wrote what the result depends on
    kBypassTriggersDisabled,   // computed, not stored: a watched table's trigger is not ALWAYS
    kBypassCatalogsChanging,   // computed, not stored: catalog changes arrived meanwhile, or
                               // the search path changed since the call was keyed
    kBypassNotWatched,         // computed, not stored: it reads an unwatched table
    kBypassReadsUnnamed,       // computed, not stored: its functions read what its text does not name
    kBypassStatementSnapshot,  // a registered statement whose snapshot is older than a commit:
                               // computed with it, not stored (a cursor fetched later, say)
    kRefusedPlans,             // plannings of a registered statement refused
    // Why entries were computed again (memo.recompute_reasons): each
    // invalidation by what moved, each delta fallback by what was missing,
    // each eviction, each remembered error outlived.
    kInvalidatedByWrites,      // only counters of rows moved: a write to a table it reads
    kInvalidatedByCatalogs,    // DDL, a function, type, schema, privilege or role change
    kFallbackRecordsMissing,   // kept by deltas, but a write on the way left no record
                               // (TRUNCATE, past max_delta_rows, the log wrapped)
    kFallbackQueryChanged,     // kept by deltas, but its query means something else now
    kFallbackNotEvaluable,     // kept by deltas, but the records could not be evaluated over it
    kRecomputeEvicted,         // removed to make room (with kEvictions)
    kRecomputeErrorExpired,    // a remembered error outlived pg_memo.error_ttl: the call computes
    kCounterCount
};

constexpr Counter kFirstBypassReason = kBypassDisabled;
constexpr Counter kLastBypassReason = kRefusedPlans;
constexpr Counter kFirstRecomputeReason = kInvalidatedByWrites;
constexpr Counter kLastRecomputeReason = kRecomputeErrorExpired;

// The name memo.bypass_reasons or memo.recompute_reasons shows for a
// reason counter (and pg_memo.log_reasons logs); nullptr for other counters.
const char *reason_name(Counter c) noexcept;

constexpr size_t kMaxCacheNameLen = 63;

struct StatsSlot {
    std::atomic<uint32_t> state;  // 0 empty, 1 being claimed, 2 ready, 3 released
    uint32_t dbid;
    uint64_t name_hash;
    char name[kMaxCacheNameLen + 1];
    std::atomic<int64_t> stats_reset;  // the caller's timestamp (microseconds)
    // The name's last use (written when it moves by a second or more); for
    // the overflow row: no scan for an idle row before this time.
    std::atomic<int64_t> last_used;
    std::atomic<uint32_t> incarnation;  // advanced by every release
    std::atomic<uint64_t> counters[kCounterCount];
};

class StatsTable {
public:
    static constexpr uint32_t kOverflowSlot = 0;
    static constexpr const char *kOverflowName = "(other)";

    static size_t shared_size(uint32_t nslots) noexcept { return sizeof(StatsSlot) * nslots; }
    static StatsTable initialize(void *mem, uint32_t nslots, int64_t now) noexcept;
    static StatsTable attach(void *mem, uint32_t nslots) noexcept;

    // The slot for (dbid, name), claiming a free one if needed; when none is
    // free and idle_micros > 0, reclaiming the row longest unused for more
    // than idle_micros that holds no entries. Names longer than
    // kMaxCacheNameLen must be rejected by the caller. Times in microseconds.
    uint32_t find_or_claim(uint32_t dbid, const char *name, size_t len, int64_t now,
                           int64_t idle_micros = 0) noexcept;

    // Notes a use of the slot's name at now (a store only when it moved by a
    // second or more: the line is written by the counters anyway).
    void touch(uint32_t slot, int64_t now) noexcept {
        std::atomic<int64_t> &t = slots_[slot].last_used;
        if (now - t.load(std::memory_order_relaxed) >= kTouchMicros) t.store(now, std::memory_order_relaxed);
    }
    uint32_t incarnation(uint32_t slot) const noexcept {
        return slots_[slot].incarnation.load(std::memory_order_acquire);
    }

    void add(uint32_t slot, Counter c, uint64_t n = 1) noexcept {
        slots_[slot].counters[c].fetch_add(n, std::memory_order_relaxed);
    }
    void sub(uint32_t slot, Counter c, uint64_t n) noexcept {
        slots_[slot].counters[c].fetch_sub(n, std::memory_order_relaxed);
    }
    uint64_t get(uint32_t slot, Counter c) const noexcept {
        return slots_[slot].counters[c].load(std::memory_order_relaxed);
    }
    bool ready(uint32_t slot) const noexcept { return slots_[slot].state.load(std::memory_order_acquire) == 2; }
    const StatsSlot &slot(uint32_t i) const noexcept { return slots_[i]; }
    uint32_t size() const noexcept { return nslots_; }

    // Zeroes every counter but the gauges (entries, bytes).
    void reset_counters(int64_t now) noexcept;

    // Releases every slot of a dropped database (returns how many): free
    // for other names, zeroed.
    uint32_t release_database(uint32_t dbid) noexcept;

private:
    static constexpr int64_t kTouchMicros = 1000000;
    StatsTable(StatsSlot *slots, uint32_t nslots) : slots_(slots), nslots_(nslots) {}
    // Releases the row longest unused before now - idle_micros that holds no
    // entries; false if there is none (and then no scan for a second).
    bool release_idle(int64_t now, int64_t idle_micros) noexcept;
    // Takes a claimed slot (state being claimed) back to released: a new
    // incarnation, no name, counters zeroed (gauges too unless keep_gauges).
    void release_claimed(StatsSlot &s, bool keep_gauges) noexcept;
    // The first ready slot of (dbid, name) in its probe sequence, or the overflow slot.
    uint32_t first_slot_of(uint64_t h, uint32_t dbid, const char *name, size_t len) const noexcept;
    StatsSlot *slots_;
    uint32_t nslots_;
};

}  // namespace pgmemo
