#include "prepared_marks.hpp"

#include <gtest/gtest.h>

using namespace pgmemo;

namespace {

PreparedMarks sample() {
    PreparedMarks m;
    m.xid = 4711;
    m.dbid = 5;
    m.gid = "xa:branch-42";
    m.slots = {1, 65535, 77};
    return m;
}

}  // namespace

TEST(PreparedMarks, RoundTrips) {
    auto bytes = encode_prepared_marks(sample());
    PreparedMarks back;
    ASSERT_TRUE(decode_prepared_marks(bytes.data(), bytes.size(), &back));
    EXPECT_EQ(back.xid, 4711u);
    EXPECT_EQ(back.dbid, 5u);
    EXPECT_EQ(back.gid, "xa:branch-42");
    EXPECT_EQ(back.slots, (std::vector<uint32_t>{1, 65535, 77}));
}

TEST(PreparedMarks, RefusesEveryDamage) {
    auto bytes = encode_prepared_marks(sample());
    for (size_t i = 0; i < bytes.size(); i++) {
        auto damaged = bytes;
        damaged[i] ^= 0x20;
        PreparedMarks back;
        EXPECT_FALSE(decode_prepared_marks(damaged.data(), damaged.size(), &back)) << "flipped byte " << i;
    }
    for (size_t n = 0; n < bytes.size(); n++) {
        PreparedMarks back;
        EXPECT_FALSE(decode_prepared_marks(bytes.data(), n, &back)) << "truncated to " << n;
    }
    bytes.push_back(0);
    PreparedMarks back;
    EXPECT_FALSE(decode_prepared_marks(bytes.data(), bytes.size(), &back)) << "an extra byte";
}
