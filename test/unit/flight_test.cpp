#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "flight.hpp"
#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::AlignedBuffer;
using pgmemo::testing::CopySink;
using pgmemo::testing::TestStore;
using pgmemo::testing::parts;

namespace {

uint64_t key_block(TestStore &t, const std::string &key) {
    uint64_t b = t.store.allocate_block(key.size());
    std::memcpy(t.store.block(b), key.data(), key.size());
    return b;
}


}  // namespace

TEST(Flight, OneFlightPerKeyAndNeverAcrossKeys) {
    TestStore t(1 << 20);
    AlignedBuffer mem(FlightTable::shared_size(4));
    FlightTable flights = FlightTable::initialize(mem.get(), 4);
    std::string k1 = "scope=1", k2 = "scope=2";  // same hash on purpose

    EXPECT_EQ(flights.find(7, k1.data(), uint32_t(k1.size()), t.store), -1);
    int32_t f1 = flights.claim(7, key_block(t, k1), uint32_t(k1.size()), 100, 1, 1, 0);
    ASSERT_GE(f1, 0);
    EXPECT_EQ(flights.find(7, k1.data(), uint32_t(k1.size()), t.store), f1);
    EXPECT_EQ(flights.find(7, k2.data(), uint32_t(k2.size()), t.store), -1)
        << "equal hashes, different keys: different flights";
    int32_t f2 = flights.claim(7, key_block(t, k2), uint32_t(k2.size()), 101, 1, 1, 0);
    EXPECT_NE(f1, f2);
    EXPECT_EQ(flights.find(7, k2.data(), uint32_t(k2.size()), t.store), f2);
}

TEST(Flight, FullTableRefusesClaims) {
    TestStore t(1 << 20);
    AlignedBuffer mem(FlightTable::shared_size(2));
    FlightTable flights = FlightTable::initialize(mem.get(), 2);
    EXPECT_GE(flights.claim(1, key_block(t, "a"), 1, 1, 1, 1, 0), 0);
    EXPECT_GE(flights.claim(2, key_block(t, "b"), 1, 1, 1, 1, 0), 0);
    EXPECT_EQ(flights.claim(3, key_block(t, "c"), 1, 1, 1, 1, 0), -1);
}

TEST(Flight, LastParticipantFreesTheSlot) {
    TestStore t(1 << 20);
    AlignedBuffer mem(FlightTable::shared_size(2));
    FlightTable flights = FlightTable::initialize(mem.get(), 2);
    std::string k = "k";
    uint64_t kb = key_block(t, k);
    int32_t f = flights.claim(5, kb, 1, 1, 1, 1, 0);
    uint32_t incarnation = flights.slot(f).incarnation;
    flights.join(f);
    flights.join(f);
    EXPECT_EQ(flights.slot(f).waiters, 2u);
    uint64_t block = 0, entry = 0;
    EXPECT_FALSE(flights.leave(f, false, &block, &entry)) << "the leader leaves first";
    EXPECT_FALSE(flights.leave(f, true, &block, &entry));
    EXPECT_TRUE(flights.leave(f, true, &block, &entry));
    EXPECT_EQ(block, kb);
    EXPECT_EQ(flights.slot(f).state, FlightState::Free);
    int32_t again = flights.claim(6, kb, 1, 1, 1, 1, 0);
    EXPECT_EQ(again, f);
    EXPECT_NE(flights.slot(again).incarnation, incarnation) << "reuse is visible to stale participants";
}

TEST(Pins, PinnedEntrySurvivesEvictionAndRemoval) {
    TestStore t(256 * 1024, 64, 8);
    std::string payload(4000, 'p');
    uint64_t handle = 0;
    ASSERT_EQ(t.store.insert(parts(1, "pinned", "the result"), ~uint64_t(0), &handle), InsertStatus::Stored);
    for (int i = 0; i < 300; i++)
        t.store.insert(parts(uint64_t(i) + 100, "filler" + std::to_string(i), payload), ~uint64_t(0));
    EXPECT_GT(t.store.info().evictions, 0u);
    CopySink sink;
    ASSERT_EQ(t.store.read_pinned(handle, sink), LookupStatus::Hit) << "eviction skipped the pinned entry";
    EXPECT_EQ(sink.payload, "the result");

    uint64_t used_before = t.store.info().used_bytes;
    t.store.remove_all();
    ASSERT_EQ(t.store.read_pinned(handle, sink), LookupStatus::Hit) << "unlinked, not freed";
    EXPECT_EQ(t.store.info().entries, 0u);
    EXPECT_LT(t.store.info().used_bytes, used_before);
    uint64_t used_pinned = t.store.info().used_bytes;
    t.store.unpin(handle);
    EXPECT_LT(t.store.info().used_bytes, used_pinned) << "the last unpin frees it";
}

TEST(Pins, ReplacingAPinnedEntryKeepsTheOldOneReadable) {
    TestStore t(1 << 20);
    uint64_t handle = 0;
    t.store.insert(parts(9, "k", "old"), ~uint64_t(0), &handle);
    t.store.insert(parts(9, "k", "new"), ~uint64_t(0));
    CopySink sink;
    ASSERT_EQ(t.store.read_pinned(handle, sink), LookupStatus::Hit);
    EXPECT_EQ(sink.payload, "old");
    t.store.unpin(handle);
    uint64_t free_now = t.store.info().free_bytes;
    t.store.remove_all();
    EXPECT_GT(t.store.info().free_bytes, free_now);
    EXPECT_EQ(t.store.info().entries, 0u);
}

TEST(Pins, LookupCanPin) {
    TestStore t(1 << 20);
    t.store.insert(parts(3, "k", "v"), ~uint64_t(0));
    CopySink sink;
    uint64_t handle = 0;
    ASSERT_EQ(t.store.lookup(3, "k", 1, {}, sink, &handle), LookupStatus::Hit);
    ASSERT_NE(handle, 0u);
    t.store.remove_all();
    ASSERT_EQ(t.store.read_pinned(handle, sink), LookupStatus::Hit);
    t.store.unpin(handle);
}
