// The flight table: at most one computation per key in flight at a time.
//
// A backend that misses either leads a new flight for its key or joins the
// running one and sleeps until the leader publishes. The flight key is the
// cache key: the same bytes, so callers whose keys differ (by scope, role,
// anything) never share a flight.
//
// Locking: every function here requires the caller to hold the flight lock
// (exclusive, except find and the read-only accessors, which accept shared).
// The flight table never takes a store lock itself; key bytes live in arena
// blocks owned by the flight until it is freed.
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

constexpr size_t kFlightMessageLen = 512;

struct FlightSlot {
    FlightState state;
    uint32_t incarnation;    // changes every time the slot is reused
    uint64_t hash;
    uint64_t key_block;      // arena handle of the key bytes
    uint32_t key_len;
    int32_t leader_pid;
    uint32_t participants;   // leader and waiters that still hold the slot
    uint32_t waiters;
    uint32_t stats_slot;
    uint32_t dbid;
    int64_t started_at;      // opaque timestamp from the caller
    uint64_t result_entry;   // pinned store entry handle when Done
    int32_t error_code;      // when Failed: the error to re-raise
    char error_message[kFlightMessageLen];
    alignas(8) unsigned char wait_handle[32];  // the glue's condition variable
};

class FlightTable {
public:
    static size_t shared_size(uint32_t nslots) noexcept { return sizeof(FlightSlot) * nslots; }
    static FlightTable initialize(void *mem, uint32_t nslots) noexcept;
    static FlightTable attach(void *mem, uint32_t nslots) noexcept;

    // The running (or abandoned) flight for this key, or -1.
    int32_t find(uint64_t hash, const char *key, uint32_t key_len, const Store &store) const noexcept;

    // Claims a free slot for a new Running flight led by leader_pid, or -1
    // when the table is full. key_block holds key_len key bytes.
    int32_t claim(uint64_t hash, uint64_t key_block, uint32_t key_len, int32_t leader_pid,
                  uint32_t stats_slot, uint32_t dbid, int64_t now) noexcept;

    void join(int32_t i) noexcept {
        slots_[i].participants++;
        slots_[i].waiters++;
    }

    // Drops one participant. Returns true when it was the last: the slot is
    // Free again and the caller must release *key_block and unpin *entry
    // (when non-zero) after dropping the flight lock.
    bool leave(int32_t i, bool was_waiter, uint64_t *key_block, uint64_t *entry) noexcept;

    FlightSlot &slot(int32_t i) noexcept { return slots_[i]; }
    const FlightSlot &slot(int32_t i) const noexcept { return slots_[i]; }
    uint32_t size() const noexcept { return nslots_; }

private:
    FlightTable(FlightSlot *slots, uint32_t nslots) : slots_(slots), nslots_(nslots) {}
    FlightSlot *slots_;
    uint32_t nslots_;
};

}  // namespace pgmemo
