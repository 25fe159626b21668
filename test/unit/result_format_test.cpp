#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "result_format.hpp"

using namespace pgmemo;

TEST(ResultFormat, RowsRoundTrip) {
    ColumnType cols[2] = {{23, -1}, {25, -1}};
    std::vector<std::string> rows = {"a", "", "hello world, longer than eight"};
    size_t size = result_prefix_size(2);
    for (auto &r : rows) size += row_space(uint32_t(r.size()));

    alignas(8) std::vector<uint64_t> storage(size / 8 + 1);
    char *buf = reinterpret_cast<char *>(storage.data());
    ResultWriter w(buf, size);
    ASSERT_TRUE(w.begin_rows(cols, 2));
    for (auto &r : rows) ASSERT_TRUE(w.add_row(r.data(), uint32_t(r.size())));
    EXPECT_EQ(w.size(), size);
    EXPECT_FALSE(w.add_row("x", 1)) << "writer must refuse to overrun its buffer";

    ResultReader rd(buf, w.size());
    ASSERT_TRUE(rd.valid());
    EXPECT_EQ(rd.kind(), ResultKind::Rows);
    EXPECT_EQ(rd.ncolumns(), 2u);
    EXPECT_EQ(rd.columns()[1].type_oid, 25u);
    const char *data;
    uint32_t len;
    for (auto &r : rows) {
        ASSERT_TRUE(rd.next_row(&data, &len));
        EXPECT_EQ(std::string(data, len), r);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 8, 0u) << "rows are 8-byte aligned";
    }
    EXPECT_FALSE(rd.next_row(&data, &len));
}

TEST(ResultFormat, Count) {
    alignas(8) char buf[sizeof(ResultHeader)];
    ResultWriter w(buf, sizeof buf);
    ASSERT_TRUE(w.write_count(500000));
    ResultReader rd(buf, w.size());
    ASSERT_TRUE(rd.valid());
    EXPECT_EQ(rd.kind(), ResultKind::Count);
    EXPECT_EQ(rd.count(), 500000);
}

TEST(ResultFormat, TruncatedBufferIsInvalid) {
    alignas(8) char buf[sizeof(ResultHeader)];
    ResultWriter w(buf, sizeof buf);
    ASSERT_TRUE(w.write_count(1));
    EXPECT_FALSE(ResultReader(buf, 4).valid());
}

TEST(ResultFormat, ErrorRoundTrip) {
    std::vector<char> buf(error_result_size(5, 0, 4) + 8);
    ResultWriter w(buf.data(), buf.size());
    ASSERT_TRUE(w.write_error(12345, "boom!", nullptr, "hint"));
    ResultReader rd(buf.data(), w.size());
    ASSERT_TRUE(rd.valid());
    EXPECT_EQ(rd.kind(), ResultKind::Error);
    EXPECT_EQ(rd.error_code(), 12345);
    EXPECT_STREQ(rd.error_message(), "boom!");
    EXPECT_STREQ(rd.error_detail(), "");
    EXPECT_STREQ(rd.error_hint(), "hint");
    EXPECT_FALSE(ResultReader(buf.data(), w.size() - 1).valid()) << "a cut text is refused";
}

// A result built in a buffer that grows (the glue's receiver): rebasing
// onto a larger copy keeps the header and the rows written so far.
TEST(ResultFormat, RebaseOntoGrownBuffer) {
    ColumnType cols[1] = {{25, -1}};
    alignas(8) std::vector<uint64_t> small(8), large(64);
    char *a = reinterpret_cast<char *>(small.data());
    char *b = reinterpret_cast<char *>(large.data());
    ResultWriter w(a, small.size() * 8);
    ASSERT_TRUE(w.begin_rows(cols, 1));
    ASSERT_TRUE(w.add_row("first", 5));
    EXPECT_FALSE(w.add_row("second row, too long for the small buffer", 41));
    EXPECT_FALSE(w.rebase(b, w.size() - 1)) << "a buffer smaller than what was written is refused";
    std::memcpy(b, a, w.size());
    std::memset(a, 0xff, small.size() * 8);  // the old buffer is gone
    ASSERT_TRUE(w.rebase(b, large.size() * 8));
    ASSERT_TRUE(w.add_row("second row, too long for the small buffer", 41));
    ResultReader rd(b, w.size());
    ASSERT_TRUE(rd.valid());
    EXPECT_EQ(rd.nrows(), 2u);
    const char *data;
    uint32_t len;
    ASSERT_TRUE(rd.next_row(&data, &len));
    EXPECT_EQ(std::string(data, len), "first");
    ASSERT_TRUE(rd.next_row(&data, &len));
    EXPECT_EQ(len, 41u);
}
