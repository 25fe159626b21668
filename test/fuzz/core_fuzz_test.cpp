// The core fuzz properties (core_fuzz_checks.hpp) on a fixed set of
// pseudo-random inputs, so that every ctest run exercises them: random
// bytes, and valid keys and results with random damage (valid encodings are
// where a decoder's length arithmetic is tested; random bytes seldom are one).
#include <gtest/gtest.h>

#include <random>

#include "core_fuzz_checks.hpp"

using namespace pgmemo;
using namespace pgmemo::fuzz;

namespace {

constexpr int kInputsPerFamily = 3000;
constexpr uint64_t kSeed = 20260601;

std::string hex(const std::string &s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s.substr(0, 256)) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return s.size() > 256 ? out + "..." : out;
}

class Inputs {
public:
    explicit Inputs(uint64_t seed) : rng_(seed) {}

    size_t below(size_t n) { return n ? size_t(rng_() % n) : 0; }

    std::string random_bytes(size_t max_len) {
        std::string s(below(max_len + 1), '\0');
        for (auto &c : s) c = char(rng_());
        return s;
    }

    std::string valid_key() {
        std::vector<std::string> values;
        std::vector<bool> nulls;
        size_t n = below(12);
        for (size_t i = 0; i < n; i++) {
            nulls.push_back(below(6) == 0);
            values.push_back(nulls.back() ? std::string() : random_bytes(below(4) == 0 ? 200 : 12));
        }
        std::string key;
        encode_fields(values, nulls, &key);
        return key;
    }

    std::string valid_result() {
        std::vector<ColumnType> cols(below(6));
        for (auto &c : cols) c = ColumnType{uint32_t(rng_()), int32_t(rng_())};
        std::vector<std::string> rows(below(10));
        for (auto &r : rows) r = random_bytes(40);
        size_t size = result_prefix_size(uint32_t(cols.size()));
        for (auto &r : rows) size += row_space(uint32_t(r.size()));
        std::unique_ptr<char[]> buf(new char[size]);  // 16-aligned, as the writer needs
        ResultWriter w(buf.get(), size);
        w.begin_rows(cols.data(), uint32_t(cols.size()));
        for (auto &r : rows) w.add_row(r.data(), uint32_t(r.size()));
        return std::string(buf.get(), size);
    }

    // A 4-byte length somewhere near a real one, or at the edges of uint32.
    uint32_t odd_length(uint32_t real) {
        switch (below(6)) {
            case 0: return real + 1;
            case 1: return real - 1;
            case 2: return 0xFFFFFFFFu;
            case 3: return 0xFFFFFFFEu;
            case 4: return 0x80000000u;
            default: return uint32_t(rng_());
        }
    }

    // Damage: flip bytes, rewrite an aligned 4-byte word as an odd length,
    // truncate, or append.
    std::string damage(std::string s) {
        int edits = 1 + int(below(3));
        for (int e = 0; e < edits; e++) {
            switch (below(4)) {
                case 0:
                    if (!s.empty()) s[below(s.size())] ^= char(1 << below(8));
                    break;
                case 1:
                    if (s.size() >= 4) {
                        size_t at = below(s.size() / 4) * 4;
                        uint32_t v;
                        std::memcpy(&v, &s[at], 4);
                        v = odd_length(v);
                        std::memcpy(&s[at], &v, 4);
                    }
                    break;
                case 2: s.resize(below(s.size() + 1)); break;
                default: s += random_bytes(16); break;
            }
        }
        return s;
    }

private:
    std::mt19937_64 rng_;
};

const uint8_t *bytes_of(const std::string &s) { return reinterpret_cast<const uint8_t *>(s.data()); }

}  // namespace

TEST(CoreFuzz, RandomBytes) {
    Inputs in(kSeed);
    for (int i = 0; i < kInputsPerFamily; i++) {
        std::string input = in.random_bytes(i % 10 == 0 ? 4096 : 96);
        std::string failure = check_all(bytes_of(input), input.size());
        ASSERT_EQ(failure, "") << "input " << i << ": " << hex(input);
    }
}

// Valid encodings (every fourth input) and damaged ones through a decoder
// check; accepts(input) says whether the decoder took the bytes as valid.
// Both outcomes must occur often, or the family tests only one side.
template <typename MakeValid, typename Accepts>
void check_damaged(uint64_t seed, MakeValid make_valid, std::string (*check)(const uint8_t *, size_t),
                   Accepts accepts) {
    Inputs in(seed);
    int accepted = 0;
    for (int i = 0; i < kInputsPerFamily; i++) {
        std::string input = i % 4 == 0 ? make_valid(in) : in.damage(make_valid(in));
        std::string failure = check(bytes_of(input), input.size());
        ASSERT_EQ(failure, "") << "input " << i << ": " << hex(input);
        accepted += accepts(input);
    }
    EXPECT_GT(accepted, kInputsPerFamily / 4);
    EXPECT_LT(accepted, kInputsPerFamily);
}

TEST(CoreFuzz, DamagedKeys) {
    check_damaged(
        kSeed + 1, [](Inputs &in) { return in.valid_key(); }, check_key_decode,
        [](const std::string &key) { return decode_key(key.data(), key.size(), nullptr, 0) >= 0; });
}

TEST(CoreFuzz, DamagedResults) {
    check_damaged(
        kSeed + 2, [](Inputs &in) { return in.valid_result(); }, check_result_decode,
        [](const std::string &result) {
            auto copy = exact_copy(result.data(), result.size());  // aligned, as the reader needs
            return ResultReader(copy.get(), result.size()).valid();
        });
}

TEST(CoreFuzz, StructuredRoundTrips) {
    Inputs in(kSeed + 3);
    for (int i = 0; i < kInputsPerFamily; i++) {
        std::string input = in.random_bytes(i % 10 == 0 ? 8192 : 512);
        std::string failure = check_key_round_trip(bytes_of(input), input.size());
        if (failure.empty()) failure = check_result_round_trip(bytes_of(input), input.size());
        ASSERT_EQ(failure, "") << "input " << i << ": " << hex(input);
    }
}
