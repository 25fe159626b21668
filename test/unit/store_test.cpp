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
    t.gens.bump(slot, 0);
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
    t.gens.bump(slot, 0);
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
    EXPECT_EQ(t.stats.get(1, kRecomputeEvicted), info.evictions) << "a reason for each entry computed again";
    EXPECT_EQ(t.stats.get(1, kInvalidations), 0u);
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

TEST(Store, RemoveMatchingTakesOnlyWhatMatches) {
    TestStore t(1 << 20);
    for (int i = 0; i < 50; i++)
        t.store.insert(parts(uint64_t(i), (i % 2 ? "odd" : "even") + std::to_string(i), "v"), kNoLimit);
    auto starts_with_odd = [](const char *key, uint32_t len, void *) { return len >= 3 && memcmp(key, "odd", 3) == 0; };
    EXPECT_EQ(t.store.remove_matching(starts_with_odd, nullptr), 25u);
    EXPECT_EQ(t.store.info().entries, 25u);
    EXPECT_EQ(lookup(t, 1, "odd1"), LookupStatus::Miss);
    EXPECT_EQ(lookup(t, 2, "even2"), LookupStatus::Hit);
}

// A remembered error outlived: removed by its stamp, so that a newer entry
// under the key stays, and counted as neither eviction nor invalidation.
TEST(Store, RemoveStampedTakesOnlyThatEntry) {
    TestStore t(1 << 20);
    EntryParts old_error = parts(5, "k", "error");
    old_error.stamped_at = 100;
    t.store.insert(old_error, kNoLimit);
    EXPECT_FALSE(t.store.remove_stamped(5, "k", 1, 99)) << "another stamp: a newer entry";
    EXPECT_FALSE(t.store.remove_stamped(5, "j", 1, 100)) << "another key";
    EXPECT_EQ(lookup(t, 5, "k"), LookupStatus::Hit);
    EXPECT_TRUE(t.store.remove_stamped(5, "k", 1, 100));
    EXPECT_FALSE(t.store.remove_stamped(5, "k", 1, 100)) << "removed once";
    EXPECT_EQ(lookup(t, 5, "k"), LookupStatus::Miss);
    EXPECT_EQ(t.store.info().entries, 0u);
    EXPECT_EQ(t.stats.get(1, kEntries), 0u);
    EXPECT_EQ(t.stats.get(1, kBytes), 0u);
    EXPECT_EQ(t.stats.get(1, kInvalidations) + t.stats.get(1, kEvictions), 0u);
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

// ---- older answers: stale entries a caller may accept within a bound --------

namespace {

// An entry over one table: its Relation counter (rows, kDataStamp) and its
// Definition counter (DDL), stamped at the given time.
struct TableEntry {
    uint32_t rows, definition;
};

TableEntry store_table_entry(TestStore &t, uint32_t relid, uint64_t hash, const char *key, Micros stamped_at) {
    TableEntry te{Generations::slot_of(1, GenerationKind::Relation, relid),
                  Generations::slot_of(1, GenerationKind::Definition, relid)};
    std::vector<DepStamp> deps = {{te.rows, kDataStamp, t.gens.read(te.rows)},
                                  {te.definition, 0, t.gens.read(te.definition)}};
    std::string k(key), v("v");
    EntryParts p = parts(hash, k, v, deps);
    p.stamped_at = stamped_at;
    t.store.insert(p, kNoLimit);
    return te;
}

LookupStatus lookup_stale(TestStore &t, uint64_t hash, const std::string &key, StaleInfo *info) {
    CopySink sink;
    sink.want_stale = true;
    LookupStatus s = t.store.lookup(hash, key.data(), uint32_t(key.size()), {}, sink);
    *info = sink.stale;
    return s;
}

}  // namespace

// Hits leave an estimate of their number and the last one's second on the
// entry (memo.entries), one in 16 counted.
TEST(Store, HitsAreEstimatedOnTheEntry) {
    TestStore t(1 << 20);
    t.store.insert(parts(5, "hot", "v"), kNoLimit);
    auto seen = [&](uint64_t *hits, uint32_t *last_hit) {
        t.store.for_each_entry([&](uint64_t, const char *, uint32_t, uint32_t, const EntryView &e) {
            *hits = e.estimated_hits;
            *last_hit = e.last_hit;
        });
    };
    uint64_t hits = 1;
    uint32_t last_hit = 1;
    seen(&hits, &last_hit);
    EXPECT_EQ(hits, 0u);
    EXPECT_EQ(last_hit, 0u) << "no hit yet";
    for (int i = 0; i < 3200; i++) ASSERT_EQ(lookup(t, 5, "hot"), LookupStatus::Hit);
    seen(&hits, &last_hit);
    EXPECT_GT(hits, 1600u) << "3,200 hits, about 200 sampled: 5 standard deviations off at these bounds";
    EXPECT_LT(hits, 4800u);
    EXPECT_EQ(hits % 16, 0u);
    EXPECT_GT(last_hit, 1'700'000'000u) << "a second of Unix time";
}

// Invalidations by what moved: rows (a write), or anything else (DDL).
TEST(Store, InvalidationsCountWhatMoved) {
    TestStore t(1 << 20);
    TableEntry by_rows = store_table_entry(t, 701, 21, "rows", 1'000'000);
    TableEntry by_ddl = store_table_entry(t, 702, 22, "ddl", 1'000'000);
    t.gens.bump(by_rows.rows, 2'000'000);
    t.gens.bump(by_ddl.rows, 2'000'000);
    t.gens.bump(by_ddl.definition, 2'000'000);
    EXPECT_EQ(lookup(t, 21, "rows"), LookupStatus::Stale);
    EXPECT_EQ(lookup(t, 22, "ddl"), LookupStatus::Stale);
    EXPECT_EQ(t.stats.get(1, kInvalidations), 2u);
    EXPECT_EQ(t.stats.get(1, kInvalidatedByWrites), 1u);
    EXPECT_EQ(t.stats.get(1, kInvalidatedByCatalogs), 1u) << "a moved Definition counter is DDL, rows or not";
}

// A row write leaves an older answer to the same question: offered, with
// the moment its first missed commit became visible at the earliest.
TEST(Store, RowWritesLeaveAnOlderAnswer) {
    TestStore t(1 << 20);
    TableEntry te = store_table_entry(t, 700, 11, "q", 1'000'000);
    StaleInfo info;
    t.gens.bump(te.rows, 5'000'000);
    ASSERT_EQ(lookup_stale(t, 11, "q", &info), LookupStatus::StaleCopied);
    EXPECT_TRUE(info.data_only);
    EXPECT_FALSE(info.kept_by_deltas);
    EXPECT_EQ(info.invalidated_after, 5'000'000) << "one bump since the stamp: its own time";
    EXPECT_EQ(t.stats.get(1, kInvalidations), 1u) << "an older answer is still an invalidated entry";

    // A second bump hides the first one's time: the stamp's time is the bound.
    t.gens.bump(te.rows, 9'000'000);
    ASSERT_EQ(lookup_stale(t, 11, "q", &info), LookupStatus::StaleCopied);
    EXPECT_EQ(info.invalidated_after, 1'000'000);

    // Without a stale sink, the same entry is just stale.
    EXPECT_EQ(lookup(t, 11, "q"), LookupStatus::Stale);
}

// The first bump's time is never later than the stamp's: a commit that
// began before the entry was computed but became visible after its snapshot
// is still bounded by the stamp time.
TEST(Store, InvalidationTimeIsNeverBeforeTheStamp) {
    TestStore t(1 << 20);
    TableEntry te = store_table_entry(t, 701, 12, "q", 4'000'000);
    t.gens.bump(te.rows, 3'000'000);
    StaleInfo info;
    ASSERT_EQ(lookup_stale(t, 12, "q", &info), LookupStatus::StaleCopied);
    EXPECT_EQ(info.invalidated_after, 4'000'000);
}

// DDL moves the Definition counter: the entry answers another question now,
// and is not offered. A commit in progress on the rows counts as moved rows,
// at the stamp's time.
TEST(Store, DefinitionChangesAreNotOlderAnswers) {
    TestStore t(1 << 20);
    TableEntry te = store_table_entry(t, 702, 13, "q", 1'000'000);
    t.gens.begin_commit(te.rows);
    StaleInfo info;
    ASSERT_EQ(lookup_stale(t, 13, "q", &info), LookupStatus::StaleCopied);
    EXPECT_EQ(info.invalidated_after, 1'000'000);
    t.gens.end_commit(te.rows);  // aborted

    t.gens.bump(te.rows, 2'000'000);
    t.gens.bump(te.definition, 2'000'000);
    EXPECT_EQ(lookup_stale(t, 13, "q", &info), LookupStatus::Stale);

    // A DDL commit in progress is not offered either.
    TableEntry other = store_table_entry(t, 703, 14, "r", 1'000'000);
    t.gens.begin_commit(other.definition);
    EXPECT_EQ(lookup_stale(t, 14, "r", &info), LookupStatus::Miss);
    t.gens.end_commit(other.definition);
}

// A carried entry's stamps and stamp time move together.
TEST(Store, RevisedStampsCarryTheirTime) {
    TestStore t(1 << 20);
    TableEntry te = store_table_entry(t, 704, 15, "q", 1'000'000);
    DepStamp from[2] = {{te.rows, kDataStamp, t.gens.read(te.rows)}, {te.definition, 0, t.gens.read(te.definition)}};
    t.gens.bump(te.rows, 2'000'000);
    DepStamp to[2] = {from[0], from[1]};
    to[0].generation = t.gens.read(te.rows);
    ASSERT_TRUE(t.store.revise_stamps(15, "q", 1, from, 2, to, 3'000'000));
    CopySink sink;
    ASSERT_EQ(t.store.lookup(15, "q", 1, {}, sink), LookupStatus::Hit);
    EXPECT_EQ(sink.stamped_at, 3'000'000);
}

namespace {

LookupStatus lookup_as_of(TestStore &t, uint64_t hash, const std::string &key, uint64_t print,
                          std::string *payload = nullptr, SlotSetView own = {}) {
    CopySink sink;
    sink.as_of_print = print;
    LookupStatus s = t.store.lookup(hash, key.data(), uint32_t(key.size()), own, sink);
    if (payload) *payload = sink.payload;
    return s;
}

// An entry over relation relid, computed as of the state print names.
uint32_t store_as_of(TestStore &t, uint32_t relid, uint64_t hash, const char *key, uint64_t print) {
    uint32_t slot = Generations::slot_of(1, GenerationKind::Relation, relid);
    std::vector<DepStamp> deps = {{slot, kDataStamp, t.gens.read(slot)}};
    std::string k(key), v("as of " + std::to_string(print));
    EntryParts p = parts(hash, k, v, deps);
    p.snapshot_print = print;
    t.store.insert(p, kNoLimit);
    return slot;
}

// The same, pinned as a flight's leader stores it (for_waiters: where no
// lookup finds it); returns its handle.
uint64_t pin_as_of(TestStore &t, uint32_t relid, uint64_t hash, const char *key, uint64_t print, bool for_waiters) {
    uint32_t slot = Generations::slot_of(1, GenerationKind::Relation, relid);
    std::vector<DepStamp> deps = {{slot, kDataStamp, t.gens.read(slot)}};
    std::string k(key), v("as of " + std::to_string(print));
    EntryParts p = parts(hash, k, v, deps);
    p.snapshot_print = print;
    uint64_t handle = 0;
    InsertStatus status = for_waiters ? t.store.insert_for_waiters(p, kNoLimit, handle)
                                      : t.store.insert(p, kNoLimit, &handle);
    EXPECT_EQ(status, InsertStatus::Stored);
    return handle;
}

}  // namespace

// An entry stale for the present is still the answer of a caller whose
// snapshot sees the state it was computed as of, and of no other.
TEST(Store, StaleEntryAnswersTheSnapshotItWasComputedAsOf) {
    TestStore t(1 << 20);
    uint32_t slot = store_as_of(t, 800, 21, "q", 1000);
    t.gens.bump(slot, 0);
    std::string got;
    EXPECT_EQ(lookup_as_of(t, 21, "q", 1000, &got), LookupStatus::AsOfSnapshot);
    EXPECT_EQ(got, "as of 1000");
    EXPECT_EQ(lookup_as_of(t, 21, "q", 1001), LookupStatus::Stale) << "another state";
    EXPECT_EQ(lookup(t, 21, "q"), LookupStatus::Stale) << "a caller as of now";
    t.gens.begin_commit(slot);
    EXPECT_EQ(lookup_as_of(t, 21, "q", 1000), LookupStatus::AsOfSnapshot) << "a commit in progress is not in it";
    t.gens.end_commit(slot);
    uint32_t written[1] = {slot};
    SlotSetView own{written, 1, SlotSetView::filter_bit(slot)};
    EXPECT_EQ(lookup_as_of(t, 21, "q", 1000, nullptr, own), LookupStatus::Stale)
        << "a transaction that wrote a dependency sees its own writes";
}

// An entry whose definition counter moved is not given by its print.
TEST(Store, DefinitionChangeIsNotAnsweredByPrint) {
    TestStore t(1 << 20);
    TableEntry te{Generations::slot_of(1, GenerationKind::Relation, 807),
                  Generations::slot_of(1, GenerationKind::Definition, 807)};
    std::vector<DepStamp> deps = {{te.rows, kDataStamp, t.gens.read(te.rows)},
                                  {te.definition, 0, t.gens.read(te.definition)}};
    std::string k("q"), v("v");
    EntryParts p = parts(28, k, v, deps);
    p.snapshot_print = 1000;
    t.store.insert(p, kNoLimit);
    t.gens.bump(te.rows, 0);
    EXPECT_EQ(lookup_as_of(t, 28, "q", 1000), LookupStatus::AsOfSnapshot) << "rows alone moved";
    t.gens.bump(te.definition, 0);
    EXPECT_EQ(lookup_as_of(t, 28, "q", 1000), LookupStatus::Stale) << "memo.invalidate, DDL";
}

// A current entry is a Hit for every caller, with its print for the caller
// to compare; an entry that names no state matches none.
TEST(Store, CurrentEntryIsAHitWithItsPrint) {
    TestStore t(1 << 20);
    store_as_of(t, 801, 22, "q", 1000);
    CopySink sink;
    sink.as_of_print = 999;
    ASSERT_EQ(t.store.lookup(22, "q", 1, {}, sink), LookupStatus::Hit);
    EXPECT_EQ(sink.snapshot_print, 1000u);
    uint32_t slot = store_as_of(t, 802, 23, "r", 0);
    t.gens.bump(slot, 0);
    EXPECT_EQ(lookup_as_of(t, 23, "r", 0), LookupStatus::Stale);
    EXPECT_EQ(lookup_as_of(t, 23, "r", 1000), LookupStatus::Stale);
}

// Carried forward, an entry's rows are a later state's: it names none.
TEST(Store, RevisedStampsForgetThePrint) {
    TestStore t(1 << 20);
    uint32_t slot = store_as_of(t, 803, 24, "q", 1000);
    DepStamp from[1] = {{slot, kDataStamp, t.gens.read(slot)}};
    t.gens.bump(slot, 0);
    DepStamp to[1] = {{slot, kDataStamp, t.gens.read(slot)}};
    ASSERT_TRUE(t.store.revise_stamps(24, "q", 1, from, 1, to, 1));
    t.gens.bump(slot, 0);
    EXPECT_EQ(lookup_as_of(t, 24, "q", 1000), LookupStatus::Stale);
}

// A flight's pinned entry reads as a lookup would.
TEST(Store, PinnedEntryAnswersTheSnapshotItWasComputedAsOf) {
    TestStore t(1 << 20);
    uint64_t handle = pin_as_of(t, 804, 25, "q", 1000, false);
    t.gens.bump(Generations::slot_of(1, GenerationKind::Relation, 804), 0);
    CopySink as_of, other, now;
    as_of.as_of_print = 1000;
    other.as_of_print = 1001;
    EXPECT_EQ(t.store.read_pinned(handle, as_of), LookupStatus::AsOfSnapshot);
    EXPECT_EQ(as_of.payload, "as of 1000");
    EXPECT_EQ(t.store.read_pinned(handle, other), LookupStatus::Stale);
    EXPECT_EQ(t.store.read_pinned(handle, now), LookupStatus::Stale);
    t.store.unpin(handle);
}

// A leader's answer as of a snapshot that fell behind: only its waiters
// read it, only those as of the same state are given it, no lookup finds
// it (the entry under the key is untouched), and the last unpin frees it.
TEST(Store, EntryForWaitersIsNeverCurrentAndNeverLooked) {
    TestStore t(1 << 20);
    store_as_of(t, 805, 26, "q", 900);
    uint64_t used = t.store.info().used_bytes;
    uint64_t handle = pin_as_of(t, 805, 26, "q", 1000, true);
    CopySink as_of, other, now;
    as_of.as_of_print = 1000;
    other.as_of_print = 900;
    EXPECT_EQ(t.store.read_pinned(handle, as_of), LookupStatus::AsOfSnapshot);
    EXPECT_EQ(as_of.payload, "as of 1000");
    EXPECT_EQ(t.store.read_pinned(handle, other), LookupStatus::Stale);
    EXPECT_EQ(t.store.read_pinned(handle, now), LookupStatus::Stale) << "its stamps are current, it is not";
    std::string got;
    EXPECT_EQ(lookup(t, 26, "q", &got), LookupStatus::Hit);
    EXPECT_EQ(got, "as of 900") << "the entry under the key is the one stored";
    EXPECT_EQ(t.store.info().entries, 1u);
    t.store.unpin(handle);
    EXPECT_EQ(t.store.info().used_bytes, used);
}

TEST(Store, ForEachEntryVisitsEveryEntry) {
    TestStore t(1 << 20);
    for (int i = 0; i < 50; i++) t.store.insert(parts(uint64_t(i) * 7919, "k" + std::to_string(i), "v"), kNoLimit);
    int seen = 0;
    t.store.for_each_entry([&](uint64_t, const char *key, uint32_t key_len, uint32_t, const EntryView &e) {
        seen++;
        EXPECT_EQ(std::string(key, 1), "k");
        EXPECT_GT(key_len, 1u);
        EXPECT_EQ(std::string(e.payload, e.payload_len), "v");
    });
    EXPECT_EQ(seen, 50);
}

// memo.entries reads one bucket at a time: every entry is in exactly one
// bucket, with the bytes memo.stats counts for it.
TEST(Store, BucketsTogetherVisitEveryEntryOnce) {
    TestStore t(1 << 20);
    for (int i = 0; i < 50; i++) t.store.insert(parts(uint64_t(i) * 7919, "k" + std::to_string(i), "v"), kNoLimit);
    int seen = 0;
    uint64_t bytes = 0;
    for (uint32_t b = 0; b < t.store.bucket_count(); b++)
        t.store.for_each_entry_in_bucket(b, [&](uint64_t, const char *, uint32_t, uint32_t, const EntryView &e) {
            seen++;
            bytes += e.bytes;
        });
    EXPECT_EQ(seen, 50);
    EXPECT_EQ(bytes, t.stats.get(1, kBytes));
}

// The state memo.entries shows is what a lookup would make of the entry.
TEST(Store, StateOfAnEntryFollowsItsStamps) {
    TestStore t(1 << 20);
    uint32_t slot = store_watching(t, 16390, 21, "q");
    uint32_t kept_slot = Generations::slot_of(1, GenerationKind::Relation, 16391);
    std::vector<DepStamp> deps = {{kept_slot, kDeltaStamp | kDataStamp, t.gens.read(kept_slot)}};
    t.store.insert(parts(22, "kept", "v", deps), kNoLimit);
    auto state = [&](const std::string &key) {
        EntryState s = EntryState::Stale;
        int found = 0;
        t.store.for_each_entry([&](uint64_t, const char *k, uint32_t len, uint32_t, const EntryView &e) {
            if (std::string(k, len) != key) return;
            s = t.store.state_of(e);
            found++;
        });
        EXPECT_EQ(found, 1) << key;
        return s;
    };
    EXPECT_EQ(state("q"), EntryState::Current);
    t.gens.begin_commit(slot);
    EXPECT_EQ(state("q"), EntryState::Pending);
    t.gens.bump(slot, 0);
    t.gens.end_commit(slot);
    EXPECT_EQ(state("q"), EntryState::Stale);
    EXPECT_EQ(lookup(t, 21, "q"), LookupStatus::Stale) << "the lookup agrees";
    EXPECT_EQ(state("kept"), EntryState::Current);
    t.gens.bump(kept_slot, 0);
    EXPECT_EQ(state("kept"), EntryState::Kept);
}

// A bump's time is kept only for the bump that made the value: a reader
// asking about an older stamp, or racing a newer bump, gets no time.
TEST(Generations, InvalidationTimeBelongsToItsBump) {
    TestStore t(1 << 20);
    uint32_t slot = Generations::slot_of(1, GenerationKind::Relation, 705);
    DepStamp d{slot, kDataStamp, t.gens.read(slot)};
    EXPECT_EQ(t.gens.invalidated_after(d), kUnknownTime) << "not moved";
    t.gens.bump(slot, 7'123'456);
    EXPECT_EQ(t.gens.invalidated_after(d), 7'123'000) << "rounded down to the millisecond";
    t.gens.bump(slot, 8'000'000);
    EXPECT_EQ(t.gens.invalidated_after(d), kUnknownTime);
    d.generation += 1;
    EXPECT_EQ(t.gens.invalidated_after(d), 8'000'000);
    t.gens.restore(slot, 100);
    d.generation = 99;
    EXPECT_EQ(t.gens.invalidated_after(d), kUnknownTime) << "restored counters have no times";
}

// A commit in progress on a moved counter may already be visible without
// its bump, and may have begun before the bump that was published: the
// bump's time is not trusted then, the stamp's time is.
TEST(Store, BumpTimeIsNotTrustedWhileAnotherCommitIsInProgress) {
    TestStore t(1 << 20);
    TableEntry te = store_table_entry(t, 706, 16, "q", 1'000'000);
    t.gens.begin_commit(te.rows);     // T1: announced, visible, not bumped yet
    t.gens.bump(te.rows, 5'000'000);  // T2: began later, bumped first
    StaleInfo info;
    ASSERT_EQ(lookup_stale(t, 16, "q", &info), LookupStatus::StaleCopied);
    EXPECT_EQ(info.invalidated_after, 1'000'000);
    t.gens.end_commit(te.rows);
    ASSERT_EQ(lookup_stale(t, 16, "q", &info), LookupStatus::StaleCopied);
    EXPECT_EQ(info.invalidated_after, 5'000'000) << "nothing in progress: the one bump's time";
}

// A scoped entry (docs/consistency.md, "Scopes") keeps its table's Relation
// stamp only as the position its deltas are read from: writes to other
// scopes move that counter and announce commits on it, and the entry stays
// a hit; its scope's counter moving makes it stale; a transaction that
// wrote the table still bypasses it.
TEST(Store, ScopedEntryIgnoresItsCarryPosition) {
    TestStore t(1 << 20);
    uint32_t table = Generations::slot_of(1, GenerationKind::Relation, 16400);
    uint32_t scope = Generations::slot_of(1, GenerationKind::Scope, 77);
    std::vector<DepStamp> deps = {{table, kCarryPosition | kDataStamp, t.gens.read(table)},
                                  {scope, kScopeStamp | kDataStamp, t.gens.read(scope)}};
    t.store.insert(parts(5, "team=77", "v", deps), kNoLimit);
    t.gens.begin_commit(table);
    EXPECT_EQ(lookup(t, 5, "team=77"), LookupStatus::Hit) << "a commit to another scope in progress";
    t.gens.bump(table, 0);
    t.gens.end_commit(table);
    EXPECT_EQ(lookup(t, 5, "team=77"), LookupStatus::Hit) << "another scope written";
    uint32_t written[1] = {table};
    SlotSetView own{written, 1, SlotSetView::filter_bit(table)};
    EXPECT_EQ(lookup(t, 5, "team=77", nullptr, own), LookupStatus::OwnWrites);
    t.gens.begin_commit(scope);
    EXPECT_EQ(lookup(t, 5, "team=77"), LookupStatus::Miss) << "a commit to its scope in progress";
    t.gens.bump(scope, 0);
    t.gens.end_commit(scope);
    EXPECT_EQ(lookup(t, 5, "team=77"), LookupStatus::Stale);
}

// A hit moves a scoped entry's carry position up once it lags its table's
// counter by kCarryLag bumps (writes to other scopes), so a later carry
// reads only the records since; never while a commit on its scope is in
// progress, and never past a bump of its scope.
TEST(Store, HitAdvancesALaggingCarryPosition) {
    TestStore t(1 << 20);
    uint32_t table = Generations::slot_of(1, GenerationKind::Relation, 16401);
    uint32_t scope = Generations::slot_of(1, GenerationKind::Scope, 78);
    uint64_t start = t.gens.read(table);
    std::vector<DepStamp> deps = {{table, kCarryPosition | kDeltaStamp | kDataStamp, start},
                                  {scope, kScopeStamp | kDataStamp, t.gens.read(scope)}};
    t.store.insert(parts(6, "team=78", "v", deps), kNoLimit);
    auto carry_position = [&]() {
        t.gens.begin_commit(scope);  // hides it: a stale lookup copies its stamps
        uint64_t at = 0;
        struct StampSink : pgmemo::testing::CopySink {
            uint64_t *at;
            bool accept_stale(const EntryView &e, const StaleInfo &) noexcept override {
                *at = e.deps[0].generation;
                return false;
            }
        } sink;
        sink.at = &at;
        t.store.lookup(6, "team=78", 7, {}, sink);
        t.gens.end_commit(scope);
        return at;
    };
    for (uint64_t i = 0; i < Store::kCarryLag - 1; i++) t.gens.bump(table, 0);
    EXPECT_EQ(lookup(t, 6, "team=78"), LookupStatus::Hit);
    EXPECT_EQ(carry_position(), start) << "within the lag: left alone";
    t.gens.bump(table, 0);
    t.gens.begin_commit(scope);
    EXPECT_EQ(lookup(t, 6, "team=78"), LookupStatus::Miss) << "its scope's commit in progress";
    t.gens.end_commit(scope);
    EXPECT_EQ(carry_position(), start) << "not advanced while hidden";
    EXPECT_EQ(lookup(t, 6, "team=78"), LookupStatus::Hit);
    EXPECT_EQ(carry_position(), t.gens.read(table)) << "advanced to the table's counter";
    t.gens.bump(scope, 0);
    EXPECT_EQ(lookup(t, 6, "team=78"), LookupStatus::Stale) << "its scope moved: stale as before";
}

// Scope counters and every other kind's never share a slot: a value that
// writes bump often must not stale every entry of a database.
TEST(Generations, ScopesHaveTheirOwnSlots) {
    for (uint32_t i = 0; i < 100000; i++) {
        EXPECT_GE(Generations::slot_of(1, GenerationKind::Scope, i), Generations::kSlots - Generations::kScopeSlots);
        EXPECT_LT(Generations::slot_of(1, GenerationKind::AnyScope, i), Generations::kSlots - Generations::kScopeSlots);
        EXPECT_LT(Generations::slot_of(1, GenerationKind::Relation, i), Generations::kSlots - Generations::kScopeSlots);
        if (HasFailure()) break;
    }
}
