#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "flight.hpp"

#include <cstring>

#include "store.hpp"

namespace pgmemo {

namespace {

constexpr size_t kLine = 64;

size_t round_up(size_t n) { return (n + kLine - 1) & ~(kLine - 1); }

uint32_t bucket_count(uint32_t nslots) {
    uint32_t n = 2;
    while (n < 2 * uint64_t(nslots)) n <<= 1;
    return n;
}

size_t header_bytes() { return round_up(sizeof(FlightHeader)); }
size_t bucket_bytes(uint32_t nslots) { return round_up(sizeof(uint32_t) * bucket_count(nslots)); }

}  // namespace

static_assert(sizeof(FlightSlot) == 96, "a flight slot stays small: keep docs/architecture.md in step");

size_t FlightTable::shared_size(uint32_t nslots) noexcept {
    return header_bytes() + bucket_bytes(nslots) + sizeof(FlightSlot) * nslots;
}

FlightTable FlightTable::layout(void *mem, uint32_t nslots) noexcept {
    char *base = static_cast<char *>(mem);
    auto *header = reinterpret_cast<FlightHeader *>(base);
    auto *buckets = reinterpret_cast<uint32_t *>(base + header_bytes());
    auto *slots = reinterpret_cast<FlightSlot *>(base + header_bytes() + bucket_bytes(nslots));
    return FlightTable(header, buckets, slots);
}

FlightTable FlightTable::initialize(void *mem, uint32_t nslots) noexcept {
    std::memset(mem, 0, shared_size(nslots));
    FlightTable t = layout(mem, nslots);
    t.header_->nslots = nslots;
    t.header_->nbuckets = bucket_count(nslots);
    // Every slot on the free list, in order: slot 0 is claimed first.
    for (uint32_t i = 0; i < nslots; i++) t.slots_[i].next = i + 1 < nslots ? i + 2 : 0;
    t.header_->free_head = nslots ? 1 : 0;
    t.header_->in_use = 0;
    return t;
}

FlightTable FlightTable::attach(void *mem, uint32_t nslots) noexcept { return layout(mem, nslots); }

int32_t FlightTable::find(uint64_t hash, const char *key, uint32_t key_len, const Store &store) const noexcept {
    for (uint32_t link = buckets_[bucket_of(hash)]; link != 0; link = slots_[link - 1].next) {
        const FlightSlot &s = slots_[link - 1];
        if ((s.state == FlightState::Running || s.state == FlightState::Abandoned) && s.hash == hash &&
            s.key_len == key_len && std::memcmp(store.block(s.key_block), key, key_len) == 0)
            return int32_t(link - 1);
    }
    return -1;
}

int32_t FlightTable::claim(uint64_t hash, uint64_t key_block, uint32_t key_len, int32_t leader_pid,
                           uint32_t stats_slot, uint32_t dbid, int64_t now) noexcept {
    uint32_t link = header_->free_head;
    if (link == 0) return -1;
    FlightSlot &s = slots_[link - 1];
    header_->free_head = s.next;
    header_->in_use++;

    s.state = FlightState::Running;
    s.incarnation++;
    s.hash = hash;
    s.key_block = key_block;
    s.key_len = key_len;
    s.leader_pid = leader_pid;
    s.participants = 1;
    s.waiters = 0;
    s.stats_slot = stats_slot;
    s.dbid = dbid;
    s.started_at = now;
    s.result_entry = 0;
    s.error_block = 0;
    s.error_code = 0;

    uint32_t &head = buckets_[bucket_of(hash)];
    s.next = head;
    head = link;
    return int32_t(link - 1);
}

uint64_t FlightTable::publish(int32_t i, FlightState state, uint64_t entry, int32_t error_code,
                              uint64_t error_block) noexcept {
    FlightSlot &s = slots_[i];
    uint64_t previous = s.error_block;
    s.state = state;
    s.result_entry = entry;
    s.error_code = error_code;
    s.error_block = error_block;
    return previous;
}

const char *FlightTable::error_message(int32_t i, const Store &store) const noexcept {
    const FlightSlot &s = slots_[i];
    return s.error_block ? store.block(s.error_block) : "";
}

bool FlightTable::leave(int32_t i, bool was_waiter, FlightLeftovers *left) noexcept {
    FlightSlot &s = slots_[i];
    s.participants--;
    if (was_waiter) s.waiters--;
    if (s.participants > 0) return false;

    left->key_block = s.key_block;
    left->entry = s.result_entry;
    left->error_block = s.error_block;

    // Unlink from the chain: the slot is on it since its claim.
    uint32_t link = uint32_t(i) + 1;
    for (uint32_t *p = &buckets_[bucket_of(s.hash)]; *p != 0; p = &slots_[*p - 1].next) {
        if (*p == link) {
            *p = s.next;
            break;
        }
    }
    s.state = FlightState::Free;
    s.key_block = 0;
    s.result_entry = 0;
    s.error_block = 0;
    s.next = header_->free_head;
    header_->free_head = link;
    header_->in_use--;
    return true;
}

}  // namespace pgmemo
