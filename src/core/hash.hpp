// Fast 64-bit hashing of key bytes. Plain C++: no PostgreSQL headers.
//
// The hash only picks a bucket, a partition, a flight chain and a generation
// slot; keys are always compared in full, so a collision costs a longer
// chain walk, never a wrong hit. Hash values live only in shared memory,
// which is rebuilt at every start, so the function may change between
// versions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

// A 64-bit hash of len bytes: xxHash's XXH3 (64-bit), with seed.
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed = 0) noexcept;

// Mixes a few integers into one well-spread 64-bit value.
uint64_t hash_mix(uint64_t a, uint64_t b) noexcept;

}  // namespace pgmemo
