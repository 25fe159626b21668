#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "result_format.hpp"

#include <cstring>

namespace pgmemo {

bool ResultWriter::begin_rows(const ColumnType *cols, uint32_t ncolumns) noexcept {
    size_t prefix = result_prefix_size(ncolumns);
    if (pos_ != 0 || prefix > cap_) return false;
    std::memset(buf_, 0, prefix);
    header_ = reinterpret_cast<ResultHeader *>(buf_);
    header_->kind = ResultKind::Rows;
    header_->ncolumns = ncolumns;
    if (ncolumns) std::memcpy(buf_ + sizeof(ResultHeader), cols, sizeof(ColumnType) * ncolumns);
    pos_ = prefix;
    return true;
}

bool ResultWriter::add_row(const void *data, uint32_t len) noexcept {
    if (!header_ || header_->kind != ResultKind::Rows) return false;
    size_t space = row_space(len);
    if (space > cap_ - pos_) return false;
    RowHeader rh{len, 0};
    std::memcpy(buf_ + pos_, &rh, sizeof rh);
    if (len) std::memcpy(buf_ + pos_ + sizeof rh, data, len);
    std::memset(buf_ + pos_ + sizeof rh + len, 0, align8(len) - len);
    pos_ += space;
    header_->nrows++;
    return true;
}

bool ResultWriter::rebase(char *buf, size_t capacity) noexcept {
    if (capacity < pos_) return false;
    if (header_) header_ = reinterpret_cast<ResultHeader *>(buf + (reinterpret_cast<char *>(header_) - buf_));
    buf_ = buf;
    cap_ = capacity;
    return true;
}

bool ResultWriter::write_count(int64_t count) noexcept {
    if (pos_ != 0 || cap_ < sizeof(ResultHeader)) return false;
    header_ = reinterpret_cast<ResultHeader *>(buf_);
    *header_ = ResultHeader{ResultKind::Count, 0, 0, count};
    pos_ = sizeof(ResultHeader);
    return true;
}

bool ResultWriter::write_error(int32_t code, const char *message, const char *detail, const char *hint) noexcept {
    const char *texts[3] = {message ? message : "", detail ? detail : "", hint ? hint : ""};
    size_t lens[3];
    for (int i = 0; i < 3; i++) lens[i] = std::strlen(texts[i]);
    if (pos_ != 0 || cap_ < error_result_size(lens[0], lens[1], lens[2])) return false;
    header_ = reinterpret_cast<ResultHeader *>(buf_);
    *header_ = ResultHeader{ResultKind::Error, 0, 0, code};
    pos_ = sizeof(ResultHeader);
    for (int i = 0; i < 3; i++) {
        std::memcpy(buf_ + pos_, texts[i], lens[i] + 1);
        pos_ += lens[i] + 1;
    }
    return true;
}

ResultReader::ResultReader(const char *buf, size_t len) noexcept : buf_(buf), len_(len) {
    if (len < sizeof(ResultHeader)) return;
    header_ = reinterpret_cast<const ResultHeader *>(buf);
    if (header_->kind == ResultKind::Error) {
        // Three NUL-terminated texts, all inside the buffer; no rows.
        if (header_->nrows != 0) return;
        size_t at = sizeof(ResultHeader);
        for (int i = 0; i < 3; i++) {
            const void *end = at < len ? std::memchr(buf + at, '\0', len - at) : nullptr;
            if (!end) return;
            error_texts_[i] = buf + at;
            at = size_t(static_cast<const char *>(end) - buf) + 1;
        }
        pos_ = len;
        valid_ = true;
        return;
    }
    if (header_->kind != ResultKind::Count && header_->kind != ResultKind::Rows) return;
    size_t prefix = header_->kind == ResultKind::Rows ? result_prefix_size(header_->ncolumns)
                                                      : sizeof(ResultHeader);
    if (prefix > len) return;
    cols_ = reinterpret_cast<const ColumnType *>(buf + sizeof(ResultHeader));
    pos_ = prefix;
    valid_ = true;
}

bool ResultReader::next_row(const char **data, uint32_t *len) noexcept {
    if (!valid_ || rows_read_ >= header_->nrows) return false;
    if (len_ - pos_ < sizeof(RowHeader)) return false;
    RowHeader rh;
    std::memcpy(&rh, buf_ + pos_, sizeof rh);
    if (row_space(rh.len) > len_ - pos_) return false;
    *data = buf_ + pos_ + sizeof rh;
    *len = rh.len;
    pos_ += row_space(rh.len);
    rows_read_++;
    return true;
}

}  // namespace pgmemo
