// Warm restart's file (src/core/saved_cache.hpp): what is written reads back
// exactly, and a file with any damage is refused before anything is used.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "result_format.hpp"
#include "saved_cache.hpp"
#include "test_support.hpp"

using namespace pgmemo;
using pgmemo::testing::CopySink;
using pgmemo::testing::parts;
using pgmemo::testing::TestStore;

namespace {

constexpr uint64_t kNoLimit = ~uint64_t(0);
constexpr uint64_t kMaxRecord = 1 << 20;

class StringOutput final : public SavedCacheOutput {
public:
    std::string bytes;
    bool fail_after = false;  // fail every write once bytes exceed limit
    size_t limit = 0;
    bool write(const void *data, size_t len) noexcept override {
        if (fail_after && bytes.size() + len > limit) return false;
        bytes.append(static_cast<const char *>(data), len);
        return true;
    }
};

class StringInput final : public SavedCacheInput {
public:
    explicit StringInput(const std::string &bytes) : bytes_(bytes) {}
    size_t read(void *buf, size_t len) noexcept override {
        size_t n = std::min(len, bytes_.size() - pos_);
        std::memcpy(buf, bytes_.data() + pos_, n);
        pos_ += n;
        return n;
    }
    bool failed() const noexcept override { return false; }
    char *record_space(size_t len) noexcept override {
        record_.resize((len + 7) / 8);
        return reinterpret_cast<char *>(record_.data());
    }
    void rewind() { pos_ = 0; }

private:
    const std::string &bytes_;
    size_t pos_ = 0;
    std::vector<uint64_t> record_;
};

SavedCacheHeader sample_header() {
    SavedCacheHeader h;
    h.build_id = 0x1234;
    h.system_identifier = 7000000000000000001ULL;
    h.checkpoint_lsn = 0x1000028;
    h.timeline = 1;
    h.cache_size_kb = 1024;
    h.control_fingerprint = 0xabcdef;
    h.saved_at = 800000000000000;
    h.environment = 0x5eed;
    return h;
}

uint32_t slot_named(TestStore &t, uint32_t dbid, const std::string &name) {
    return t.stats.find_or_claim(dbid, name.data(), name.size(), 0);
}

// Saves t as the glue does: every entry worth saving, named by its stats row.
std::string save(TestStore &t, const SavedCacheHeader &h = sample_header(), uint64_t *saved = nullptr) {
    StringOutput out;
    SavedCacheWriter w(out);
    bool ok = w.begin(h, t.gens);
    t.store.for_each_entry([&](uint64_t hash, const char *key, uint32_t key_len, uint32_t stats_slot,
                               const EntryView &e) {
        if (!ok || !worth_saving(e, t.gens)) return;
        SavedEntry s = SavedEntry::of(hash, key, key_len, e);
        if (stats_slot != StatsTable::kOverflowSlot) {
            s.dbid = t.stats.slot(stats_slot).dbid;
            s.cache_name = t.stats.slot(stats_slot).name;
            s.cache_name_len = uint32_t(std::strlen(s.cache_name));
        }
        ok = w.add_entry(s);
    });
    EXPECT_TRUE(ok && w.finish());
    if (saved) *saved = w.entries();
    return out.bytes;
}

// Restores bytes into t as the glue does: header (magic, version), then the
// checksum of the whole (unless skipped), then counters and entries. Returns
// End when all of it was restored, else the first thing found wrong.
SavedCacheStatus restore(const std::string &bytes, TestStore &t, SavedCacheHeader *h = nullptr,
                         bool checksum_first = true) {
    StringInput in(bytes);
    SavedCacheHeader header;
    {
        SavedCacheReader r(in);
        SavedCacheStatus s = r.read_header(&header);
        if (s != SavedCacheStatus::Ok) return s;
    }
    if (checksum_first) {
        in.rewind();
        SavedCacheStatus s = verify_saved_cache_checksum(in);
        if (s != SavedCacheStatus::Ok) return s;
    }
    in.rewind();
    SavedCacheReader r(in);
    SavedCacheStatus s = r.read_header(&header);
    if (s == SavedCacheStatus::Ok) s = r.read_counters(t.gens);
    SavedEntry e;
    while (s == SavedCacheStatus::Ok && (s = r.next_entry(&e, kMaxRecord)) == SavedCacheStatus::Ok) {
        EntryParts p = e.parts(e.cache_name_len ? t.stats.find_or_claim(e.dbid, e.cache_name, e.cache_name_len, 0)
                                                : StatsTable::kOverflowSlot);
        t.store.insert(p, kNoLimit);
    }
    if (h) *h = header;
    return s;
}

struct Found {
    LookupStatus status;
    std::string meta, payload;
    Micros stamped_at;
};

Found lookup(TestStore &t, uint64_t hash, const std::string &key) {
    CopySink sink;
    LookupStatus s = t.store.lookup(hash, key.data(), uint32_t(key.size()), SlotSetView{}, sink);
    return Found{s, sink.meta, sink.payload, sink.stamped_at};
}

std::string count_result(int64_t n) {
    std::string buf(64, '\0');
    ResultWriter w(buf.data(), buf.size());
    w.write_count(n);
    buf.resize(w.size());
    return buf;
}

std::string error_result() {
    std::string buf(256, '\0');
    ResultWriter w(buf.data(), buf.size());
    w.write_error(12345, "boom", nullptr, nullptr);
    buf.resize(w.size());
    return buf;
}

// A store with a few entries over two tables, in two named caches and the
// overflow row, one of them kept by deltas; some counters moved.
struct Sample {
    TestStore t{1 << 20};
    uint32_t emp = Generations::slot_of(1, GenerationKind::Relation, 100);
    uint32_t dept = Generations::slot_of(1, GenerationKind::Relation, 200);
    std::string key2 = std::string("key\0two", 7);

    Sample() {
        for (int i = 0; i < 3; i++) t.gens.bump(emp, 0);
        t.gens.bump(dept, 0);
        uint32_t a = slot_named(t, 1, "emp.list");
        uint32_t b = slot_named(t, 2, "dept.count");
        std::vector<DepStamp> emp_dep = {{emp, kDataStamp, t.gens.read(emp)}};
        std::vector<DepStamp> both = {{emp, kDeltaStamp | kDataStamp, t.gens.read(emp)},
                                      {dept, 0, t.gens.read(dept)}};
        std::string five = count_result(5), seven = count_result(7), big(1000, 'x');
        insert_stamped(parts(11, "key one", five, emp_dep, a), 111);
        insert_stamped(parts(12, key2, big, both, b), 222);
        insert_stamped(parts(13, "key three", seven, {}, StatsTable::kOverflowSlot), 333);
    }
    // (parts() points into its arguments: insert before they go.)
    void insert_stamped(EntryParts p, Micros stamped_at) {
        p.stamped_at = stamped_at;
        t.store.insert(p, kNoLimit);
    }
};

}  // namespace

TEST(SavedCache, RoundTripRestoresCountersEntriesAndNames) {
    Sample s;
    uint64_t saved = 0;
    std::string bytes = save(s.t, sample_header(), &saved);
    EXPECT_EQ(saved, 3u);

    TestStore back(1 << 20);
    slot_named(back, 9, "taken first");  // slots are renumbered at every start
    SavedCacheHeader h;
    ASSERT_EQ(restore(bytes, back, &h), SavedCacheStatus::End);

    SavedCacheHeader want = sample_header();
    EXPECT_EQ(h.build_id, want.build_id);
    EXPECT_EQ(h.system_identifier, want.system_identifier);
    EXPECT_EQ(h.checkpoint_lsn, want.checkpoint_lsn);
    EXPECT_EQ(h.timeline, want.timeline);
    EXPECT_EQ(h.cache_size_kb, want.cache_size_kb);
    EXPECT_EQ(h.control_fingerprint, want.control_fingerprint);
    EXPECT_EQ(h.saved_at, want.saved_at);

    for (uint32_t slot = 0; slot < Generations::kSlots; slot++)
        ASSERT_EQ(back.gens.read(slot), s.t.gens.read(slot)) << "counter " << slot;

    Found one = lookup(back, 11, "key one");
    EXPECT_EQ(one.status, LookupStatus::Hit);
    EXPECT_EQ(one.payload, count_result(5));
    EXPECT_EQ(one.meta, "m");
    EXPECT_EQ(one.stamped_at, 111);
    Found two = lookup(back, 12, s.key2);
    EXPECT_EQ(two.status, LookupStatus::Hit);
    EXPECT_EQ(two.payload, std::string(1000, 'x'));
    EXPECT_EQ(two.stamped_at, 222);
    EXPECT_EQ(lookup(back, 13, "key three").status, LookupStatus::Hit);
    EXPECT_EQ(back.store.info().entries, 3u);

    // Each entry counts in the row of its name, wherever that row is now.
    uint32_t a = slot_named(back, 1, "emp.list"), b = slot_named(back, 2, "dept.count");
    EXPECT_EQ(back.stats.get(a, kEntries), 1u);
    EXPECT_EQ(back.stats.get(b, kEntries), 1u);
    EXPECT_EQ(back.stats.get(StatsTable::kOverflowSlot, kEntries), 1u);

    // A write after the restore invalidates what it restored.
    back.gens.bump(s.emp, 0);
    EXPECT_EQ(lookup(back, 11, "key one").status, LookupStatus::Stale);
    EXPECT_EQ(lookup(back, 13, "key three").status, LookupStatus::Hit);
}

TEST(SavedCache, RestoredEntriesAreNotKeptByDeltas) {
    Sample s;
    std::string bytes = save(s.t);
    TestStore back(1 << 20);
    ASSERT_EQ(restore(bytes, back), SavedCacheStatus::End);
    int seen = 0;
    back.store.for_each_entry([&](uint64_t, const char *, uint32_t, uint32_t, const EntryView &e) {
        for (uint32_t i = 0; i < e.ndeps; i++) {
            EXPECT_EQ(e.deps[i].flags & kDeltaStamp, 0u);
            if (e.deps[i].slot == s.emp) {
                EXPECT_NE(e.deps[i].flags & kDataStamp, 0u);  // kept
            }
        }
        seen++;
    });
    EXPECT_EQ(seen, 3);
}

TEST(SavedCache, OnlyCurrentNonErrorEntriesAreSaved) {
    TestStore t(1 << 20);
    uint32_t slot = Generations::slot_of(1, GenerationKind::Relation, 300);
    uint32_t pending = Generations::slot_of(1, GenerationKind::Relation, 301);
    uint32_t name = slot_named(t, 1, "c");
    t.store.insert(parts(1, "stale", count_result(1), {{slot, 0, t.gens.read(slot)}}, name), kNoLimit);
    t.gens.bump(slot, 0);
    t.store.insert(parts(2, "current", count_result(2), {{slot, 0, t.gens.read(slot)}}, name), kNoLimit);
    t.store.insert(parts(3, "error", error_result(), {{slot, 0, t.gens.read(slot)}}, name), kNoLimit);
    t.store.insert(parts(4, "pending", count_result(4), {{pending, 0, t.gens.read(pending)}}, name), kNoLimit);
    t.gens.begin_commit(pending);  // a commit in progress: not current, and its counter saved ahead

    uint64_t saved = 0;
    std::string bytes = save(t, sample_header(), &saved);
    EXPECT_EQ(saved, 1u);
    TestStore back(1 << 20);
    ASSERT_EQ(restore(bytes, back), SavedCacheStatus::End);
    EXPECT_EQ(lookup(back, 2, "current").status, LookupStatus::Hit);
    EXPECT_EQ(lookup(back, 1, "stale").status, LookupStatus::Miss);
    EXPECT_EQ(lookup(back, 3, "error").status, LookupStatus::Miss);
    EXPECT_EQ(back.gens.read(pending), t.gens.read(pending) + 1);
}

TEST(SavedCache, EmptyStoreRoundTrips) {
    TestStore t(1 << 20);
    t.gens.bump(5, 0);
    std::string bytes = save(t);
    TestStore back(1 << 20);
    ASSERT_EQ(restore(bytes, back), SavedCacheStatus::End);
    EXPECT_EQ(back.gens.read(5), 2u);
    EXPECT_EQ(back.store.info().entries, 0u);
}

TEST(SavedCache, EveryFlippedByteIsRefused) {
    Sample s;
    std::string good = save(s.t);
    const size_t counters_end = 64 + 8 * size_t(Generations::kSlots);
    std::vector<size_t> positions;
    for (size_t i = 0; i < good.size(); i++)
        if (i < 64 || i >= counters_end || i % 4099 == 0) positions.push_back(i);  // counters sampled
    TestStore a(1 << 20), b(1 << 20);  // reused: only the refusal matters here
    for (size_t i : positions) {
        std::string bad = good;
        bad[i] = char(bad[i] ^ (i % 2 ? 0x80 : 0x01));
        EXPECT_NE(restore(bad, a), SavedCacheStatus::End) << "flip at " << i;
        // The reader alone refuses it too, at the latest at its end record.
        EXPECT_NE(restore(bad, b, nullptr, false), SavedCacheStatus::End) << "flip at " << i;
    }
}

TEST(SavedCache, EveryTruncationIsRefused) {
    Sample s;
    std::string good = save(s.t);
    const size_t counters_end = 64 + 8 * size_t(Generations::kSlots);
    TestStore a(1 << 20), b(1 << 20);  // reused: only the refusal matters here
    for (size_t len = 0; len < good.size(); len++) {
        if (len >= 80 && len < counters_end && len % 4099 != 0) continue;  // counters sampled
        std::string cut = good.substr(0, len);
        EXPECT_NE(restore(cut, a), SavedCacheStatus::End) << "cut at " << len;
        EXPECT_NE(restore(cut, b, nullptr, false), SavedCacheStatus::End) << "cut at " << len;
    }
    std::string longer = good + '\0';
    TestStore c(1 << 20), d(1 << 20);
    EXPECT_NE(restore(longer, c), SavedCacheStatus::End);
    EXPECT_EQ(restore(longer, d, nullptr, false), SavedCacheStatus::Malformed);
}

// A file whose checksum is right for its bytes, but with another magic
// number or format version: refused by the header, before anything else.
TEST(SavedCache, WrongMagicOrVersionIsRefused) {
    TestStore t(1 << 20);
    std::string good = save(t);
    auto with_word = [&](size_t offset, uint32_t value) {
        std::string bytes = good;
        std::memcpy(&bytes[offset], &value, sizeof value);
        return bytes;
    };
    TestStore a(1 << 20), b(1 << 20);
    EXPECT_EQ(restore(with_word(0, kSavedCacheMagic ^ 1), a), SavedCacheStatus::NotACacheFile);
    EXPECT_EQ(restore(with_word(4, kSavedCacheFormatVersion + 1), b), SavedCacheStatus::WrongVersion);
    std::string empty;
    TestStore c(1 << 20);
    EXPECT_EQ(restore(empty, c), SavedCacheStatus::Truncated);
}

TEST(SavedCache, WriteFailureIsReported) {
    Sample s;
    StringOutput out;
    out.fail_after = true;
    out.limit = 1000;
    SavedCacheWriter w(out);
    EXPECT_FALSE(w.begin(sample_header(), s.t.gens));
    EXPECT_FALSE(w.finish());
}

// The fingerprint is what refuses a file saved by a build whose counters
// mean something else (another hash, slot mapping, number of slots or
// format). Pinned: every build of this core computes this value, and a
// change to any of those inputs must change it (then update the constant,
// knowing that saved files of the older build will be refused).
TEST(SavedCache, CoreFingerprintIsPinned) {
    EXPECT_EQ(saved_cache_core_fingerprint(), 6836973663843269065ull);  // 1.2: 131,072 slots, scopes in the upper half
}

// The rule for restoring: the very shutdown checkpoint it was saved after,
// on this server, with nothing to replay.
TEST(SavedCache, RefusalToRestore) {
    SavedCacheHeader saved = sample_header();
    ServerFacts same;
    same.control_ok = true;
    same.state = ControlState::CleanShutdown;
    same.system_identifier = saved.system_identifier;
    same.checkpoint_lsn = saved.checkpoint_lsn;
    same.timeline = saved.timeline;
    same.control_fingerprint = saved.control_fingerprint;
    same.cache_size_kb = saved.cache_size_kb;
    same.build_id = saved.build_id;
    same.environment = saved.environment;
    EXPECT_EQ(refusal_to_restore(saved, same), Refusal::None);

    auto refusal_with = [&](auto change) {
        ServerFacts f = same;
        change(f);
        return refusal_to_restore(saved, f);
    };
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.control_ok = false; }), Refusal::ControlUnreadable);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.system_identifier++; }), Refusal::OtherServer);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.backup_label = true; }), Refusal::BackupLabel);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.standby_signal = true; }), Refusal::StandbySignal);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.recovery_signal = true; }), Refusal::RecoverySignal);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.state = ControlState::NotShutDown; }), Refusal::NotShutDown);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.state = ControlState::StandbyShutdown; }),
              Refusal::StandbyShutdown);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.state = ControlState::ArchiveRecovery; }),
              Refusal::ArchiveRecovery);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.checkpoint_lsn += 0x1000000; }), Refusal::CheckpointMoved);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.timeline = 2; }), Refusal::CheckpointMoved);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.control_fingerprint ^= 1; }), Refusal::ControlFileChanged);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.build_id ^= 1; }), Refusal::BuildChanged);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.environment ^= 1; }), Refusal::EnvironmentChanged);
    EXPECT_EQ(refusal_with([](ServerFacts &f) { f.cache_size_kb *= 2; }), Refusal::CacheSizeChanged);
}
