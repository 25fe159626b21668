// Fast 64-bit hashing of key bytes. Plain C++: no PostgreSQL headers.
//
// The hash only picks a bucket and a partition; keys are always compared in
// full, so a collision costs a longer chain walk, never a wrong hit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

// A 64-bit hash of len bytes (the MurmurHash64A mixing scheme, written anew).
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed = 0) noexcept;

// Mixes a few integers into one well-spread 64-bit value.
uint64_t hash_mix(uint64_t a, uint64_t b) noexcept;

}  // namespace pgmemo
