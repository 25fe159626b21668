#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hash.hpp"
#include "key.hpp"

using namespace pgmemo;

static std::string encode(std::vector<KeyField> fields) {
    std::string out(encoded_key_size(fields.data(), fields.size()), '\0');
    size_t n = encode_key(fields.data(), fields.size(), out.data());
    EXPECT_EQ(n, out.size());
    return out;
}

static KeyField text(const char *s) { return KeyField{s, uint32_t(std::char_traits<char>::length(s)), false}; }

TEST(Key, FieldBoundariesAreUnambiguous) {
    EXPECT_NE(encode({text("ab"), text("c")}), encode({text("a"), text("bc")}));
    EXPECT_NE(encode({text("abc")}), encode({text("abc"), text("")}));
}

TEST(Key, NullDiffersFromEmpty) {
    KeyField null_field{nullptr, 0, true};
    EXPECT_NE(encode({null_field}), encode({text("")}));
    EXPECT_EQ(encode({null_field, text("x")}), encode({null_field, text("x")}));
}

TEST(Key, SameFieldsSameBytesSameHash) {
    std::string a = encode({text("employees.page"), text("SELECT 1"), text("42")});
    std::string b = encode({text("employees.page"), text("SELECT 1"), text("42")});
    EXPECT_EQ(a, b);
    EXPECT_EQ(hash_bytes(a.data(), a.size()), hash_bytes(b.data(), b.size()));
}

TEST(Hash, SpreadsNearbyInputs) {
    // Keys that differ in one late byte (a scope id) must not collide.
    std::string base(300, 'q');
    uint64_t h1 = hash_bytes(base.data(), base.size());
    base[299] = 'r';
    uint64_t h2 = hash_bytes(base.data(), base.size());
    EXPECT_NE(h1, h2);
    EXPECT_NE(h1 & 0xffff, h2 & 0xffff);
}

TEST(Key, DecodeReturnsTheFields) {
    KeyField null_field{nullptr, 0, true};
    std::string k = encode({text("a"), null_field, text(""), text("query text")});
    KeyField out[8];
    ASSERT_EQ(decode_key(k.data(), k.size(), out, 8), 4);
    EXPECT_EQ(std::string(out[0].data, out[0].len), "a");
    EXPECT_TRUE(out[1].is_null);
    EXPECT_FALSE(out[2].is_null);
    EXPECT_EQ(out[2].len, 0u);
    EXPECT_EQ(std::string(out[3].data, out[3].len), "query text");
    EXPECT_EQ(decode_key(k.data(), k.size() - 1, out, 8), -1) << "truncated keys are rejected";
}
