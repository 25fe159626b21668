#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "flight.hpp"
#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::AlignedBuffer;
using pgmemo::testing::CopySink;
using pgmemo::testing::parts;
using pgmemo::testing::TestStore;

namespace {

uint64_t key_block(TestStore &t, const std::string &key) {
    uint64_t b = t.store.allocate_block(key.size());
    std::memcpy(t.store.block(b), key.data(), key.size());
    return b;
}

int32_t find(const FlightTable &flights, const TestStore &t, uint64_t hash, const std::string &key) {
    return flights.find(hash, key.data(), uint32_t(key.size()), t.store);
}

int32_t claim(FlightTable &flights, TestStore &t, uint64_t hash, const std::string &key) {
    return flights.claim(hash, key_block(t, key), uint32_t(key.size()), 1, 1, 1, 0);
}

// Leaves once as the leader, releasing what the last one out must release.
bool leave(FlightTable &flights, TestStore &t, int32_t i, bool was_waiter = false) {
    FlightLeftovers left;
    if (!flights.leave(i, was_waiter, &left)) return false;
    if (left.key_block) t.store.release_block(left.key_block);
    if (left.error_block) t.store.release_block(left.error_block);
    return true;
}

struct Table {
    explicit Table(uint32_t n)
        : mem(FlightTable::shared_size(n)), flights(FlightTable::initialize(mem.get(), n)) {}
    AlignedBuffer mem;
    FlightTable flights;
};


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
    FlightLeftovers left;
    EXPECT_FALSE(flights.leave(f, false, &left)) << "the leader leaves first";
    EXPECT_FALSE(flights.leave(f, true, &left));
    EXPECT_TRUE(flights.leave(f, true, &left));
    EXPECT_EQ(left.key_block, kb);
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

TEST(FlightIndex, SlotsAreSmall) {
    EXPECT_LE(sizeof(FlightSlot), 96u);
    // Header, bucket heads and slots: the table costs about 100 bytes a slot.
    EXPECT_LE(FlightTable::shared_size(1024), 1024 * (sizeof(FlightSlot) + 8) + 64);
}

TEST(FlightIndex, CollidingHashesShareAChainAndLeaveInAnyOrder) {
    TestStore t(1 << 20);
    Table tb(16);
    FlightTable &flights = tb.flights;
    std::vector<std::string> keys = {"a", "bb", "ccc", "dddd", "eeeee"};
    std::vector<int32_t> slot;
    for (auto &k : keys) {
        slot.push_back(claim(flights, t, 42, k));  // every key the same hash
        ASSERT_GE(slot.back(), 0);
    }
    for (size_t i = 0; i < keys.size(); i++) EXPECT_EQ(find(flights, t, 42, keys[i]), slot[i]);
    EXPECT_EQ(find(flights, t, 42, "zz"), -1) << "same hash and length as none of them";
    EXPECT_EQ(find(flights, t, 42, "cc"), -1) << "a prefix is a different key";
    EXPECT_EQ(find(flights, t, 43, "ccc"), -1) << "the same bytes under another hash: never looked at";

    // Leave from the middle, the head, and the tail of the chain.
    for (size_t gone : {size_t(2), size_t(4), size_t(0)}) {
        ASSERT_TRUE(leave(flights, t, slot[gone]));
        EXPECT_EQ(find(flights, t, 42, keys[gone]), -1);
        slot[gone] = -1;
        for (size_t i = 0; i < keys.size(); i++) {
            if (slot[i] < 0) continue;
            EXPECT_EQ(find(flights, t, 42, keys[i]), slot[i]) << keys[i] << " after " << gone;
        }
    }
    EXPECT_EQ(flights.in_use(), 2u);
}

TEST(FlightIndex, FindSkipsSettledFlightsButFindsAbandonedOnes) {
    TestStore t(1 << 20);
    Table tb(4);
    FlightTable &flights = tb.flights;
    int32_t f = claim(flights, t, 9, "key");
    flights.join(f);
    flights.slot(f).state = FlightState::Abandoned;
    EXPECT_EQ(find(flights, t, 9, "key"), f) << "a waiter takes an abandoned flight over";
    flights.slot(f).state = FlightState::Running;
    EXPECT_EQ(flights.publish(f, FlightState::Done, 0, 0, 0), 0u);
    EXPECT_EQ(find(flights, t, 9, "key"), -1) << "a settled flight takes no new waiters";
    int32_t g = claim(flights, t, 9, "key");
    ASSERT_GE(g, 0);
    EXPECT_NE(g, f) << "the settled slot is still held by its waiter";
    EXPECT_EQ(find(flights, t, 9, "key"), g);
    EXPECT_FALSE(leave(flights, t, f)) << "the waiter still holds it";
    EXPECT_TRUE(leave(flights, t, f, true));
    EXPECT_EQ(find(flights, t, 9, "key"), g) << "unlinking the old flight keeps the new one";
    EXPECT_TRUE(leave(flights, t, g));
    EXPECT_EQ(find(flights, t, 9, "key"), -1) << "find after the last leave";
    EXPECT_EQ(flights.in_use(), 0u);
}

TEST(FlightIndex, FullTableReturnsMinusOneUntilASlotIsFreed) {
    TestStore t(1 << 20);
    Table tb(3);
    FlightTable &flights = tb.flights;
    std::vector<int32_t> got;
    for (int i = 0; i < 3; i++) got.push_back(claim(flights, t, uint64_t(i) * 7, "k" + std::to_string(i)));
    for (int32_t g : got) EXPECT_GE(g, 0);
    EXPECT_TRUE(flights.full());
    uint64_t kb = key_block(t, "k3");
    EXPECT_EQ(flights.claim(21, kb, 2, 1, 1, 1, 0), -1);
    t.store.release_block(kb);
    EXPECT_EQ(find(flights, t, 21, "k3"), -1) << "a refused claim leaves no trace";
    ASSERT_TRUE(leave(flights, t, got[1]));
    EXPECT_FALSE(flights.full());
    EXPECT_EQ(claim(flights, t, 21, "k3"), got[1]) << "the freed slot is the one reused";
    EXPECT_TRUE(flights.full());
}

TEST(FlightIndex, AFreedSlotInAChainIsReusedAndTheChainStaysWhole) {
    // With chaining there are no tombstones: a slot freed in the middle of
    // a chain is unlinked, then reused on whatever chain its next key needs.
    TestStore t(1 << 20);
    Table tb(4);
    FlightTable &flights = tb.flights;
    int32_t a = claim(flights, t, 5, "a"), b = claim(flights, t, 5, "b"), c = claim(flights, t, 5, "c");
    uint32_t incarnation = flights.slot(b).incarnation;
    ASSERT_TRUE(leave(flights, t, b));
    int32_t d = claim(flights, t, 1000003, "d");  // another chain
    EXPECT_EQ(d, b);
    EXPECT_NE(flights.slot(d).incarnation, incarnation);
    int32_t e = claim(flights, t, 5, "b");  // the old key again, on the old chain
    ASSERT_GE(e, 0);
    EXPECT_EQ(find(flights, t, 5, "a"), a);
    EXPECT_EQ(find(flights, t, 5, "b"), e);
    EXPECT_EQ(find(flights, t, 5, "c"), c);
    EXPECT_EQ(find(flights, t, 1000003, "d"), d);
    EXPECT_EQ(find(flights, t, 5, "d"), -1);
    EXPECT_TRUE(flights.full());
}

TEST(FlightIndex, ChurnNeverLosesASlot) {
    // Random claims, joins and leaves against a model. Five distinct hashes,
    // all of which fold to the same bucket: one long chain, on which equal
    // hashes and different hashes meet all the time.
    TestStore t(4 << 20);
    constexpr uint32_t kSlots = 64;
    Table tb(kSlots);
    FlightTable &flights = tb.flights;
    struct Live {
        int32_t slot;
        uint32_t waiters;
    };
    std::map<std::string, Live> live;
    std::mt19937 rng(1234);
    auto hash_of = [](const std::string &k) { return uint64_t(k.size() % 5) * 0x100000001ULL; };
    uint64_t claims = 0, refusals = 0;

    for (int step = 0; step < 200000; step++) {
        std::string key = "key-" + std::to_string(rng() % 200);
        uint64_t h = hash_of(key);
        int32_t found = find(flights, t, h, key);
        auto it = live.find(key);
        ASSERT_EQ(found, it == live.end() ? -1 : it->second.slot) << "step " << step;
        switch (rng() % 3) {
            case 0:  // a miss: join or lead
                if (found >= 0) {
                    flights.join(found);
                    it->second.waiters++;
                } else {
                    int32_t s = claim(flights, t, h, key);
                    if (live.size() == kSlots) {
                        ASSERT_EQ(s, -1);
                        refusals++;
                    } else {
                        ASSERT_GE(s, 0);
                        live[key] = Live{s, 0};
                        claims++;
                    }
                }
                break;
            default:  // a participant leaves (waiters first, then the leader)
                if (found >= 0) {
                    bool waiter = it->second.waiters > 0;
                    bool last = leave(flights, t, found, waiter);
                    if (waiter) it->second.waiters--;
                    ASSERT_EQ(last, !waiter);
                    if (last) live.erase(it);
                }
        }
        ASSERT_EQ(flights.in_use(), live.size());
    }
    EXPECT_GT(claims, 10000u);
    EXPECT_GT(refusals, 0u) << "the table was full at times";

    // Drain: every slot comes back.
    for (auto &[key, l] : live) {
        for (uint32_t w = 0; w < l.waiters; w++) ASSERT_FALSE(leave(flights, t, l.slot, true));
        ASSERT_TRUE(leave(flights, t, l.slot));
    }
    EXPECT_EQ(flights.in_use(), 0u);
    for (uint32_t i = 0; i < kSlots; i++) EXPECT_GE(claim(flights, t, 5, "k" + std::to_string(i)), 0);
    EXPECT_EQ(claim(flights, t, 5, "one too many"), -1);
}

TEST(FlightIndex, FailedFlightOwnsItsMessageUntilTheLastLeave) {
    TestStore t(1 << 20);
    Table tb(2);
    FlightTable &flights = tb.flights;
    int32_t f = claim(flights, t, 3, "k");
    flights.join(f);
    EXPECT_STREQ(flights.error_message(f, t.store), "");
    uint64_t msg = key_block(t, std::string("division by zero") + '\0');
    EXPECT_EQ(flights.publish(f, FlightState::Failed, 0, 0x2000816, msg), 0u);
    EXPECT_EQ(flights.slot(f).state, FlightState::Failed);
    EXPECT_EQ(flights.slot(f).error_code, 0x2000816);
    EXPECT_STREQ(flights.error_message(f, t.store), "division by zero");
    FlightLeftovers left;
    EXPECT_FALSE(flights.leave(f, false, &left));
    EXPECT_EQ(left.error_block, 0u) << "only the last one out gets the blocks";
    EXPECT_STREQ(flights.error_message(f, t.store), "division by zero") << "the waiter still reads it";
    EXPECT_TRUE(flights.leave(f, true, &left));
    EXPECT_EQ(left.error_block, msg);
    t.store.release_block(left.key_block);
    t.store.release_block(left.error_block);
    int32_t g = claim(flights, t, 3, "k");
    EXPECT_STREQ(flights.error_message(g, t.store), "") << "a reused slot has no message";
    EXPECT_EQ(flights.slot(g).error_code, 0);
}

TEST(FlightIndex, ChurnReleasesEveryArenaBlock) {
    TestStore t(1 << 20);
    Table tb(8);
    FlightTable &flights = tb.flights;
    uint64_t used = t.store.info().used_bytes;
    for (int round = 0; round < 1000; round++) {
        std::string key = "round " + std::to_string(round);
        int32_t f = claim(flights, t, uint64_t(round % 3), key);
        ASSERT_GE(f, 0);
        if (round % 2) {
            uint64_t msg = key_block(t, std::string("failed") + '\0');
            flights.publish(f, FlightState::Failed, 0, 1, msg);
        }
        ASSERT_TRUE(leave(flights, t, f));
    }
    EXPECT_EQ(t.store.info().used_bytes, used);
    EXPECT_EQ(flights.in_use(), 0u);
}

TEST(FlightIndex, LargestTableWorks) {
    TestStore t(16 << 20);
    Table tb(kMaxFlights);
    FlightTable &flights = tb.flights;
    EXPECT_EQ(flights.size(), kMaxFlights);
    std::vector<int32_t> got;
    for (uint32_t i = 0; i < kMaxFlights; i++) {
        got.push_back(flights.claim(uint64_t(i) * 0x9e3779b97f4a7c15ULL, 0, 0, 1, 1, 1, 0));
        ASSERT_GE(got.back(), 0) << i;
    }
    EXPECT_TRUE(flights.full());
    for (int32_t g : got) {
        FlightLeftovers left;
        ASSERT_TRUE(flights.leave(g, false, &left));
    }
    EXPECT_EQ(flights.in_use(), 0u);
}
