#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "generations.hpp"

#include <new>

#include "hash.hpp"

namespace pgmemo {

Generations Generations::initialize(void *counters) noexcept {
    Generations g = attach(counters);
    for (uint32_t i = 0; i < kSlots; i++) {
        new (&g.counters_[i]) std::atomic<uint64_t>(1);
        new (&g.pending_[i]) std::atomic<uint32_t>(0);
        new (&g.marks_[i]) std::atomic<uint64_t>(0);
    }
    return g;
}

Generations Generations::attach(void *counters) noexcept {
    // counters, then pending counts, then marks (8-byte aligned after them).
    auto *slots = static_cast<std::atomic<uint64_t> *>(counters);
    auto *pending = reinterpret_cast<std::atomic<uint32_t> *>(slots + kSlots);
    auto *marks = reinterpret_cast<std::atomic<uint64_t> *>(pending + kSlots);
    return Generations(slots, pending, marks);
}

uint32_t Generations::slot_of(uint32_t dbid, GenerationKind kind, uint32_t oid) noexcept {
    uint64_t h = hash_mix((uint64_t(dbid) << 32) | uint64_t(kind), oid);
    if (kind == GenerationKind::Scope) return kSlots - kScopeSlots + uint32_t(h & (kScopeSlots - 1));
    return uint32_t(h & (kSlots - kScopeSlots - 1));
}

}  // namespace pgmemo
