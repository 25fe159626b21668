#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "hash.hpp"

// xxHash (Debian: libxxhash-dev), compiled into this file: XXH_INLINE_ALL
// makes every xxHash function static here, so pg_memo needs the header only,
// links no libxxhash and exports no XXH symbols into the server. Inlined,
// XXH3 is also as fast as the shared library's on short keys and faster on
// long ones (test/unit/hash_bench.cpp).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace pgmemo {

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(data, len, seed);
}

uint64_t hash_mix(uint64_t a, uint64_t b) noexcept {
    uint64_t words[2] = {a, b};
    return XXH3_64bits_withSeed(words, sizeof words, 0x9e3779b97f4a7c15ULL);
}

}  // namespace pgmemo
