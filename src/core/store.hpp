// The result store: a fixed arena of cache entries with a partitioned hash
// index and CLOCK eviction. Plain C++, no PostgreSQL headers.
//
// Memory
//   All entries live in one arena of a fixed size, managed by
//   Boost.Interprocess (rbtree_best_fit with the null mutex family: Boost
//   takes no locks of its own). Nothing is ever allocated outside it, so the
//   cache cannot grow past its configured size. When an allocation fails,
//   entries are evicted until it fits.
//
// Locking protocol (the caller supplies the locks through StoreLocks; in
// PostgreSQL they are LWLocks, so they are released on ERROR and FATAL):
//   - partition lock p (one per npartitions): protects the bucket heads and
//     chain links of every bucket b with b % npartitions == p, and the
//     existence of the entries on those chains. Shared to look up, exclusive
//     to link or unlink.
//   - allocator lock: protects the arena's free lists. Held only inside the
//     arena calls themselves: one allocation, one free or the frees of one
//     swept bucket's entries, or reading the free byte count.
//   - Order: a partition lock may be held while taking the allocator lock,
//     never the reverse, and never two partition locks at once.
//   - Not under any lock: the clock hand and every counter (atomics), the
//     entry's referenced bit (an atomic byte written only when it changes),
//     its sampled hit count (one hit in 16 adds one) and last hit's second
//     (written when it changes), all relaxed, and the generations.
//   - An entry is immutable between being linked and being freed, so a
//     reader holding the shared partition lock may read it freely. The one
//     exception: revise_stamps may advance the stamps of an entry kept by
//     deltas in place, under the exclusive partition lock and only while it
//     has no pins (a pinned entry is read without the lock). Its payload
//     stays: the entry is exact at the old stamps and at the new ones. A
//     hit on a scoped entry advances its carry position the same way
//     (advance_carry_position), after releasing its shared lock. A hit
//     therefore takes exactly one shared lock, and at most one in
//     kCarryLag of a scoped entry's hits an exclusive one after it.
//   - Pins (atomic) are taken under the shared partition lock and dropped
//     under it; unlinking happens under the exclusive lock, so an unlinker
//     either sees the pin (and leaves the free to the last unpin) or frees
//     an unpinned entry itself. A pinned entry needs no lock to be read.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "generations.hpp"
#include "stats.hpp"

namespace pgmemo {

// The locks the store takes, implemented by the caller (the glue: LWLocks).
//
// noexcept, here and on every core function, means "throws no C++
// exception". It does not mean "raises no PostgreSQL ERROR": an
// implementation over LWLocks can still raise one (too many LWLocks held,
// say), which longjmps through the core. The core is written for that: it
// holds no C++ objects with destructors across a call to these functions.
class StoreLocks {
public:
    virtual ~StoreLocks() = default;
    virtual void lock_partition(uint32_t partition, bool exclusive) noexcept = 0;
    virtual void unlock_partition(uint32_t partition) noexcept = 0;
    virtual void lock_allocator() noexcept = 0;
    virtual void unlock_allocator() noexcept = 0;
};

enum class Removal;

// What a new entry is made of. Every pointer is only read during insert().
struct EntryParts {
    uint64_t hash = 0;
    const char *key = nullptr;
    uint32_t key_len = 0;
    const DepStamp *deps = nullptr;
    uint32_t ndeps = 0;
    const char *meta = nullptr;  // what a hit needs to check (privileges)
    uint32_t meta_len = 0;
    const char *payload = nullptr;  // the encoded result
    uint32_t payload_len = 0;
    uint32_t stats_slot = 0;
    // Read before the generations of deps were (and so before the snapshot
    // the result was computed with): every commit the result misses became
    // visible after it.
    Micros stamped_at = 0;
    // Names the committed state the result was computed as of, where the
    // caller can name one (0: it cannot): a caller whose snapshot sees that
    // same state may be given the result whatever was committed since
    // (HitSink::as_of_print).
    uint64_t snapshot_print = 0;
};

// An entry as a sink sees it, valid only during the call.
struct EntryView {
    const DepStamp *deps;
    uint32_t ndeps;
    const char *meta;
    uint32_t meta_len;
    const char *payload;
    uint32_t payload_len;
    Micros stamped_at;
    uint64_t bytes;  // what it takes of the arena (memo.stats' bytes count it)
    // Hits on it, estimated (one in 16 counted: hits write the entry's line
    // rarely), and the last one's second in Unix time (0: none yet).
    uint64_t estimated_hits;
    uint32_t last_hit;
    uint64_t snapshot_print;  // EntryParts::snapshot_print; 0 once carried forward
};

// What the store knows about an entry that is not current.
struct StaleInfo {
    // The earliest moment the first commit it misses can have become
    // visible (never later than that): the stamp's time, or the moment the
    // one bump since the stamp began (Generations::invalidated_after).
    Micros invalidated_after;
    // Only kDataStamp dependencies moved (or have a commit in progress): no
    // DDL, no name or privilege change since it was computed.
    bool data_only;
    bool kept_by_deltas;  // kDeltaStamp: carry_forward may bring it up to date
};

// Receives a hit's entry while the partition lock is held. It must only
// copy: no locks, no errors, no waiting.
class HitSink {
public:
    virtual bool accept(const EntryView &entry) noexcept = 0;

    // An entry that is stale or hidden by a commit in progress, offered when
    // it is kept by deltas (carrying it forward) or only its rows moved (a
    // caller that accepts a bounded staleness). Same rules as accept; by
    // default not wanted.
    virtual bool accept_stale(const EntryView &, const StaleInfo &) noexcept { return false; }

    // The lookup found the entry stale, the first to: why
    // (kInvalidatedByWrites or kInvalidatedByCatalogs). Same rules.
    virtual void invalidated(Counter) noexcept {}

    // Nonzero: the caller answers as of a snapshot that may be older than
    // the present, which sees the committed state this names
    // (EntryParts::snapshot_print). An entry that is not current but was
    // computed as of that same state, and of which only data counters
    // moved since (a definition, a name or memo.invalidate are not in a
    // print), is given too (LookupStatus::AsOfSnapshot), unless the
    // caller's transaction wrote one of its dependencies; a current one is
    // a Hit as ever.
    uint64_t as_of_print = 0;

protected:
    // Not virtual and trivial: a sink may live in a frame that a PostgreSQL
    // ERROR longjmps over, and it is never deleted through this base.
    ~HitSink() = default;
};

enum class LookupStatus {
    Miss,       // no entry under this key, or one a commit in progress hides
    Stale,      // an entry, but a dependency's generation moved on
    StaleKept,  // an entry kept by deltas, stale or hidden by a commit in progress:
                // the sink has a copy (accept_stale)
    StaleCopied,  // another entry that is not current, whose copy the sink took
                  // (accept_stale): only its rows moved
    OwnWrites,  // an entry, but this transaction wrote one of its dependencies
    Hit,        // the sink received a current entry
    AsOfSnapshot,  // the sink received an entry that is not current, computed
                   // as of the state HitSink::as_of_print names
    SinkFailed  // the sink could not take it (out of local memory)
};

enum class InsertStatus { Stored, TooLarge, NoSpace };

// Whether a call would be served an entry now (memo.entries shows it).
enum class EntryState {
    Current,  // served
    Pending,  // a commit on a dependency is in progress: hidden until it ends
    Stale,    // a dependency moved: never served again
    Kept,     // stale or hidden, but kept by deltas: a call may carry it forward
};

struct StoreInfo {
    uint64_t arena_bytes;
    uint64_t used_bytes;
    uint64_t free_bytes;
    uint64_t entries;
    uint64_t evictions;
};

struct StoreConfig {
    uint64_t arena_bytes;  // usable arena size
    uint32_t nbuckets;     // power of two
    uint32_t npartitions;  // power of two, <= nbuckets
};

class Store {
public:
    static size_t shared_size(const StoreConfig &cfg) noexcept;

    // Lays out the store in mem (shared_size bytes). Returns false if the
    // arena could not be created (too small).
    static bool initialize(void *mem, const StoreConfig &cfg) noexcept;

    // A handle on an initialized store; cheap to copy, one per process.
    Store(void *mem, Generations gens, StatsTable stats, StoreLocks *locks) noexcept;

    uint32_t partition_of(uint64_t hash) const noexcept;

    // With pinned, a hit also pins the entry and stores its handle there.
    LookupStatus lookup(uint64_t hash, const char *key, uint32_t key_len, const SlotSetView &own_writes,
                        HitSink &sink, uint64_t *pinned = nullptr) noexcept;

    // Stores a copy of parts, replacing any entry with the same key. Entries
    // larger than max_entry_bytes are refused, as are entries that do not fit
    // even after eviction. With pinned, the new entry is pinned.
    InsertStatus insert(const EntryParts &parts, uint64_t max_entry_bytes, uint64_t *pinned = nullptr) noexcept;

    // Stores a copy of parts, pinned, where no lookup finds it: only a
    // flight's waiters read it (read_pinned), and only one as of
    // parts.snapshot_print is given it (AsOfSnapshot: it is never current).
    // A leader whose snapshot fell behind the present shares its answer so
    // with the waiters whose snapshots see the same. Freed at the last unpin.
    InsertStatus insert_for_waiters(const EntryParts &parts, uint64_t max_entry_bytes, uint64_t &pinned) noexcept;

    // Pinned entries (held by a flight for its waiters) are never evicted or
    // freed: removing one only unlinks it, and the last unpin frees it.
    // read_pinned gives what lookup would (Hit, AsOfSnapshot, Stale, or
    // Miss for a commit in progress), own writes aside.
    LookupStatus read_pinned(uint64_t handle, HitSink &sink) const noexcept;
    void unpin(uint64_t handle) noexcept;

    // Raw arena blocks (flight keys), evicting entries to make room.
    // allocate_block returns 0 when nothing fits.
    uint64_t allocate_block(uint64_t bytes) noexcept;
    char *block(uint64_t handle) const noexcept;
    void release_block(uint64_t handle) noexcept;

    // Size of the entry insert() would allocate for parts.
    static uint64_t entry_size(const EntryParts &parts) noexcept;

    // For the entry under key whose stamps are exactly from[0..ndeps): with
    // to, advances its stamps to to's generations in place (flags kept) and
    // forgets its snapshot print (its rows are now a later state's), unless
    // it is pinned; without to, removes it (it can never be carried or be
    // current again). False if the entry is not there any more (or was
    // replaced, or is pinned).
    // How far (in bumps) a hit lets a scoped entry's carry position fall
    // behind its table's counter before it moves it up (lookup does).
    static constexpr uint64_t kCarryLag = 64;

    bool revise_stamps(uint64_t hash, const char *key, uint32_t key_len, const DepStamp *from, uint32_t ndeps,
                       const DepStamp *to, Micros stamped_at = 0) noexcept;

    // Calls visit(hash, key, key_len, stats_slot, entry) for every linked
    // entry, one partition at a time under its shared lock (warm restart's
    // save). visit must only copy, as a HitSink does.
    template <class Visit>
    void for_each_entry(Visit visit) noexcept;

    // The same for one bucket (0 <= bucket < bucket_count()), under its
    // partition's shared lock: a reader that must not hold a lock while it
    // allocates copies a bucket, releases, then makes its rows (memo.entries).
    template <class Visit>
    void for_each_entry_in_bucket(uint32_t bucket, Visit visit) noexcept;
    uint32_t bucket_count() const noexcept { return nbuckets(); }

    // What a lookup would make of an entry now (its stamps against the
    // generations; no lock needed beyond the one the view was read under).
    EntryState state_of(const EntryView &entry) const noexcept;

    uint64_t remove_all() noexcept;    // returns entries removed
    // Removes every entry whose key match(key, key_len, context) accepts (a
    // dropped database's); returns how many.
    using KeyMatch = bool (*)(const char *key, uint32_t key_len, void *context);
    uint64_t remove_matching(KeyMatch match, void *context) noexcept;
    uint64_t remove_stale() noexcept;  // entries whose generations moved on
    // Removes the entry under key stored at stamped_at (not one that
    // replaced it), counting neither an eviction nor an invalidation (a
    // remembered error outlived); false if it is not there.
    bool remove_stamped(uint64_t hash, const char *key, uint32_t key_len, Micros stamped_at) noexcept;
    StoreInfo info() const noexcept;

private:
    struct Shared;
    struct Entry;

    uint32_t nbuckets() const noexcept;
    uint64_t bucket_head(uint32_t bucket) const noexcept;
    static EntryView view_of(const Entry *e) noexcept;
    static void entry_identity(const Entry *e, uint64_t *hash, const char **key, uint32_t *key_len,
                               uint32_t *stats_slot, uint64_t *next) noexcept;
    StaleInfo stale_info(const Entry *e) const noexcept;

    static size_t header_size(const StoreConfig &cfg) noexcept;
    static char *arena_start(void *mem, const StoreConfig &cfg) noexcept;
    Entry *entry_at(uint64_t offset) const noexcept;
    uint64_t offset_of(const Entry *e) const noexcept;
    bool entry_is_current(const Entry *e) const noexcept;
    bool as_of_callers_state(const Entry *e, const HitSink &sink) const noexcept;
    InsertStatus new_entry(const EntryParts &p, uint64_t max_entry_bytes, uint64_t *pinned, Entry **out) noexcept;
    Entry *make_entry(void *mem, uint64_t bytes, const EntryParts &p, uint64_t *pinned) noexcept;
    void link_replacing(Entry *e, const EntryParts &p) noexcept;
    bool accept_hit(Entry *e, HitSink &sink, uint64_t *pinned) noexcept;
    bool carry_lagging(const Entry *e) const noexcept;
    void advance_carry_position(uint64_t hash, const char *key, uint32_t key_len) noexcept;
    void *allocate(uint64_t bytes) noexcept;
    void *allocate_evicting(uint64_t bytes) noexcept;
    void release(Entry *chain) noexcept;
    void account_removed(Entry *e, Removal reason) noexcept;
    // Counts an entry's invalidation once; returns its reason counter, or
    // kCounterCount if it was counted before.
    Counter count_invalidation(Entry *e) noexcept;
    void report_invalidation(Entry *e, HitSink &sink) noexcept;
    bool only_rows_moved(const Entry *e) const noexcept;
    bool evict_for(uint64_t bytes) noexcept;

    template <class ShouldRemove>
    uint64_t sweep_bucket(uint32_t bucket, ShouldRemove should_remove, uint64_t *freed) noexcept;

    Shared *shared_;
    char *arena_;
    Generations gens_;
    StatsTable stats_;
    StoreLocks *locks_;
};

template <class Visit>
void Store::for_each_entry(Visit visit) noexcept {
    uint32_t n = nbuckets();
    for (uint32_t b = 0; b < n; b++) for_each_entry_in_bucket(b, visit);
}

template <class Visit>
void Store::for_each_entry_in_bucket(uint32_t b, Visit visit) noexcept {
    uint32_t part = partition_of(b);  // a bucket's low bits are its hashes' low bits
    locks_->lock_partition(part, false);
    for (const Entry *e = entry_at(bucket_head(b)); e;) {
        uint64_t hash, next;
        const char *key;
        uint32_t key_len, stats_slot;
        entry_identity(e, &hash, &key, &key_len, &stats_slot, &next);
        visit(hash, key, key_len, stats_slot, view_of(e));
        e = entry_at(next);
    }
    locks_->unlock_partition(part);
}

}  // namespace pgmemo
