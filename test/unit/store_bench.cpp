// Micro-benchmarks of the core hit path: key encoding + hash + lookup + copy.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "hash.hpp"
#include "key.hpp"
#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::CopySink;
using pgmemo::testing::TestStore;

static const char *kQuery =
    "SELECT id, full_name, title, department FROM employees WHERE path <@ $1::ltree "
    "ORDER BY full_name, id LIMIT $2::int OFFSET $3::int";

static std::string make_key(const std::string &scope) {
    KeyField f[4] = {{"employees.page", 14, false},
                     {kQuery, uint32_t(strlen(kQuery)), false},
                     {scope.data(), uint32_t(scope.size()), false},
                     {"20", 2, false}};
    std::string k(encoded_key_size(f, 4), '\0');
    encode_key(f, 4, k.data());
    return k;
}

static void BM_HitLookup(benchmark::State &state) {
    TestStore t(64 << 20, 65536, 64);
    std::string payload(size_t(state.range(0)), 'r');
    std::vector<std::string> keys;
    for (int i = 0; i < 1000; i++) {
        keys.push_back(make_key("1." + std::to_string(i)));
        EntryParts p;
        p.hash = hash_bytes(keys.back().data(), keys.back().size());
        p.key = keys.back().data();
        p.key_len = uint32_t(keys.back().size());
        p.payload = payload.data();
        p.payload_len = uint32_t(payload.size());
        p.stats_slot = 1;
        t.store.insert(p, ~uint64_t(0));
    }
    CopySink sink;
    size_t i = 0;
    for (auto _ : state) {
        std::string key = make_key("1." + std::to_string(i++ % 1000));
        uint64_t h = hash_bytes(key.data(), key.size());
        benchmark::DoNotOptimize(t.store.lookup(h, key.data(), uint32_t(key.size()), {}, sink));
    }
}
// A 20-row directory page is about 3 kB of tuples.
BENCHMARK(BM_HitLookup)->Arg(64)->Arg(3000);

static void BM_HashKey(benchmark::State &state) {
    std::string key = make_key("1.2.3");
    for (auto _ : state) benchmark::DoNotOptimize(hash_bytes(key.data(), key.size()));
}
BENCHMARK(BM_HashKey);

BENCHMARK_MAIN();
