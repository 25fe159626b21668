#include "hash.hpp"

#include <cstring>

namespace pgmemo {

namespace {
constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
constexpr int kShift = 47;
}  // namespace

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed) noexcept {
    const auto *bytes = static_cast<const unsigned char *>(data);
    uint64_t h = seed ^ (len * kMul);

    size_t words = len / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t k;
        std::memcpy(&k, bytes + i * 8, sizeof k);  // unaligned-safe
        k *= kMul;
        k ^= k >> kShift;
        k *= kMul;
        h ^= k;
        h *= kMul;
    }

    const unsigned char *tail = bytes + words * 8;
    uint64_t rest = 0;
    for (size_t i = 0; i < (len & 7); i++) rest |= uint64_t(tail[i]) << (8 * i);
    if (len & 7) {
        h ^= rest;
        h *= kMul;
    }

    h ^= h >> kShift;
    h *= kMul;
    h ^= h >> kShift;
    return h;
}

uint64_t hash_mix(uint64_t a, uint64_t b) noexcept {
    uint64_t words[2] = {a, b};
    return hash_bytes(words, sizeof words, 0x9e3779b97f4a7c15ULL);
}

}  // namespace pgmemo
