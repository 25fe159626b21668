// The flight table: at most one computation per key in flight at a time.
//
// A backend that misses either leads a new flight for its key or joins the
// running one and sleeps until the leader publishes. The flight key is the
// cache key: the same bytes, so callers whose keys differ (by scope, role,
// anything) never share a flight.
//
// Layout (shared_size(nslots) bytes, one piece of shared memory):
//   FlightHeader                  the free list and the count of slots in use
//   uint32_t buckets[nbuckets]    heads of the hash chains
//   FlightSlot slots[nslots]
// Links (bucket heads, FlightSlot::next, the free list head) hold a slot
// number + 1, 0 meaning "none", so the table does not depend on where it is
// mapped.
//
// Indexing: chained hashing on the key hash. nbuckets is the smallest power
// of two >= 2 * nslots, so a chain holds less than one slot on average even
// when every slot is in use, and find and claim cost O(1) expected,
// whatever max_flights is. A slot is on exactly one list at a time: the free
// list while Free, otherwise the chain of its hash's bucket, from claim until
// the last participant leaves, whatever its state (a Done or Failed slot
// stays on its chain, skipped by find, until leave unlinks it). Deletion
// unlinks the slot from its chain, so there are no tombstones and churn
// never slows find down. Slots never move: the slot number a participant
// remembers, and the condition variable inside the slot, stay valid for as
// long as it takes part.
//
// Locking: the flight lock (one lock for the whole table) protects every
// field of the header, every bucket head and every field of every slot.
// Every function here requires the caller to hold it: exclusive, except
// find, full, in_use, error_message and the read-only accessors, which
// accept shared. The flight table never takes a store lock itself and never
// allocates: the arena blocks it owns (a flight's key bytes; a failed
// flight's message) are allocated by the caller before it takes the flight
// lock, and handed back by leave (or publish) to be released after the
// caller drops it.
// noexcept means "throws no C++ exception" (see StoreLocks in store.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

class Store;

enum class FlightState : uint32_t {
    Free = 0,
    Running,    // the leader is computing
    Done,       // published: result is the pinned entry (0 = not storable)
    Failed,     // the query itself failed: waiters raise the same error
    Abandoned,  // the leader went away (cancel, timeout, exit): take over
};

// Longest failure message a flight shares, with its terminating NUL.
constexpr size_t kFlightMessageLen = 512;

// Most slots a flight table may have (pg_memo.max_flights). A backend takes
// part in at most one flight at a time, so slots beyond the number of
// backends are never used.
constexpr uint32_t kMaxFlights = 65536;

// Every field is protected by the flight lock (see above).
struct FlightSlot {
    FlightState state;
    uint32_t incarnation;  // changes every time the slot is reused
    uint64_t hash;         // the key's hash: picks the chain
    uint64_t key_block;    // arena handle of the key bytes, owned by the flight
    uint32_t key_len;
    int32_t leader_pid;
    uint32_t participants;  // leader and waiters that still hold the slot
    uint32_t waiters;
    uint32_t stats_slot;
    uint32_t dbid;
    int64_t started_at;                        // opaque timestamp from the caller
    uint64_t result_entry;                     // pinned store entry handle when Done
    uint64_t error_block;                      // when Failed: arena handle of the NUL-terminated
                                               // message (owned by the flight), or 0
    int32_t error_code;                        // when Failed: the error to re-raise
    uint32_t next;                             // next slot + 1 on this slot's chain or on the free list
    alignas(8) unsigned char wait_handle[16];  // the glue's condition variable
};

// What the last participant to leave must release after dropping the lock.
struct FlightLeftovers {
    uint64_t key_block = 0;    // release_block
    uint64_t entry = 0;        // unpin, when non-zero
    uint64_t error_block = 0;  // release_block, when non-zero
};

// Every field is protected by the flight lock.
struct FlightHeader {
    uint32_t nslots;
    uint32_t nbuckets;   // a power of two
    uint32_t free_head;  // first free slot + 1, 0 when the table is full
    uint32_t in_use;     // slots not Free
};

class FlightTable {
public:
    static size_t shared_size(uint32_t nslots) noexcept;
    // nslots is 1 .. kMaxFlights.
    static FlightTable initialize(void *mem, uint32_t nslots) noexcept;
    static FlightTable attach(void *mem, uint32_t nslots) noexcept;

    // The running (or abandoned) flight for this key, or -1. key points to
    // the caller's own copy of the key bytes (backend memory is fine).
    int32_t find(uint64_t hash, const char *key, uint32_t key_len, const Store &store) const noexcept;

    // Whether claim would fail: every slot is taken.
    bool full() const noexcept { return header_->free_head == 0; }
    uint32_t in_use() const noexcept { return header_->in_use; }

    // Claims a free slot for a new Running flight led by leader_pid, or -1
    // when the table is full. key_block holds key_len key bytes; the flight
    // owns it from now on. The caller has just found no flight for the key
    // under the same exclusive lock (claim does not look for one).
    int32_t claim(uint64_t hash, uint64_t key_block, uint32_t key_len, int32_t leader_pid, uint32_t stats_slot,
                  uint32_t dbid, int64_t now) noexcept;

    void join(int32_t i) noexcept {
        slots_[i].participants++;
        slots_[i].waiters++;
    }

    // The leader's outcome: state, the pinned entry (Done) or the error code
    // and message block (Failed; 0 for no message). The flight owns
    // error_block from now on. Returns the message block the flight owned
    // before (0 unless published twice), to be released after the lock.
    uint64_t publish(int32_t i, FlightState state, uint64_t entry, int32_t error_code,
                     uint64_t error_block) noexcept;

    // The message of a Failed flight ("" when there is none).
    const char *error_message(int32_t i, const Store &store) const noexcept;

    // Drops one participant. Returns true when it was the last: the slot is
    // Free again (unlinked from its chain, on the free list) and the caller
    // must release what *left holds after dropping the flight lock.
    bool leave(int32_t i, bool was_waiter, FlightLeftovers *left) noexcept;

    FlightSlot &slot(int32_t i) noexcept { return slots_[i]; }
    const FlightSlot &slot(int32_t i) const noexcept { return slots_[i]; }
    uint32_t size() const noexcept { return header_->nslots; }

private:
    FlightTable(FlightHeader *header, uint32_t *buckets, FlightSlot *slots)
        : header_(header), buckets_(buckets), slots_(slots) {}
    static FlightTable layout(void *mem, uint32_t nslots) noexcept;
    uint32_t bucket_of(uint64_t hash) const noexcept {
        return uint32_t(hash ^ (hash >> 32)) & (header_->nbuckets - 1);
    }

    FlightHeader *header_;
    uint32_t *buckets_;
    FlightSlot *slots_;
};

}  // namespace pgmemo
