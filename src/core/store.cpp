#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "store.hpp"

#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <new>

#include "result_format.hpp"

namespace pgmemo {

namespace bip = boost::interprocess;

// rbtree_best_fit<null_mutex_family>: Boost locks nothing; the allocator
// lock in StoreLocks serializes every call into it.
using Arena = bip::managed_external_buffer;
using SegmentManager = Arena::segment_manager;

enum class Removal { Keep, Dropped, Evicted, Invalidated };

namespace {
constexpr size_t kCacheLine = 64;

// A hit counts on its entry one time in kHitSample (a draw of this
// process's own generator) and writes the last hit's second only when it
// changes, so that a hot entry's header stays a line the cores only read:
// memo.entries shows the estimate, sampled_hits * kHitSample.
constexpr uint32_t kHitSample = 16;

uint32_t coarse_unix_seconds() noexcept {
    timespec ts;
#ifdef CLOCK_REALTIME_COARSE
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
#else
    clock_gettime(CLOCK_REALTIME, &ts);
#endif
    return uint32_t(ts.tv_sec);
}

// xorshift64, seeded from the process id at first use: backends draw
// apart, and one in kHitSample of each backend's hits is counted.
bool hit_sampled() noexcept {
    static uint64_t state = 0;
    if (state == 0) state = 0x9E3779B97F4A7C15ull ^ (uint64_t(getpid()) << 17);
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (state & (kHitSample - 1)) == 0;
}

void note_hit(std::atomic<uint32_t> &sampled_hits, std::atomic<uint32_t> &last_hit) noexcept {
    if (hit_sampled()) sampled_hits.fetch_add(1, std::memory_order_relaxed);
    uint32_t now = coarse_unix_seconds();
    if (last_hit.load(std::memory_order_relaxed) != now) last_hit.store(now, std::memory_order_relaxed);
}
constexpr size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
}  // namespace

struct Store::Shared {
    StoreConfig cfg;
    uint64_t segment_offset;           // segment manager, from the arena start
    std::atomic<uint64_t> clock_hand;  // next bucket the eviction sweep visits
    std::atomic<uint64_t> entries;     // entries linked in the index
    std::atomic<uint64_t> evictions;   // entries evicted for space, ever
    // Bucket heads (arena offsets, 0 = empty). Written under the bucket's
    // partition lock; read under it, or racily as a hint by the sweep.
    std::atomic<uint64_t> buckets[1];
};

struct Store::Entry {
    uint64_t next;  // arena offset of the next entry on the chain, 0 = end
    uint64_t hash;
    uint64_t alloc_bytes;
    uint32_t key_len;
    uint32_t ndeps;
    uint32_t meta_len;
    uint32_t payload_len;
    uint32_t stats_slot;
    Micros stamped_at;
    uint64_t snapshot_print;                    // EntryParts::snapshot_print
    std::atomic<uint32_t> pins;                 // flights holding it for waiters
    std::atomic<uint8_t> referenced;            // CLOCK bit, set by hits
    std::atomic<uint8_t> invalidation_counted;  // stats count it once
    std::atomic<uint8_t> unlinked;              // off the index, freed at last unpin
    uint8_t as_of_only;                         // insert_for_waiters': never current
    std::atomic<uint32_t> sampled_hits;         // one in kHitSample hits (note_hit)
    std::atomic<uint32_t> last_hit;             // the last hit's second (Unix time), 0: none

    char *body() { return reinterpret_cast<char *>(this + 1); }
    const char *body() const { return reinterpret_cast<const char *>(this + 1); }
    const char *key() const { return body(); }
    const DepStamp *deps() const { return reinterpret_cast<const DepStamp *>(body() + align8(key_len)); }
    const char *meta() const { return reinterpret_cast<const char *>(deps() + ndeps); }
    const char *payload() const { return meta() + align8(meta_len); }
};

static_assert(sizeof(DepStamp) == 16, "DepStamp layout");
static_assert(alignof(std::atomic<uint64_t>) == 8, "atomics in shared memory");

size_t Store::header_size(const StoreConfig &cfg) noexcept {
    return align_up(offsetof(Shared, buckets) + sizeof(uint64_t) * cfg.nbuckets, kCacheLine);
}

size_t Store::shared_size(const StoreConfig &cfg) noexcept {
    // One extra cache line so the arena can start aligned wherever mem is.
    return header_size(cfg) + kCacheLine + cfg.arena_bytes;
}

char *Store::arena_start(void *mem, const StoreConfig &cfg) noexcept {
    auto addr = reinterpret_cast<uintptr_t>(mem) + header_size(cfg);
    return reinterpret_cast<char *>(align_up(addr, kCacheLine));
}

bool Store::initialize(void *mem, const StoreConfig &cfg) noexcept {
    if (cfg.nbuckets == 0 || (cfg.nbuckets & (cfg.nbuckets - 1)) || cfg.npartitions == 0 ||
        (cfg.npartitions & (cfg.npartitions - 1)) || cfg.npartitions > cfg.nbuckets)
        return false;
    auto *sh = static_cast<Shared *>(mem);
    sh->cfg = cfg;
    new (&sh->clock_hand) std::atomic<uint64_t>(0);
    new (&sh->entries) std::atomic<uint64_t>(0);
    new (&sh->evictions) std::atomic<uint64_t>(0);
    for (uint32_t i = 0; i < cfg.nbuckets; i++) new (&sh->buckets[i]) std::atomic<uint64_t>(0);

    char *arena = arena_start(mem, cfg);
    try {
        Arena buffer(bip::create_only, arena, cfg.arena_bytes);
        sh->segment_offset = uint64_t(reinterpret_cast<char *>(buffer.get_segment_manager()) - arena);
        // The buffer object only points at the segment; dropping it leaves
        // the segment in place for every process to use.
    } catch (...) {
        return false;
    }
    return true;
}

Store::Store(void *mem, Generations gens, StatsTable stats, StoreLocks *locks) noexcept
    : shared_(static_cast<Shared *>(mem)),
      arena_(arena_start(mem, static_cast<Shared *>(mem)->cfg)),
      gens_(gens),
      stats_(stats),
      locks_(locks) {}

static SegmentManager *segment(char *arena, uint64_t offset) {
    return reinterpret_cast<SegmentManager *>(arena + offset);
}

Store::Entry *Store::entry_at(uint64_t offset) const noexcept {
    return offset ? reinterpret_cast<Entry *>(arena_ + offset) : nullptr;
}

uint64_t Store::offset_of(const Entry *e) const noexcept {
    return e ? uint64_t(reinterpret_cast<const char *>(e) - arena_) : 0;
}

uint32_t Store::partition_of(uint64_t hash) const noexcept {
    return uint32_t(hash & (shared_->cfg.npartitions - 1));
}

uint32_t Store::nbuckets() const noexcept { return shared_->cfg.nbuckets; }

uint64_t Store::bucket_head(uint32_t bucket) const noexcept {
    return shared_->buckets[bucket].load(std::memory_order_relaxed);
}

EntryView Store::view_of(const Entry *e) noexcept {
    return EntryView{e->deps(),
                     e->ndeps,
                     e->meta(),
                     e->meta_len,
                     e->payload(),
                     e->payload_len,
                     e->stamped_at,
                     e->alloc_bytes,
                     uint64_t(e->sampled_hits.load(std::memory_order_relaxed)) * kHitSample,
                     e->last_hit.load(std::memory_order_relaxed),
                     e->snapshot_print};
}

void Store::entry_identity(const Entry *e, uint64_t *hash, const char **key, uint32_t *key_len,
                           uint32_t *stats_slot, uint64_t *next) noexcept {
    *hash = e->hash;
    *key = e->key();
    *key_len = e->key_len;
    *stats_slot = e->stats_slot;
    *next = e->next;
}

// For an entry that is not current. The first commit it misses moved one of
// its counters; it became visible after the entry's stamp time (the result's
// snapshot was taken after that), and no earlier than the one bump since the
// stamp began, when that is known. Not known while another commit on the
// counter is in progress: it may be visible already, without its bump, and
// have begun before the bump that was published.
StaleInfo Store::stale_info(const Entry *e) const noexcept {
    StaleInfo info{e->stamped_at, true, kept_by_deltas(e->deps(), e->ndeps)};
    Micros first_bump = INT64_MAX;
    for (uint32_t i = 0; i < e->ndeps; i++) {
        const DepStamp &d = e->deps()[i];
        if (!guards(d)) continue;
        bool pending = gens_.commit_pending(d.slot);
        bool moved = gens_.read(d.slot) != d.generation;
        if (!moved && !pending) continue;
        if (!(d.flags & kDataStamp)) info.data_only = false;
        Micros t = moved && !pending ? gens_.invalidated_after(d) : kUnknownTime;
        if (t != kUnknownTime && gens_.commit_pending(d.slot)) t = kUnknownTime;  // one began meanwhile
        if (t < first_bump) first_bump = t;
    }
    if (first_bump != INT64_MAX && first_bump > info.invalidated_after) info.invalidated_after = first_bump;
    return info;
}

// Not stale: a commit in progress does not make an entry stale (it may
// abort), so eviction and invalidation counts do not treat it as such.
bool Store::entry_is_current(const Entry *e) const noexcept {
    return gens_.check(e->deps(), e->ndeps) != Generations::StampState::Stale;
}

EntryState Store::state_of(const EntryView &e) const noexcept {
    Generations::StampState stamps = gens_.check(e.deps, e.ndeps);
    if (stamps == Generations::StampState::Current) return EntryState::Current;
    if (kept_by_deltas(e.deps, e.ndeps)) return EntryState::Kept;
    return stamps == Generations::StampState::Stale ? EntryState::Stale : EntryState::Pending;
}

uint64_t Store::entry_size(const EntryParts &p) noexcept {
    return sizeof(Entry) + align8(p.key_len) + sizeof(DepStamp) * uint64_t(p.ndeps) + align8(p.meta_len) +
           align8(p.payload_len);
}

LookupStatus Store::lookup(uint64_t hash, const char *key, uint32_t key_len, const SlotSetView &own_writes,
                           HitSink &sink, uint64_t *pinned) noexcept {
    uint32_t bucket = uint32_t(hash & (shared_->cfg.nbuckets - 1));
    uint32_t part = partition_of(hash);
    LookupStatus status = LookupStatus::Miss;
    bool lagging = false;

    locks_->lock_partition(part, false);
    for (Entry *e = entry_at(shared_->buckets[bucket].load(std::memory_order_relaxed)); e;
         e = entry_at(e->next)) {
        if (e->hash != hash || e->key_len != key_len || std::memcmp(e->key(), key, key_len) != 0) continue;
        Generations::StampState stamps = gens_.check(e->deps(), e->ndeps);
        // Not current, but computed as of the state the caller's snapshot
        // sees: its rows are that caller's answer whatever was committed
        // since (the generations speak of the present).
        if (stamps != Generations::StampState::Current && as_of_callers_state(e, sink) &&
            !own_writes.intersects(e->deps(), e->ndeps)) {
            status = accept_hit(e, sink, pinned) ? LookupStatus::AsOfSnapshot : LookupStatus::SinkFailed;
            break;
        }
        // An entry kept by deltas that is stale, or that a commit in
        // progress hides, may only need carrying forward (past that commit,
        // once it is done): the caller that tries counts what becomes of it.
        // One whose rows alone moved is an older answer a caller may accept.
        bool kept = false;
        if (stamps != Generations::StampState::Current) {
            StaleInfo info = stale_info(e);
            kept = info.kept_by_deltas;
            if ((kept || info.data_only) && sink.accept_stale(view_of(e), info)) {
                status = kept ? LookupStatus::StaleKept : LookupStatus::StaleCopied;
                if (!kept && stamps == Generations::StampState::Stale) report_invalidation(e, sink);
                break;
            }
        }
        if (stamps == Generations::StampState::Stale) {
            if (!kept) report_invalidation(e, sink);
            status = LookupStatus::Stale;
        } else if (stamps == Generations::StampState::CommitPending) {
            status = LookupStatus::Miss;  // not servable now; not stale either
        } else if (own_writes.intersects(e->deps(), e->ndeps)) {
            status = LookupStatus::OwnWrites;
        } else if (accept_hit(e, sink, pinned)) {
            lagging = carry_lagging(e);
            status = LookupStatus::Hit;
        } else {
            status = LookupStatus::SinkFailed;
        }
        break;
    }
    locks_->unlock_partition(part);
    if (lagging) advance_carry_position(hash, key, key_len);
    return status;
}

// Only where rows alone moved (or wait on a commit): a definition, a name,
// a privilege or memo.invalidate bumps without a new transaction, and the
// print would not show it.
bool Store::as_of_callers_state(const Entry *e, const HitSink &sink) const noexcept {
    return sink.as_of_print != 0 && e->snapshot_print == sink.as_of_print && stale_info(e).data_only;
}

// Gives the sink a hit's copy under the partition lock, and notes the hit.
bool Store::accept_hit(Entry *e, HitSink &sink, uint64_t *pinned) noexcept {
    if (!sink.accept(view_of(e))) return false;
    // Write the CLOCK bit only when it changes: hits stay read-only on the
    // entry's cache line in the steady state.
    if (!e->referenced.load(std::memory_order_relaxed)) e->referenced.store(1, std::memory_order_relaxed);
    note_hit(e->sampled_hits, e->last_hit);
    if (pinned) {
        e->pins.fetch_add(1, std::memory_order_relaxed);
        *pinned = offset_of(e);
    }
    return true;
}

// A scoped entry kept by deltas (docs/consistency.md, "Scopes") whose carry
// position is far behind its table's counter: writes to other scopes since
// then, which a carry would read and a gap among would make it recompute.
bool Store::carry_lagging(const Entry *e) const noexcept {
    for (uint32_t i = 0; i < e->ndeps; i++) {
        const DepStamp &d = e->deps()[i];
        if ((d.flags & (kCarryPosition | kDeltaStamp)) == (kCarryPosition | kDeltaStamp) &&
            gens_.read(d.slot) - d.generation >= kCarryLag)
            return true;
    }
    return false;
}

// Moves the carry position of a current scoped entry up to its table's
// counter. Sound because the counter is read first and the guards after:
// a commit whose bump of the table's counter was read and that touched the
// entry's scopes announced them before that bump and withdraws the
// announcement only after bumping them, so the guards show it (pending or
// moved) and nothing is advanced; otherwise every commit up to the value
// read left the entry's scopes alone, and the entry is exact as of it.
void Store::advance_carry_position(uint64_t hash, const char *key, uint32_t key_len) noexcept {
    uint32_t bucket = uint32_t(hash & (shared_->cfg.nbuckets - 1));
    uint32_t part = partition_of(hash);
    locks_->lock_partition(part, true);
    for (Entry *e = entry_at(shared_->buckets[bucket].load(std::memory_order_relaxed)); e; e = entry_at(e->next)) {
        if (e->hash != hash || e->key_len != key_len || std::memcmp(e->key(), key, key_len) != 0) continue;
        if (e->pins.load(std::memory_order_relaxed) != 0) break;
        auto *deps = const_cast<DepStamp *>(e->deps());
        uint32_t at = 0, positions = 0;
        for (uint32_t i = 0; i < e->ndeps; i++)
            if (!guards(deps[i])) at = i, positions++;
        if (positions != 1) break;  // scopes cover one table
        uint64_t now = gens_.read(deps[at].slot);
        if (now > deps[at].generation && gens_.check(deps, e->ndeps) == Generations::StampState::Current)
            deps[at].generation = now;
        break;
    }
    locks_->unlock_partition(part);
}

void *Store::allocate(uint64_t bytes) noexcept {
    locks_->lock_allocator();
    void *mem = segment(arena_, shared_->segment_offset)->allocate(bytes, std::nothrow);
    locks_->unlock_allocator();
    return mem;
}

// Frees a chain of unlinked entries (linked through next).
void Store::release(Entry *chain) noexcept {
    if (!chain) return;
    locks_->lock_allocator();
    SegmentManager *sm = segment(arena_, shared_->segment_offset);
    while (chain) {
        Entry *next = entry_at(chain->next);
        sm->deallocate(chain);
        chain = next;
    }
    locks_->unlock_allocator();
}

// Counted once per entry, by whoever finds it stale first. A plain load
// first: readers served an older answer find it stale again and again, and
// a compare-and-swap would write the entry's cache line every time.
Counter Store::count_invalidation(Entry *e) noexcept {
    if (e->invalidation_counted.load(std::memory_order_relaxed)) return kCounterCount;
    uint8_t expected = 0;
    if (!e->invalidation_counted.compare_exchange_strong(expected, 1)) return kCounterCount;
    Counter reason = only_rows_moved(e) ? kInvalidatedByWrites : kInvalidatedByCatalogs;
    stats_.add(e->stats_slot, kInvalidations);
    stats_.add(e->stats_slot, reason);
    return reason;
}

void Store::report_invalidation(Entry *e, HitSink &sink) noexcept {
    Counter reason = count_invalidation(e);
    if (reason != kCounterCount) sink.invalidated(reason);
}

// Whether the counters that moved since the entry's stamps are all of rows
// (a write to a table it reads). None moved: a purge after a DROP.
bool Store::only_rows_moved(const Entry *e) const noexcept {
    bool rows_moved = false;
    for (uint32_t i = 0; i < e->ndeps; i++) {
        const DepStamp &d = e->deps()[i];
        if (!guards(d) || (gens_.read(d.slot) == d.generation && !gens_.commit_pending(d.slot))) continue;
        if (!(d.flags & kDataStamp)) return false;
        rows_moved = true;
    }
    return rows_moved;
}

void Store::account_removed(Entry *e, Removal reason) noexcept {
    stats_.sub(e->stats_slot, kEntries, 1);
    stats_.sub(e->stats_slot, kBytes, e->alloc_bytes);
    shared_->entries.fetch_sub(1, std::memory_order_relaxed);
    if (reason == Removal::Evicted) {
        stats_.add(e->stats_slot, kEvictions);
        stats_.add(e->stats_slot, kRecomputeEvicted);
        shared_->evictions.fetch_add(1, std::memory_order_relaxed);
    } else if (reason == Removal::Invalidated && !kept_by_deltas(e->deps(), e->ndeps)) {
        // (an entry kept by deltas is counted by the caller that tried to carry it)
        count_invalidation(e);
    }
}

// Unlinks the entries of one bucket for which should_remove(entry) returns a
// reason other than Keep, then frees them after the partition lock is
// released. Returns the number removed; adds their sizes to *freed.
template <class ShouldRemove>
uint64_t Store::sweep_bucket(uint32_t bucket, ShouldRemove should_remove, uint64_t *freed) noexcept {
    if (shared_->buckets[bucket].load(std::memory_order_relaxed) == 0) return 0;  // hint only

    uint32_t part = bucket & (shared_->cfg.npartitions - 1);
    Entry *removed = nullptr;
    uint64_t count = 0;

    locks_->lock_partition(part, true);
    std::atomic<uint64_t> *link_head = &shared_->buckets[bucket];
    uint64_t *link = nullptr;  // the previous entry's next, once past the head
    Entry *e = entry_at(link_head->load(std::memory_order_relaxed));
    while (e) {
        Entry *next = entry_at(e->next);
        Removal reason = should_remove(e);
        if (reason != Removal::Keep) {
            if (link)
                *link = e->next;
            else
                link_head->store(e->next, std::memory_order_relaxed);
            account_removed(e, reason);
            count++;
            if (e->pins.load(std::memory_order_relaxed) > 0) {
                e->unlinked.store(1, std::memory_order_relaxed);  // the last unpin frees it
            } else {
                *freed += e->alloc_bytes;
                e->next = offset_of(removed);
                removed = e;
            }
        } else {
            link = &e->next;
        }
        e = next;
    }
    locks_->unlock_partition(part);

    release(removed);
    return count;
}

bool Store::evict_for(uint64_t bytes) noexcept {
    uint64_t freed = 0;
    uint64_t nbuckets = shared_->cfg.nbuckets;
    // Two full turns of the hand: the first may only clear referenced bits.
    for (uint64_t visited = 0; visited < 2 * nbuckets && freed < bytes; visited++) {
        uint64_t b = shared_->clock_hand.fetch_add(1, std::memory_order_relaxed) & (nbuckets - 1);
        sweep_bucket(
            uint32_t(b),
            [this](Entry *e) {
                if (e->pins.load(std::memory_order_relaxed) > 0) return Removal::Keep;
                if (!entry_is_current(e)) return Removal::Invalidated;
                if (e->referenced.load(std::memory_order_relaxed)) {
                    e->referenced.store(0, std::memory_order_relaxed);
                    return Removal::Keep;
                }
                return Removal::Evicted;
            },
            &freed);
    }
    return freed > 0;
}

void *Store::allocate_evicting(uint64_t bytes) noexcept {
    void *mem = allocate(bytes);
    // Fragmentation can leave no hole big enough even after freeing that
    // many bytes, so keep evicting while eviction still frees something.
    while (!mem && evict_for(bytes)) mem = allocate(bytes);
    return mem;
}

InsertStatus Store::insert(const EntryParts &p, uint64_t max_entry_bytes, uint64_t *pinned) noexcept {
    Entry *e = nullptr;
    InsertStatus status = new_entry(p, max_entry_bytes, pinned, &e);
    if (status != InsertStatus::Stored) return status;
    stats_.add(p.stats_slot, kEntries);
    stats_.add(p.stats_slot, kBytes, e->alloc_bytes);
    shared_->entries.fetch_add(1, std::memory_order_relaxed);
    link_replacing(e, p);
    return InsertStatus::Stored;
}

InsertStatus Store::insert_for_waiters(const EntryParts &p, uint64_t max_entry_bytes, uint64_t &pinned) noexcept {
    Entry *e = nullptr;
    InsertStatus status = new_entry(p, max_entry_bytes, &pinned, &e);
    if (status != InsertStatus::Stored) return status;
    e->as_of_only = 1;
    e->unlinked.store(1, std::memory_order_relaxed);  // the last unpin frees it
    return InsertStatus::Stored;
}

// An entry's memory, evicting to make room, filled from p (not linked).
InsertStatus Store::new_entry(const EntryParts &p, uint64_t max_entry_bytes, uint64_t *pinned, Entry **out) noexcept {
    uint64_t bytes = entry_size(p);
    if (bytes > max_entry_bytes || bytes > shared_->cfg.arena_bytes / 2) return InsertStatus::TooLarge;
    void *mem = allocate_evicting(bytes);
    if (!mem) return InsertStatus::NoSpace;
    *out = make_entry(mem, bytes, p, pinned);
    return InsertStatus::Stored;
}

Store::Entry *Store::make_entry(void *mem, uint64_t bytes, const EntryParts &p, uint64_t *pinned) noexcept {
    auto *e = new (mem) Entry;
    e->next = 0;
    e->hash = p.hash;
    e->alloc_bytes = bytes;
    e->key_len = p.key_len;
    e->ndeps = p.ndeps;
    e->meta_len = p.meta_len;
    e->payload_len = p.payload_len;
    e->stats_slot = p.stats_slot;
    e->stamped_at = p.stamped_at;
    e->snapshot_print = p.snapshot_print;
    e->pins.store(pinned ? 1 : 0, std::memory_order_relaxed);
    e->referenced.store(1, std::memory_order_relaxed);
    e->invalidation_counted.store(0, std::memory_order_relaxed);
    e->unlinked.store(0, std::memory_order_relaxed);
    e->sampled_hits.store(0, std::memory_order_relaxed);
    e->last_hit.store(0, std::memory_order_relaxed);
    e->as_of_only = 0;
    if (pinned) *pinned = offset_of(e);
    std::memcpy(e->body(), p.key, p.key_len);
    if (p.ndeps) std::memcpy(const_cast<DepStamp *>(e->deps()), p.deps, sizeof(DepStamp) * p.ndeps);
    if (p.meta_len) std::memcpy(const_cast<char *>(e->meta()), p.meta, p.meta_len);
    if (p.payload_len) std::memcpy(const_cast<char *>(e->payload()), p.payload, p.payload_len);
    return e;
}

void Store::link_replacing(Entry *e, const EntryParts &p) noexcept {
    uint32_t bucket = uint32_t(p.hash & (shared_->cfg.nbuckets - 1));
    uint32_t part = partition_of(p.hash);
    Entry *old = nullptr;

    locks_->lock_partition(part, true);
    std::atomic<uint64_t> &head = shared_->buckets[bucket];
    uint64_t *link = nullptr;
    for (Entry *cur = entry_at(head.load(std::memory_order_relaxed)); cur; cur = entry_at(cur->next)) {
        if (cur->hash == p.hash && cur->key_len == p.key_len &&
            std::memcmp(cur->key(), p.key, p.key_len) == 0) {
            if (link)
                *link = cur->next;
            else
                head.store(cur->next, std::memory_order_relaxed);
            old = cur;
            break;
        }
        link = &cur->next;
    }
    e->next = head.load(std::memory_order_relaxed);
    head.store(offset_of(e), std::memory_order_relaxed);
    bool free_old = false;
    if (old) {
        account_removed(old, entry_is_current(old) ? Removal::Dropped : Removal::Invalidated);
        if (old->pins.load(std::memory_order_relaxed) > 0)
            old->unlinked.store(1, std::memory_order_relaxed);
        else
            free_old = true;
    }
    locks_->unlock_partition(part);

    if (free_old) {
        old->next = 0;
        release(old);
    }
}

LookupStatus Store::read_pinned(uint64_t handle, HitSink &sink) const noexcept {
    // A pinned entry is immutable and cannot be freed: no lock needed.
    const Entry *e = entry_at(handle);
    Generations::StampState stamps =
        e->as_of_only ? Generations::StampState::Stale : gens_.check(e->deps(), e->ndeps);
    if (stamps != Generations::StampState::Current && as_of_callers_state(e, sink))
        return sink.accept(view_of(e)) ? LookupStatus::AsOfSnapshot : LookupStatus::SinkFailed;
    switch (stamps) {
        case Generations::StampState::Stale: return LookupStatus::Stale;
        case Generations::StampState::CommitPending: return LookupStatus::Miss;
        case Generations::StampState::Current: break;
    }
    return sink.accept(view_of(e)) ? LookupStatus::Hit : LookupStatus::SinkFailed;
}

void Store::unpin(uint64_t handle) noexcept {
    Entry *e = entry_at(handle);
    uint32_t part = partition_of(e->hash);
    // Under the shared lock: an unlinker (exclusive) either saw our pin and
    // left the freeing to us, or runs after us and frees it itself.
    locks_->lock_partition(part, false);
    bool last = e->pins.fetch_sub(1, std::memory_order_acq_rel) == 1;
    bool free_it = last && e->unlinked.load(std::memory_order_relaxed);
    locks_->unlock_partition(part);
    if (free_it) {
        e->next = 0;
        release(e);
    }
}

uint64_t Store::allocate_block(uint64_t bytes) noexcept {
    if (bytes > shared_->cfg.arena_bytes / 2) return 0;
    void *mem = allocate_evicting(bytes);
    return mem ? uint64_t(static_cast<char *>(mem) - arena_) : 0;
}

char *Store::block(uint64_t handle) const noexcept { return arena_ + handle; }

void Store::release_block(uint64_t handle) noexcept {
    locks_->lock_allocator();
    segment(arena_, shared_->segment_offset)->deallocate(arena_ + handle);
    locks_->unlock_allocator();
}

uint64_t Store::remove_all() noexcept {
    uint64_t removed = 0, freed = 0;
    for (uint32_t b = 0; b < shared_->cfg.nbuckets; b++)
        removed += sweep_bucket(
            b, [](Entry *) { return Removal::Dropped; }, &freed);
    return removed;
}

uint64_t Store::remove_matching(KeyMatch match, void *context) noexcept {
    uint64_t removed = 0, freed = 0;
    for (uint32_t b = 0; b < shared_->cfg.nbuckets; b++)
        removed += sweep_bucket(
            b, [&](Entry *e) { return match(e->key(), e->key_len, context) ? Removal::Dropped : Removal::Keep; },
            &freed);
    return removed;
}

bool Store::revise_stamps(uint64_t hash, const char *key, uint32_t key_len, const DepStamp *from, uint32_t ndeps,
                          const DepStamp *to, Micros stamped_at) noexcept {
    auto same_entry = [&](const Entry *e) {
        return e->hash == hash && e->key_len == key_len && std::memcmp(e->key(), key, key_len) == 0 &&
               e->ndeps == ndeps && std::memcmp(e->deps(), from, sizeof(DepStamp) * ndeps) == 0;
    };
    uint32_t bucket = uint32_t(hash & (shared_->cfg.nbuckets - 1));
    if (!to) {
        uint64_t freed = 0;
        return sweep_bucket(bucket, [&](Entry *e) { return same_entry(e) ? Removal::Invalidated : Removal::Keep; },
                            &freed) > 0;
    }
    uint32_t part = partition_of(hash);
    bool done = false;
    locks_->lock_partition(part, true);
    for (Entry *e = entry_at(shared_->buckets[bucket].load(std::memory_order_relaxed)); e; e = entry_at(e->next)) {
        if (!same_entry(e)) continue;
        if (e->pins.load(std::memory_order_relaxed) == 0) {
            auto *deps = const_cast<DepStamp *>(e->deps());
            for (uint32_t i = 0; i < ndeps; i++) deps[i].generation = to[i].generation;
            e->stamped_at = stamped_at;
            e->snapshot_print = 0;
            done = true;
        }
        break;
    }
    locks_->unlock_partition(part);
    return done;
}

bool Store::remove_stamped(uint64_t hash, const char *key, uint32_t key_len, Micros stamped_at) noexcept {
    uint32_t bucket = uint32_t(hash & (shared_->cfg.nbuckets - 1));
    uint64_t freed = 0;
    return sweep_bucket(bucket,
                        [&](Entry *e) {
                            return e->hash == hash && e->key_len == key_len && e->stamped_at == stamped_at &&
                                           std::memcmp(e->key(), key, key_len) == 0
                                       ? Removal::Dropped
                                       : Removal::Keep;
                        },
                        &freed) > 0;
}

uint64_t Store::remove_stale() noexcept {
    uint64_t removed = 0, freed = 0;
    for (uint32_t b = 0; b < shared_->cfg.nbuckets; b++)
        removed += sweep_bucket(
            b, [this](Entry *e) { return entry_is_current(e) ? Removal::Keep : Removal::Invalidated; }, &freed);
    return removed;
}

StoreInfo Store::info() const noexcept {
    StoreInfo info{};
    info.arena_bytes = shared_->cfg.arena_bytes;
    locks_->lock_allocator();
    info.free_bytes = segment(arena_, shared_->segment_offset)->get_free_memory();
    locks_->unlock_allocator();
    info.used_bytes = info.arena_bytes - info.free_bytes;
    info.entries = shared_->entries.load(std::memory_order_relaxed);
    info.evictions = shared_->evictions.load(std::memory_order_relaxed);
    return info;
}

}  // namespace pgmemo
