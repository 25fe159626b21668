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

// A full table gives a new name the row longest unused, if it has been idle
// past the bound and holds no entries; its counters go but its gauges stay,
// and a remembered slot's incarnation tells that it changed hands.
TEST(Stats, IdleRowsAreReclaimedWhenFull) {
    constexpr int64_t kMinute = 60 * 1000000LL;
    AlignedBuffer mem(StatsTable::shared_size(4));
    StatsTable t = StatsTable::initialize(mem.get(), 4, 0);
    uint32_t b = t.find_or_claim(1, "b", 1, 0, kMinute);  // the oldest, but it holds an entry
    uint32_t a = t.find_or_claim(1, "a", 1, 10, kMinute);
    uint32_t c = t.find_or_claim(1, "c", 1, 20, kMinute);
    t.add(a, kHits, 7);
    t.add(b, kEntries, 1);
    uint32_t a_incarnation = t.incarnation(a);
    EXPECT_EQ(t.find_or_claim(1, "d", 1, 30, kMinute), StatsTable::kOverflowSlot) << "nothing idle for a minute";
    EXPECT_EQ(t.find_or_claim(1, "d", 1, 30, 0), StatsTable::kOverflowSlot) << "no bound: no reclaim";
    EXPECT_EQ(t.find_or_claim(1, "d", 1, 500000, 1), StatsTable::kOverflowSlot)
        << "no scan again within a second of a scan that found nothing";

    t.touch(c, 2 * kMinute);  // c is in use; a is the oldest without entries
    uint32_t d = t.find_or_claim(1, "d", 1, 3 * kMinute, kMinute);
    EXPECT_EQ(d, a) << "the row longest unused, without entries";
    EXPECT_NE(t.incarnation(a), a_incarnation);
    EXPECT_EQ(t.get(d, kHits), 0u);
    EXPECT_STREQ(t.slot(d).name, "d");
    EXPECT_EQ(t.find_or_claim(1, "b", 1, 3 * kMinute, kMinute), b) << "a row with entries is never taken";
    EXPECT_EQ(t.find_or_claim(1, "c", 1, 3 * kMinute, kMinute), c);
    EXPECT_EQ(t.find_or_claim(1, "a", 1, 3 * kMinute, kMinute), StatsTable::kOverflowSlot)
        << "a is counted in (other) until a row is idle again";
}

TEST(Stats, ReclaimKeepsGaugesAndTouchIsCoarse) {
    constexpr int64_t kMinute = 60 * 1000000LL;
    AlignedBuffer mem(StatsTable::shared_size(2));
    StatsTable t = StatsTable::initialize(mem.get(), 2, 0);
    uint32_t a = t.find_or_claim(1, "a", 1, 0, kMinute);
    t.touch(a, 500000);  // under a second: not written
    EXPECT_EQ(t.slot(a).last_used.load(), 0);
    t.add(a, kBytes, 64);  // bytes without an entry: the gauge is kept across the reclaim
    uint32_t b = t.find_or_claim(1, "b", 1, 2 * kMinute, kMinute);
    EXPECT_EQ(b, a);
    EXPECT_EQ(t.get(b, kBytes), 64u);
}
