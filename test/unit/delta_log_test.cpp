// Unit tests of the delta log (src/core/delta_log.hpp): a record's rows,
// publishing and collecting a slot's chain of generations, gaps, and the
// ring overwriting old records. Single-threaded: the caller's lock that the
// protocol asks for is not needed here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "delta_log.hpp"

using namespace pgmemo;

namespace {

// A delta log in heap memory, 8-aligned.
struct TestLog {
    explicit TestLog(uint64_t ring_bytes)
        : ring_bytes(ring_bytes), mem((DeltaLog::shared_size(ring_bytes) + 7) / 8), log(make(mem.data(), ring_bytes)) {}

    static DeltaLog make(void *mem, uint64_t ring_bytes) {
        DeltaLog::initialize(mem, ring_bytes);
        return DeltaLog::attach(mem);
    }
    // The ring is the last ring_bytes of the shared memory (ring_bytes a multiple of 8).
    const char *ring_begin() const {
        return reinterpret_cast<const char *>(mem.data()) + DeltaLog::shared_size(ring_bytes) - ring_bytes;
    }
    // Whether r lies wholly inside the ring, at the offset its position names.
    bool within_ring(const DeltaRecord *r) const {
        auto p = reinterpret_cast<const char *>(r);
        return p == ring_begin() + r->position % ring_bytes && p + r->length <= ring_begin() + ring_bytes;
    }

    // A record of slot with rows of data_len bytes, published under generation; its position.
    uint64_t commit(uint32_t slot, uint64_t generation, uint64_t data_len = 0) {
        DeltaRecord *r = log.reserve(slot, 1, 16384 + slot, 700, 0, 0, data_len);
        EXPECT_NE(r, nullptr);
        uint64_t position = r->position;
        EXPECT_TRUE(log.publish(position, generation));
        return position;
    }

    uint64_t ring_bytes;
    std::vector<uint64_t> mem;
    DeltaLog log;
};

constexpr uint32_t kCapacity = 16;

struct Chain {
    Collected status;
    std::vector<uint64_t> generations;  // of the records collected, in order
};

Chain collect(const TestLog &t, uint32_t slot, uint64_t stamp, uint64_t current, uint32_t capacity = kCapacity) {
    const DeltaRecord *out[kCapacity];
    uint32_t count = 99;
    Chain c{t.log.collect(slot, stamp, current, out, capacity, &count), {}};
    for (uint32_t i = 0; i < count; i++) {
        EXPECT_EQ(out[i]->slot, slot);
        c.generations.push_back(out[i]->generation);
    }
    return c;
}

using Gens = std::vector<uint64_t>;

}  // namespace

TEST(DeltaLog, RowsRoundTripOldThenNewAligned) {
    TestLog t(1 << 16);
    const std::vector<std::string> rows = {"a", "", "sixteen bytes!!!", "hello, world"};  // 2 old, 2 new
    uint64_t data_len = 0;
    for (const auto &row : rows) data_len += DeltaRowWriter::row_space(uint32_t(row.size()));
    EXPECT_EQ(DeltaRowWriter::row_space(1), 16u);
    EXPECT_EQ(DeltaRowWriter::row_space(0), 8u);
    EXPECT_EQ(DeltaRowWriter::row_space(16), 24u);

    DeltaRecord *r = t.log.reserve(7, 1, 16384, 900, 2, 2, data_len);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r) % 8, 0u);
    EXPECT_EQ(r->position, 0u);
    EXPECT_EQ(r->generation, 0u) << "not published yet";
    EXPECT_EQ(r->prev, 0u);
    EXPECT_EQ(r->length, sizeof(DeltaRecord) + data_len);
    EXPECT_EQ(r->length % 8, 0u);
    EXPECT_EQ(r->slot, 7u);
    EXPECT_EQ(r->dbid, 1u);
    EXPECT_EQ(r->relid, 16384u);
    EXPECT_EQ(r->xid, 900u);
    EXPECT_EQ(r->nold, 2u);
    EXPECT_EQ(r->nnew, 2u);
    EXPECT_EQ(r->data_len, data_len);

    DeltaRowWriter w(r);
    for (const auto &row : rows) w.add(row.data(), uint32_t(row.size()));

    DeltaRowReader reader(*r);
    const char *row;
    uint32_t len;
    bool is_new;
    for (size_t i = 0; i < rows.size(); i++) {
        ASSERT_TRUE(reader.next(&row, &len, &is_new)) << "row " << i;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(row) % 8, 0u) << "row " << i;
        EXPECT_EQ(is_new, i >= 2) << "row " << i;
        EXPECT_EQ(std::string(row, len), rows[i]);
    }
    EXPECT_FALSE(reader.next(&row, &len, &is_new));

    // A second record follows the first, 8-aligned too.
    DeltaRecord *r2 = t.log.reserve(7, 1, 16384, 901, 0, 1, DeltaRowWriter::row_space(3));
    ASSERT_NE(r2, nullptr);
    EXPECT_EQ(r2->position, r->length);
    DeltaRowWriter(r2).add("xyz", 3);
    DeltaRowReader reader2(*r2);
    ASSERT_TRUE(reader2.next(&row, &len, &is_new));
    EXPECT_TRUE(is_new) << "no old rows: the first is new";
    EXPECT_EQ(std::string(row, len), "xyz");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(row) % 8, 0u);
    EXPECT_FALSE(reader2.next(&row, &len, &is_new));
}

TEST(DeltaLog, ConsecutiveChainIsCompleteNewestFirst) {
    TestLog t(1 << 16);
    for (uint64_t gen : {6, 7, 8}) t.commit(3, gen);
    Chain c = collect(t, 3, 5, 8);
    EXPECT_EQ(c.status, Collected::Complete);
    EXPECT_EQ(c.generations, (Gens{8, 7, 6}));

    c = collect(t, 3, 7, 8);
    EXPECT_EQ(c.status, Collected::Complete) << "the walk stops at the stamp";
    EXPECT_EQ(c.generations, (Gens{8}));

    c = collect(t, 3, 8, 8);
    EXPECT_EQ(c.status, Collected::Complete) << "an entry stamped with the current value";
    EXPECT_TRUE(c.generations.empty());
}

TEST(DeltaLog, MissingGenerationIsAGap) {
    TestLog t(1 << 16);
    t.commit(3, 6);
    t.commit(3, 8);  // 7 was bumped without a record
    EXPECT_EQ(collect(t, 3, 5, 8).status, Collected::Gap);
    EXPECT_EQ(collect(t, 3, 6, 8).status, Collected::Gap);
    Chain c = collect(t, 3, 7, 8);
    EXPECT_EQ(c.status, Collected::Complete) << "the gap lies before the stamp";
    EXPECT_EQ(c.generations, (Gens{8}));

    EXPECT_EQ(collect(t, 3, 7, 9).status, Collected::Gap) << "current beyond the newest record";
    EXPECT_EQ(collect(t, 4, 0, 1).status, Collected::Gap) << "a slot with no records";
    EXPECT_EQ(collect(t, 4, 1, 1).status, Collected::Complete);
}

TEST(DeltaLog, OtherSlotsRecordsStayOutOfTheChain) {
    TestLog t(1 << 16);
    t.commit(1, 1);
    t.commit(2, 1);
    t.commit(1, 2);
    t.commit(2, 2);
    t.commit(2, 3);
    t.commit(1, 3);
    Chain c = collect(t, 1, 0, 3);  // collect() checks every record's slot
    EXPECT_EQ(c.status, Collected::Complete);
    EXPECT_EQ(c.generations, (Gens{3, 2, 1}));
    c = collect(t, 2, 0, 3);
    EXPECT_EQ(c.status, Collected::Complete);
    EXPECT_EQ(c.generations, (Gens{3, 2, 1}));
    EXPECT_EQ(collect(t, 1, 0, 4).status, Collected::Gap);
}

TEST(DeltaLog, UnpublishedRecordsAreNeverReturned) {
    TestLog t(1 << 16);
    DeltaRecord *pending = t.log.reserve(5, 1, 16384, 700, 0, 0, 0);
    ASSERT_NE(pending, nullptr);
    EXPECT_EQ(collect(t, 5, 0, 1).status, Collected::Gap) << "reserved, not published";

    uint64_t published = t.commit(5, 1);
    Chain c = collect(t, 5, 0, 1);
    EXPECT_EQ(c.status, Collected::Complete);
    EXPECT_EQ(c.generations, (Gens{1}));
    const DeltaRecord *out[1];
    uint32_t count = 0;
    ASSERT_EQ(t.log.collect(5, 0, 1, out, 1, &count), Collected::Complete);
    EXPECT_EQ(out[0]->position, published);
    EXPECT_NE(out[0], pending);
    EXPECT_EQ(collect(t, 5, 0, 2).status, Collected::Gap) << "the pending record has no generation";

    EXPECT_FALSE(t.log.publish(published, 2)) << "a record is published once";
    EXPECT_FALSE(t.log.publish(published + 8, 2)) << "a position that names no record";
    EXPECT_FALSE(t.log.publish(1 << 20, 2)) << "a position not yet written";
}

TEST(DeltaLog, RecordsNeverStraddleTheRingEnd) {
    TestLog t(4096);
    const uint64_t max = t.log.max_record_bytes();  // 1024
    ASSERT_EQ(max, 1024u);
    const uint64_t big = max - sizeof(DeltaRecord);
    uint64_t first = t.commit(1, 1, big);  // [0, 1024)
    t.commit(1, 2, big);                   // [1024, 2048)
    t.commit(1, 3, big);                   // [2048, 3072)
    DeltaRecord *r = t.log.reserve(1, 1, 16384, 700, 0, 0, 600 - sizeof(DeltaRecord));  // [3072, 3672)
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->position, 3072u);
    ASSERT_TRUE(t.log.publish(r->position, 4));
    EXPECT_TRUE(t.log.intact(first));
    EXPECT_EQ(collect(t, 1, 0, 4).status, Collected::Complete);

    // 424 bytes are left before the end: the next record starts over at the ring's start.
    r = t.log.reserve(1, 1, 16384, 700, 0, 0, big);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->position, 4096u);
    EXPECT_EQ(reinterpret_cast<const char *>(r), t.ring_begin());
    EXPECT_TRUE(t.within_ring(r));
    EXPECT_FALSE(t.log.intact(first)) << "overwritten by the record at 4096";
    EXPECT_TRUE(t.log.intact(1024));
    ASSERT_TRUE(t.log.publish(r->position, 5));
    Chain c = collect(t, 1, 1, 5);
    EXPECT_EQ(c.status, Collected::Complete);
    EXPECT_EQ(c.generations, (Gens{5, 4, 3, 2}));
    EXPECT_EQ(collect(t, 1, 0, 5).status, Collected::Gap) << "generation 1's record is gone";
}

TEST(DeltaLog, RingOverwritesOldRecords) {
    TestLog t(4096);
    uint64_t old = t.commit(1, 1, 200);
    DeltaRecord *pending = t.log.reserve(1, 1, 16384, 700, 0, 0, 200);
    ASSERT_NE(pending, nullptr);
    uint64_t pending_position = pending->position;
    EXPECT_EQ(collect(t, 1, 0, 1).status, Collected::Complete);

    // Later records of another slot, of varied sizes, until both are overwritten.
    bool old_gone = false;
    uint64_t last_position = pending_position;
    for (int i = 0; i < 200 && t.log.intact(pending_position); i++) {
        DeltaRecord *r = t.log.reserve(2, 1, 16385, 701, 0, 0, (uint64_t(i) * 131) % 900);
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(t.within_ring(r)) << "record " << i << " at " << r->position;
        EXPECT_GT(r->position, last_position) << "positions are monotone";
        last_position = r->position;
        if (old_gone) {
            EXPECT_FALSE(t.log.intact(old)) << "once overwritten, never intact again";
        }
        old_gone = !t.log.intact(old);
        EXPECT_EQ(collect(t, 1, 0, 1).status, old_gone ? Collected::Gap : Collected::Complete);
    }
    EXPECT_FALSE(t.log.intact(old));
    EXPECT_FALSE(t.log.intact(pending_position));
    EXPECT_EQ(collect(t, 1, 0, 1).status, Collected::Gap);
    EXPECT_FALSE(t.log.publish(pending_position, 2)) << "the bump stays a gap";
    EXPECT_EQ(collect(t, 1, 1, 2).status, Collected::Gap);
}

TEST(DeltaLog, ReserveRejectsRecordsOverAQuarterOfTheRing) {
    TestLog t(4096);
    EXPECT_EQ(t.log.max_record_bytes(), 1024u);
    const uint64_t fits = 1024 - sizeof(DeltaRecord);
    EXPECT_EQ(t.log.reserve(1, 1, 16384, 700, 0, 0, fits + 1), nullptr);
    EXPECT_EQ(t.log.reserve(1, 1, 16384, 700, 0, 0, uint64_t(1) << 40), nullptr);
    EXPECT_EQ(t.log.records_written(), 0u) << "a rejected record is not counted";
    DeltaRecord *r = t.log.reserve(1, 1, 16384, 700, 0, 0, fits);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->length, 1024u);
}

TEST(DeltaLog, TooManyRecordsForTheOutputArray) {
    TestLog t(1 << 16);
    for (uint64_t gen : {1, 2, 3}) t.commit(1, gen);
    Chain c = collect(t, 1, 0, 3, 2);
    EXPECT_EQ(c.status, Collected::TooMany);
    EXPECT_EQ(collect(t, 1, 0, 3, 3).status, Collected::Complete);
    EXPECT_EQ(collect(t, 1, 1, 3, 2).status, Collected::Complete);
    EXPECT_EQ(collect(t, 1, 3, 3, 0).status, Collected::Complete) << "nothing to return";
}

TEST(DeltaLog, Counters) {
    TestLog t(1 << 16);
    EXPECT_EQ(t.log.records_written(), 0u);
    EXPECT_EQ(t.log.fallbacks(), 0u);
    t.commit(1, 1);
    ASSERT_NE(t.log.reserve(1, 1, 16384, 700, 0, 0, 0), nullptr);  // never published
    EXPECT_EQ(t.log.records_written(), 2u) << "reservations, published or not";
    for (int i = 0; i < 3; i++) t.log.note_fallback();
    EXPECT_EQ(t.log.fallbacks(), 3u);
    EXPECT_EQ(t.log.records_written(), 2u);
}
