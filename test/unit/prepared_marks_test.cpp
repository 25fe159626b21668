#include "prepared_marks.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace pgmemo;

namespace {

const uint32_t kSlots[] = {1, 65535, 77};
const char kGid[] = "xa:branch-42";

std::vector<unsigned char> sample_bytes() {
    PreparedMarks m;
    m.xid = 4711;
    m.dbid = 5;
    m.gid = kGid;
    m.gid_len = uint32_t(strlen(kGid));
    m.slots = kSlots;
    m.nslots = 3;
    std::vector<unsigned char> bytes(encoded_prepared_marks_size(m));
    encode_prepared_marks(m, bytes.data());
    return bytes;
}

bool decodes(const std::vector<unsigned char> &bytes, size_t len, PreparedMarks *back, std::vector<uint32_t> *slots) {
    slots->assign(len / sizeof(uint32_t) + 1, 0);
    return decode_prepared_marks(bytes.data(), len, back, slots->data());
}

}  // namespace

TEST(PreparedMarks, RoundTrips) {
    auto bytes = sample_bytes();
    PreparedMarks back;
    std::vector<uint32_t> slots;
    ASSERT_TRUE(decodes(bytes, bytes.size(), &back, &slots));
    EXPECT_EQ(back.xid, 4711u);
    EXPECT_EQ(back.dbid, 5u);
    EXPECT_EQ(std::string(back.gid, back.gid_len), "xa:branch-42");
    EXPECT_EQ(std::vector<uint32_t>(back.slots, back.slots + back.nslots), (std::vector<uint32_t>{1, 65535, 77}));
}

TEST(PreparedMarks, RefusesEveryDamage) {
    auto bytes = sample_bytes();
    PreparedMarks back;
    std::vector<uint32_t> slots;
    for (size_t i = 0; i < bytes.size(); i++) {
        auto damaged = bytes;
        damaged[i] ^= 0x20;
        EXPECT_FALSE(decodes(damaged, damaged.size(), &back, &slots)) << "flipped byte " << i;
    }
    for (size_t n = 0; n < bytes.size(); n++)
        EXPECT_FALSE(decodes(bytes, n, &back, &slots)) << "truncated to " << n;
    bytes.push_back(0);
    EXPECT_FALSE(decodes(bytes, bytes.size(), &back, &slots)) << "an extra byte";
}
