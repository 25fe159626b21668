#include <gtest/gtest.h>

#include <cstring>

#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::AlignedBuffer;

TEST(Stats, SlotsAreKeyedByDatabaseAndName) {
    AlignedBuffer mem(StatsTable::shared_size(8));
    StatsTable t = StatsTable::initialize(mem.get(), 8, 7);
    uint32_t a = t.find_or_claim(1, "employees.page", 14, 0);
    uint32_t b = t.find_or_claim(1, "employees.count", 15, 0);
    uint32_t c = t.find_or_claim(2, "employees.page", 14, 0);
    EXPECT_NE(a, StatsTable::kOverflowSlot);
    EXPECT_NE(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(a, t.find_or_claim(1, "employees.page", 14, 0));
    t.add(a, kHits, 3);
    EXPECT_EQ(t.get(a, kHits), 3u);
    EXPECT_EQ(t.get(c, kHits), 0u);
}

TEST(Stats, FullTableUsesOverflowRow) {
    AlignedBuffer mem(StatsTable::shared_size(3));
    StatsTable t = StatsTable::initialize(mem.get(), 3, 0);
    EXPECT_NE(t.find_or_claim(1, "a", 1, 0), StatsTable::kOverflowSlot);
    EXPECT_NE(t.find_or_claim(1, "b", 1, 0), StatsTable::kOverflowSlot);
    EXPECT_EQ(t.find_or_claim(1, "c", 1, 0), StatsTable::kOverflowSlot);
    EXPECT_STREQ(t.slot(StatsTable::kOverflowSlot).name, "(other)");
}

TEST(Stats, ResetKeepsGauges) {
    AlignedBuffer mem(StatsTable::shared_size(4));
    StatsTable t = StatsTable::initialize(mem.get(), 4, 0);
    uint32_t s = t.find_or_claim(1, "x", 1, 0);
    t.add(s, kHits, 5);
    t.add(s, kEntries, 2);
    t.reset_counters(99);
    EXPECT_EQ(t.get(s, kHits), 0u);
    EXPECT_EQ(t.get(s, kEntries), 2u);
    EXPECT_EQ(t.slot(s).stats_reset.load(), 99);
}

// A dropped database's rows are freed for other names; names probed past a
// released slot are still found, and a claim takes the released slot.
TEST(Stats, ReleasedDatabaseRowsAreReclaimed) {
    AlignedBuffer mem(StatsTable::shared_size(4));
    StatsTable t = StatsTable::initialize(mem.get(), 4, 0);
    uint32_t a = t.find_or_claim(1, "a", 1, 0);
    uint32_t b = t.find_or_claim(2, "b", 1, 0);
    uint32_t c = t.find_or_claim(1, "c", 1, 0);
    ASSERT_NE(a, StatsTable::kOverflowSlot);
    ASSERT_NE(b, StatsTable::kOverflowSlot);
    ASSERT_NE(c, StatsTable::kOverflowSlot);
    EXPECT_EQ(t.find_or_claim(2, "d", 1, 0), StatsTable::kOverflowSlot) << "three rows and the overflow row";
    t.add(a, kHits, 7);
    EXPECT_EQ(t.release_database(1), 2u);
    EXPECT_FALSE(t.ready(a));
    EXPECT_FALSE(t.ready(c));
    EXPECT_EQ(t.find_or_claim(2, "b", 1, 0), b) << "a name past a released slot is still found";
    uint32_t d = t.find_or_claim(2, "d", 1, 0);
    EXPECT_TRUE(d == a || d == c) << "a released slot is claimed again";
    EXPECT_EQ(t.get(d, kHits), 0u) << "with its counters zeroed";
    EXPECT_EQ(t.find_or_claim(2, "d", 1, 0), d);
    EXPECT_EQ(t.release_database(1), 0u);
}
