// Encoding of a stored result: a count, a row set with its column types, or
// the error a computation ended with (remembered under pg_memo.error_ttl).
//
// Layout (all 8-byte aligned, so rows can be handed to PostgreSQL in place):
//   ResultHeader
//   ColumnType[ncolumns]          padded to 8
//   per row: RowHeader, bytes     each padded to 8
// An error: ResultHeader (count = the SQLSTATE, encoded), then its message,
// detail and hint, each ending in a NUL byte.
// Row bytes are opaque here; the PostgreSQL glue stores heap tuple bodies.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

enum class ResultKind : uint32_t { Count = 1, Rows = 2, Error = 3 };

struct ResultHeader {
    ResultKind kind;
    uint32_t ncolumns;
    uint64_t nrows;
    int64_t count;  // Count results only
};

struct ColumnType {
    uint32_t type_oid;
    int32_t typmod;
};

struct RowHeader {
    uint32_t len;
    uint32_t reserved;
};

constexpr size_t align8(size_t n) noexcept { return (n + 7) & ~size_t(7); }

inline size_t result_prefix_size(uint32_t ncolumns) noexcept {
    return sizeof(ResultHeader) + align8(sizeof(ColumnType) * ncolumns);
}
inline size_t row_space(uint32_t len) noexcept { return sizeof(RowHeader) + align8(len); }
inline size_t error_result_size(size_t message_len, size_t detail_len, size_t hint_len) noexcept {
    return sizeof(ResultHeader) + message_len + detail_len + hint_len + 3;
}

// Writes a result into a buffer sized with result_prefix_size + row_space...
class ResultWriter {
public:
    ResultWriter(char *buf, size_t capacity) noexcept : buf_(buf), cap_(capacity) {}

    bool begin_rows(const ColumnType *cols, uint32_t ncolumns) noexcept;
    bool add_row(const void *data, uint32_t len) noexcept;
    bool write_count(int64_t count) noexcept;
    // Null texts are written empty.
    bool write_error(int32_t code, const char *message, const char *detail, const char *hint) noexcept;
    size_t size() const noexcept { return pos_; }
    size_t capacity() const noexcept { return cap_; }

    // Goes on writing into buf, which holds a copy of everything written so
    // far and has room for capacity bytes (a grown buffer).
    bool rebase(char *buf, size_t capacity) noexcept;

private:
    char *buf_;
    size_t cap_;
    size_t pos_ = 0;
    ResultHeader *header_ = nullptr;
};

// Reads a result written by ResultWriter. The buffer must be 8-byte aligned.
class ResultReader {
public:
    ResultReader(const char *buf, size_t len) noexcept;

    bool valid() const noexcept { return valid_; }
    ResultKind kind() const noexcept { return header_->kind; }
    int64_t count() const noexcept { return header_->count; }
    uint32_t ncolumns() const noexcept { return header_->ncolumns; }
    uint64_t nrows() const noexcept { return header_->nrows; }
    const ColumnType *columns() const noexcept { return cols_; }

    // Walks the rows in order: returns false after the last one.
    bool next_row(const char **data, uint32_t *len) noexcept;

    // Error results: the code and the three texts ("" when absent).
    int32_t error_code() const noexcept { return int32_t(header_->count); }
    const char *error_message() const noexcept { return error_texts_[0]; }
    const char *error_detail() const noexcept { return error_texts_[1]; }
    const char *error_hint() const noexcept { return error_texts_[2]; }

private:
    const char *buf_;
    size_t len_;
    const ResultHeader *header_ = nullptr;
    const ColumnType *cols_ = nullptr;
    size_t pos_ = 0;
    uint64_t rows_read_ = 0;
    const char *error_texts_[3] = {"", "", ""};
    bool valid_ = false;
};

}  // namespace pgmemo
