// Micro-benchmarks of key hashing and of the flight table it indexes.
//
// hash_bytes (XXH3, 64-bit) against the MurmurHash64A that src/core/hash.cpp
// had before, kept here as a reference, for keys of 32 bytes, 256 bytes (a
// typical cache key: cache name, query text, parameters) and 4 KiB. And the
// flight table's miss path (find, claim, leave) at the default size and the
// largest, to show that its cost follows the flights in progress, not
// pg_memo.max_flights.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "flight.hpp"
#include "hash.hpp"
#include "test_support.hpp"

using namespace pgmemo;

namespace {

// MurmurHash64A, as src/core/hash.cpp had it.
uint64_t murmur64a(const void *data, size_t len, uint64_t seed) noexcept {
    constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
    constexpr int kShift = 47;
    const auto *bytes = static_cast<const unsigned char *>(data);
    uint64_t h = seed ^ (len * kMul);
    size_t words = len / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t k;
        std::memcpy(&k, bytes + i * 8, sizeof k);
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

std::string key_of_size(size_t n) {
    std::string k(n, '\0');
    for (size_t i = 0; i < n; i++) k[i] = char('a' + (i * 131 + 7) % 26);
    return k;
}

template <uint64_t (*Hash)(const void *, size_t, uint64_t) noexcept>
void BM_Hash(benchmark::State &state) {
    std::string key = key_of_size(size_t(state.range(0)));
    for (auto _ : state) {
        benchmark::DoNotOptimize(key.data());
        benchmark::DoNotOptimize(Hash(key.data(), key.size(), 0));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_HashMix(benchmark::State &state) {
    uint64_t a = 1, b = 2;
    for (auto _ : state) {
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(hash_mix(a, b++));
    }
}

// One flightless miss: look for the key's flight, claim a slot, leave it,
// with 64 other flights in progress, in a table of range(0) slots.
void BM_FlightMissClaimLeave(benchmark::State &state) {
    auto nslots = uint32_t(state.range(0));
    constexpr uint32_t kLive = 64;
    pgmemo::testing::TestStore t(8 << 20);
    pgmemo::testing::AlignedBuffer mem(FlightTable::shared_size(nslots));
    FlightTable flights = FlightTable::initialize(mem.get(), nslots);
    std::vector<std::string> keys;
    for (uint32_t i = 0; i < kLive + 1; i++) keys.push_back(key_of_size(256) + std::to_string(i));
    for (uint32_t i = 0; i < kLive; i++) {
        uint64_t b = t.store.allocate_block(keys[i].size());
        std::memcpy(t.store.block(b), keys[i].data(), keys[i].size());
        flights.claim(hash_bytes(keys[i].data(), keys[i].size()), b, uint32_t(keys[i].size()), 1, 1, 1, 0);
    }
    const std::string &key = keys[kLive];
    uint64_t h = hash_bytes(key.data(), key.size());
    uint64_t block = t.store.allocate_block(key.size());
    std::memcpy(t.store.block(block), key.data(), key.size());
    for (auto _ : state) {
        int32_t f = flights.find(h, key.data(), uint32_t(key.size()), t.store);
        if (f < 0) f = flights.claim(h, block, uint32_t(key.size()), 1, 1, 1, 0);
        FlightLeftovers left;
        flights.leave(f, false, &left);
        benchmark::DoNotOptimize(left);
    }
}

}  // namespace

BENCHMARK(BM_Hash<murmur64a>)->Name("BM_Hash/murmur64a")->Arg(32)->Arg(256)->Arg(4096);
BENCHMARK(BM_Hash<hash_bytes>)->Name("BM_Hash/xxh3")->Arg(32)->Arg(256)->Arg(4096);
BENCHMARK(BM_HashMix);
BENCHMARK(BM_FlightMissClaimLeave)->Arg(1024)->Arg(kMaxFlights);
