#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "stats.hpp"

#include <cstring>
#include <new>

#include "hash.hpp"

namespace pgmemo {

namespace {
constexpr uint32_t kEmpty = 0, kClaiming = 1, kReady = 2, kReleased = 3;
// Claims retried, at most, when another claimer took the slot first.
constexpr int kClaimAttempts = 8;

bool is_gauge(int c) { return c == kEntries || c == kBytes; }
}  // namespace

StatsTable StatsTable::initialize(void *mem, uint32_t nslots, int64_t now) noexcept {
    auto *slots = static_cast<StatsSlot *>(mem);
    for (uint32_t i = 0; i < nslots; i++) {
        StatsSlot *s = new (&slots[i]) StatsSlot;
        s->state.store(kEmpty, std::memory_order_relaxed);
        s->dbid = 0;
        s->name_hash = 0;
        std::memset(s->name, 0, sizeof s->name);
        s->stats_reset.store(now, std::memory_order_relaxed);
        s->last_used.store(now, std::memory_order_relaxed);
        s->incarnation.store(0, std::memory_order_relaxed);
        for (auto &c : s->counters) c.store(0, std::memory_order_relaxed);
    }
    std::strncpy(slots[kOverflowSlot].name, kOverflowName, kMaxCacheNameLen);
    slots[kOverflowSlot].state.store(kReady, std::memory_order_release);
    return StatsTable(slots, nslots);
}

StatsTable StatsTable::attach(void *mem, uint32_t nslots) noexcept {
    return StatsTable(static_cast<StatsSlot *>(mem), nslots);
}

uint32_t StatsTable::find_or_claim(uint32_t dbid, const char *name, size_t len, int64_t now,
                                   int64_t idle_micros) noexcept {
    uint64_t h = hash_mix(dbid, hash_bytes(name, len));
    uint32_t usable = nslots_ - 1;  // slot 0 is the overflow row
    if (usable == 0) return kOverflowSlot;

    for (int attempt = 0; attempt < kClaimAttempts; attempt++) {
        // The name's probe sequence: its slot, or where it would go (the first
        // released slot on the way, else the empty slot that ends it).
        uint32_t free_slot = 0, free_state = kEmpty;
        for (uint32_t probe = 0; probe < usable; probe++) {
            uint32_t i = 1 + uint32_t((h + probe) % usable);
            StatsSlot &s = slots_[i];
            uint32_t state = s.state.load(std::memory_order_acquire);
            // A claimer writes a few fields and publishes; nothing in between
            // can fail, so this wait is a handful of instructions long.
            while (state == kClaiming) state = s.state.load(std::memory_order_acquire);
            if (state == kReady) {
                if (s.name_hash == h && s.dbid == dbid && std::strlen(s.name) == len &&
                    std::memcmp(s.name, name, len) == 0)
                    return i;
                continue;
            }
            if (free_slot == 0) {
                free_slot = i;
                free_state = state;
            }
            if (state == kEmpty) break;  // the name is not further on
        }
        if (free_slot == 0) {
            if (idle_micros > 0 && release_idle(now, idle_micros)) continue;
            return kOverflowSlot;
        }
        StatsSlot &s = slots_[free_slot];
        uint32_t expected = free_state;
        if (!s.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel))
            continue;  // taken meanwhile (by this name, maybe): look again
        s.dbid = dbid;
        s.name_hash = h;
        std::memset(s.name, 0, sizeof s.name);
        std::memcpy(s.name, name, len);
        s.stats_reset.store(now, std::memory_order_relaxed);
        s.last_used.store(now, std::memory_order_relaxed);
        s.state.store(kReady, std::memory_order_release);
        // Another claimer of the same name may have taken an earlier slot of
        // the sequence meanwhile (one released while this one probed): the
        // first in the sequence is the name's, for both.
        uint32_t first = first_slot_of(h, dbid, name, len);
        if (first == free_slot) return free_slot;
        uint32_t ready = kReady;
        if (s.state.compare_exchange_strong(ready, kClaiming, std::memory_order_acq_rel))
            release_claimed(s, false);
        return first;
    }
    return kOverflowSlot;
}

uint32_t StatsTable::first_slot_of(uint64_t h, uint32_t dbid, const char *name, size_t len) const noexcept {
    uint32_t usable = nslots_ - 1;
    for (uint32_t probe = 0; probe < usable; probe++) {
        uint32_t i = 1 + uint32_t((h + probe) % usable);
        const StatsSlot &s = slots_[i];
        uint32_t state = s.state.load(std::memory_order_acquire);
        while (state == kClaiming) state = s.state.load(std::memory_order_acquire);
        if (state == kEmpty) break;
        if (state == kReady && s.name_hash == h && s.dbid == dbid && std::strlen(s.name) == len &&
            std::memcmp(s.name, name, len) == 0)
            return i;
    }
    return kOverflowSlot;
}

uint32_t StatsTable::release_database(uint32_t dbid) noexcept {
    uint32_t released = 0;
    for (uint32_t i = 1; i < nslots_; i++) {
        StatsSlot &s = slots_[i];
        uint32_t expected = kReady;
        if (s.dbid != dbid || !s.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel))
            continue;
        release_claimed(s, false);  // its entries are gone with the database
        released++;
    }
    return released;
}

void StatsTable::release_claimed(StatsSlot &s, bool keep_gauges) noexcept {
    s.incarnation.fetch_add(1, std::memory_order_acq_rel);
    s.dbid = 0;
    s.name_hash = 0;
    std::memset(s.name, 0, sizeof s.name);
    for (int c = 0; c < kCounterCount; c++)
        if (!keep_gauges || !is_gauge(c)) s.counters[c].store(0, std::memory_order_relaxed);
    s.state.store(kReleased, std::memory_order_release);
}

bool StatsTable::release_idle(int64_t now, int64_t idle_micros) noexcept {
    std::atomic<int64_t> &no_scan_before = slots_[kOverflowSlot].last_used;
    if (now < no_scan_before.load(std::memory_order_relaxed)) return false;
    for (int attempt = 0; attempt < kClaimAttempts; attempt++) {
        uint32_t oldest = kOverflowSlot;
        int64_t oldest_use = now - idle_micros;
        for (uint32_t i = 1; i < nslots_; i++) {
            const StatsSlot &s = slots_[i];
            int64_t used = s.last_used.load(std::memory_order_relaxed);
            if (used < oldest_use && s.state.load(std::memory_order_acquire) == kReady && get(i, kEntries) == 0) {
                oldest = i;
                oldest_use = used;
            }
        }
        if (oldest == kOverflowSlot) {
            no_scan_before.store(now + kTouchMicros, std::memory_order_relaxed);
            return false;
        }
        StatsSlot &s = slots_[oldest];
        uint32_t expected = kReady;
        if (!s.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel)) continue;
        // Used or given an entry since the scan read it: it stays.
        if (s.last_used.load(std::memory_order_relaxed) != oldest_use || get(oldest, kEntries) != 0) {
            s.state.store(kReady, std::memory_order_release);
            continue;
        }
        release_claimed(s, true);
        return true;
    }
    return false;
}

void StatsTable::reset_counters(int64_t now) noexcept {
    for (uint32_t i = 0; i < nslots_; i++) {
        for (int c = 0; c < kCounterCount; c++)
            if (!is_gauge(c)) slots_[i].counters[c].store(0, std::memory_order_relaxed);
        slots_[i].stats_reset.store(now, std::memory_order_relaxed);
    }
}

namespace {

constexpr const char *kBypassReasonNames[] = {
    "disabled",         "transaction_snapshot", "standby",           "replica_role",
    "catalog_changed",  "parallel_worker",      "own_writes",        "triggers_disabled",
    "catalogs_changing", "not_watched",         "reads_unnamed",     "statement_snapshot",
    "refused_plans",
};
static_assert(sizeof kBypassReasonNames / sizeof *kBypassReasonNames == kLastBypassReason - kFirstBypassReason + 1,
              "a name for every bypass reason");

constexpr const char *kRecomputeReasonNames[] = {
    "writes",  "catalog_changes", "delta_records_missing", "delta_query_changed", "delta_not_evaluable",
    "evicted", "error_expired",
};
static_assert(sizeof kRecomputeReasonNames / sizeof *kRecomputeReasonNames ==
                  kLastRecomputeReason - kFirstRecomputeReason + 1,
              "a name for every recompute reason");

}  // namespace

const char *reason_name(Counter c) noexcept {
    if (c >= kFirstBypassReason && c <= kLastBypassReason) return kBypassReasonNames[c - kFirstBypassReason];
    if (c >= kFirstRecomputeReason && c <= kLastRecomputeReason)
        return kRecomputeReasonNames[c - kFirstRecomputeReason];
    return nullptr;
}

}  // namespace pgmemo
