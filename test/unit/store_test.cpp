#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::CopySink;
using pgmemo::testing::parts;
using pgmemo::testing::TestStore;

namespace {


LookupStatus lookup(TestStore &t, uint64_t hash, const std::string &key, std::string *payload = nullptr,
                    SlotSetView own = {}) {
    CopySink sink;
    LookupStatus s = t.store.lookup(hash, key.data(), uint32_t(key.size()), own, sink);
    if (payload) *payload = sink.payload;
    return s;
}

constexpr uint64_t kNoLimit = ~uint64_t(0);

// Stores value under (hash, key) with one dependency, relation relid's
// generation slot at its current value; returns the slot.
uint32_t store_watching(TestStore &t, uint32_t relid, uint64_t hash, const char *key, const char *value = "v") {
    uint32_t slot = Generations::slot_of(1, GenerationKind::Relation, relid);
    std::vector<DepStamp> deps = {{slot, 0, t.gens.read(slot)}};
    t.store.insert(parts(hash, key, value, deps), kNoLimit);
    return slot;
}

}  // namespace

TEST(Store, EqualHashesDifferentKeysNeverConfuse) {
    TestStore t(1 << 20);
    ASSERT_TRUE(t.initialized);
    ASSERT_EQ(t.store.insert(parts(42, "scope=1", "rows for scope 1"), kNoLimit), InsertStatus::Stored);
    ASSERT_EQ(t.store.insert(parts(42, "scope=2", "rows for scope 2"), kNoLimit), InsertStatus::Stored);
    std::string got;
    EXPECT_EQ(lookup(t, 42, "scope=1", &got), LookupStatus::Hit);
    EXPECT_EQ(got, "rows for scope 1");
    EXPECT_EQ(lookup(t, 42, "scope=2", &got), LookupStatus::Hit);
    EXPECT_EQ(got, "rows for scope 2");
    EXPECT_EQ(lookup(t, 42, "scope=3"), LookupStatus::Miss);
    EXPECT_EQ(lookup(t, 43, "scope=1"), LookupStatus::Miss) << "hash is part of the identity";
}

TEST(Store, SameKeyReplaces) {
    TestStore t(1 << 20);
    t.store.insert(parts(7, "k", "old"), kNoLimit);
    t.store.insert(parts(7, "k", "new"), kNoLimit);
    std::string got;
    EXPECT_EQ(lookup(t, 7, "k", &got), LookupStatus::Hit);
    EXPECT_EQ(got, "new");
    EXPECT_EQ(t.store.info().entries, 1u);
    EXPECT_EQ(t.stats.get(1, kEntries), 1u);
}

TEST(Store, GenerationBumpMakesEntryStale) {
    TestStore t(1 << 20);
    uint32_t slot = store_watching(t, 16384, 9, "q");
    EXPECT_EQ(lookup(t, 9, "q"), LookupStatus::Hit);
    t.gens.bump(slot);
    EXPECT_EQ(lookup(t, 9, "q"), LookupStatus::Stale);
    EXPECT_EQ(lookup(t, 9, "q"), LookupStatus::Stale);
    EXPECT_EQ(t.stats.get(1, kInvalidations), 1u) << "an invalidated entry is counted once";
    EXPECT_EQ(t.store.remove_stale(), 1u);
    EXPECT_EQ(lookup(t, 9, "q"), LookupStatus::Miss);
}

// Between a commit becoming visible and its bump, the entry must not be
// served: the committing transaction announced the slot before that.
TEST(Store, CommitInProgressHidesTheEntry) {
    TestStore t(1 << 20);
    uint32_t slot = store_watching(t, 16385, 7, "q");
    EXPECT_EQ(lookup(t, 7, "q"), LookupStatus::Hit);
    t.gens.begin_commit(slot);
    EXPECT_EQ(lookup(t, 7, "q"), LookupStatus::Miss) << "announced, not yet bumped";
    t.gens.bump(slot);
    t.gens.end_commit(slot);
    EXPECT_FALSE(t.gens.commit_pending(slot));
    EXPECT_EQ(lookup(t, 7, "q"), LookupStatus::Stale) << "bumped: stale for good";

    // A commit that aborts after announcing: entries stored meanwhile
    // become current again once it is withdrawn.
    store_watching(t, 16385, 8, "r", "w");
    t.gens.begin_commit(slot);
    EXPECT_EQ(lookup(t, 8, "r"), LookupStatus::Miss);
    t.gens.end_commit(slot);
    EXPECT_EQ(lookup(t, 8, "r"), LookupStatus::Hit);
}

// A commit in progress hides an entry without making it stale: it may still
// abort. So it is neither counted as an invalidation nor removed as stale.
TEST(Store, CommitInProgressIsNotStale) {
    TestStore t(1 << 20);
    uint32_t slot = store_watching(t, 16386, 6, "q");
    t.gens.begin_commit(slot);
    EXPECT_EQ(lookup(t, 6, "q"), LookupStatus::Miss);
    EXPECT_EQ(t.store.remove_stale(), 0u);
    EXPECT_EQ(t.stats.get(1, kInvalidations), 0u);
    t.gens.end_commit(slot);  // aborted
    EXPECT_EQ(lookup(t, 6, "q"), LookupStatus::Hit);
}

TEST(Store, OwnWritesBypassTheEntry) {
    TestStore t(1 << 20);
    uint32_t slot = store_watching(t, 500, 3, "q");
    uint32_t written[1] = {slot};
    SlotSetView own{written, 1, SlotSetView::filter_bit(slot)};
    EXPECT_EQ(lookup(t, 3, "q", nullptr, own), LookupStatus::OwnWrites);
    uint32_t other[1] = {slot + 1};
    SlotSetView unrelated{other, 1, SlotSetView::filter_bit(slot + 1)};
    EXPECT_EQ(lookup(t, 3, "q", nullptr, unrelated), LookupStatus::Hit);
}

TEST(Store, OversizeResultRefused) {
    TestStore t(1 << 20);
    std::string big(600 * 1024, 'x');
    EXPECT_EQ(t.store.insert(parts(1, "big", big), kNoLimit), InsertStatus::TooLarge)
        << "more than half the arena is never stored";
    std::string medium(10 * 1024, 'x');
    EXPECT_EQ(t.store.insert(parts(2, "medium", medium), 4096), InsertStatus::TooLarge)
        << "the caller's max entry size applies";
    EXPECT_EQ(lookup(t, 2, "medium"), LookupStatus::Miss);
    EXPECT_EQ(t.store.info().entries, 0u);
}

TEST(Store, FullArenaEvictsAndStaysBounded) {
    const uint64_t arena = 256 * 1024;
    TestStore t(arena, 64, 8);
    std::string payload(4000, 'p');
    const int n = 500;  // ~2 MB offered to a 256 kB arena
    for (int i = 0; i < n; i++) {
        std::string key = "key" + std::to_string(i);
        ASSERT_EQ(t.store.insert(parts(uint64_t(i) * 2654435761u, key, payload), kNoLimit),
                  InsertStatus::Stored)
            << "insert " << i;
        StoreInfo info = t.store.info();
        ASSERT_LE(info.used_bytes, arena);
    }
    StoreInfo info = t.store.info();
    EXPECT_GT(info.evictions, 0u);
    EXPECT_LT(info.entries, uint64_t(n));
    EXPECT_EQ(info.entries + info.evictions, uint64_t(n));
    EXPECT_EQ(t.stats.get(1, kEvictions), info.evictions);
    // The newest entry survives: eviction takes unreferenced entries first.
    std::string last = "key" + std::to_string(n - 1);
    EXPECT_EQ(lookup(t, uint64_t(n - 1) * 2654435761u, last), LookupStatus::Hit);
}

TEST(Store, RemoveAllReturnsEveryByte) {
    TestStore t(1 << 20);
    uint64_t free_before = t.store.info().free_bytes;
    for (int i = 0; i < 100; i++)
        t.store.insert(parts(uint64_t(i), "k" + std::to_string(i), std::string(100, 'v')), kNoLimit);
    EXPECT_EQ(t.store.info().entries, 100u);
    EXPECT_EQ(t.store.remove_all(), 100u);
    EXPECT_EQ(t.store.info().entries, 0u);
    EXPECT_EQ(t.store.info().free_bytes, free_before);
    EXPECT_EQ(t.stats.get(1, kBytes), 0u);
}

TEST(Store, ConcurrentHitsAndInserts) {
    TestStore t(4 << 20, 1024, 16);
    for (int i = 0; i < 64; i++)
        t.store.insert(parts(uint64_t(i), "k" + std::to_string(i), "v" + std::to_string(i)), kNoLimit);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int th = 0; th < 4; th++) {
        threads.emplace_back([&, th] {
            for (int round = 0; round < 2000; round++) {
                int i = (round * 7 + th) % 64;
                std::string got;
                if (th == 0 && round % 10 == 0)
                    t.store.insert(parts(uint64_t(i), "k" + std::to_string(i), "v" + std::to_string(i)),
                                   kNoLimit);
                else if (lookup(t, uint64_t(i), "k" + std::to_string(i), &got) == LookupStatus::Hit &&
                         got != "v" + std::to_string(i))
                    wrong++;
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(t.store.info().entries, 64u);
}
