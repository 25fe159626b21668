#include "flight.hpp"

#include <cstring>

#include "store.hpp"

namespace pgmemo {

FlightTable FlightTable::initialize(void *mem, uint32_t nslots) noexcept {
    auto *slots = static_cast<FlightSlot *>(mem);
    std::memset(slots, 0, shared_size(nslots));
    return FlightTable(slots, nslots);
}

FlightTable FlightTable::attach(void *mem, uint32_t nslots) noexcept {
    return FlightTable(static_cast<FlightSlot *>(mem), nslots);
}

int32_t FlightTable::find(uint64_t hash, const char *key, uint32_t key_len, const Store &store) const noexcept {
    for (uint32_t i = 0; i < nslots_; i++) {
        const FlightSlot &s = slots_[i];
        if ((s.state == FlightState::Running || s.state == FlightState::Abandoned) && s.hash == hash &&
            s.key_len == key_len && std::memcmp(store.block(s.key_block), key, key_len) == 0)
            return int32_t(i);
    }
    return -1;
}

int32_t FlightTable::claim(uint64_t hash, uint64_t key_block, uint32_t key_len, int32_t leader_pid,
                           uint32_t stats_slot, uint32_t dbid, int64_t now) noexcept {
    for (uint32_t i = 0; i < nslots_; i++) {
        FlightSlot &s = slots_[i];
        if (s.state != FlightState::Free) continue;
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
        s.error_code = 0;
        s.error_message[0] = '\0';
        return int32_t(i);
    }
    return -1;
}

bool FlightTable::leave(int32_t i, bool was_waiter, uint64_t *key_block, uint64_t *entry) noexcept {
    FlightSlot &s = slots_[i];
    s.participants--;
    if (was_waiter) s.waiters--;
    if (s.participants > 0) return false;
    *key_block = s.key_block;
    *entry = s.result_entry;
    s.state = FlightState::Free;
    s.key_block = 0;
    s.result_entry = 0;
    return true;
}

}  // namespace pgmemo
