// Properties of the core's key and result encodings under arbitrary input,
// shared by the libFuzzer target (core_fuzz.cpp) and the deterministic
// ctest (core_fuzz_test.cpp). Each check returns "" when the property holds,
// otherwise what broke.
//
// The checks test bounds themselves (every decoded view must lie inside the
// input), so they find out-of-range reads without a sanitizer too; under
// AddressSanitizer every buffer is a heap block of exactly the input's size,
// so a read or write one byte past it is reported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hash.hpp"
#include "key.hpp"
#include "result_format.hpp"

namespace pgmemo::fuzz {

// Consumes fuzz bytes as small numbers and byte strings; past the end it
// yields zeros and empty strings.
class ByteReader {
public:
    ByteReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    uint32_t u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) v |= uint32_t(byte()) << (8 * i);
        return v;
    }
    // Up to max_len bytes (fewer when the input runs out).
    std::string bytes(size_t max_len) {
        size_t n = std::min(max_len, size_ - std::min(pos_, size_));
        std::string s(reinterpret_cast<const char *>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

// A heap block of exactly n bytes (at least 8-byte aligned, as operator new
// guarantees 16), so that AddressSanitizer sees the end of the input.
inline std::unique_ptr<char[]> exact_copy(const void *data, size_t n) {
    std::unique_ptr<char[]> p(new char[n ? n : 1]);
    if (n) std::memcpy(p.get(), data, n);
    return p;
}

inline bool inside(const char *p, size_t len, const char *begin, size_t size) {
    return p >= begin && p <= begin + size && len <= size_t(begin + size - p);
}

// ---- keys -------------------------------------------------------------------

// decode_key on arbitrary bytes: no crash; a successful decode returns views
// inside the input that tile it exactly, and re-encoding them gives back the
// very same bytes (the encoding is canonical).
inline std::string check_key_decode(const uint8_t *data, size_t size) {
    auto copy = exact_copy(data, size);
    const char *key = copy.get();
    int n = decode_key(key, size, nullptr, 0);
    if (n < -1) return "decode_key returned " + std::to_string(n);
    if (n == -1) return "";

    // One extra slot as a canary: decode_key must not write past max_fields.
    std::vector<KeyField> fields(size_t(n) + 1);
    const KeyField canary{reinterpret_cast<const char *>(&fields), 0xDEADBEEF, true};
    fields[size_t(n)] = canary;
    if (decode_key(key, size, fields.data(), size_t(n)) != n) return "decode_key is not deterministic";
    if (fields[size_t(n)].data != canary.data || fields[size_t(n)].len != canary.len)
        return "decode_key wrote past max_fields";

    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        const KeyField &f = fields[size_t(i)];
        offset += sizeof(uint32_t);
        if (f.is_null) {
            if (f.len != 0) return "a NULL field has a length";
            continue;
        }
        if (f.data != key + offset) return "field " + std::to_string(i) + " is not where its marker says";
        if (!inside(f.data, f.len, key, size)) return "field " + std::to_string(i) + " reaches past the key";
        offset += f.len;
    }
    if (offset != size) return "decoded fields do not cover the key exactly";

    if (encoded_key_size(fields.data(), size_t(n)) != size) return "re-encoded size differs";
    auto again = std::make_unique<char[]>(size ? size : 1);
    if (encode_key(fields.data(), size_t(n), again.get()) != size) return "encode_key wrote another size";
    if (size && std::memcmp(again.get(), key, size) != 0) return "re-encoding gives other bytes";

    // Fewer output slots than fields: same count, nothing written past them.
    if (n > 0) {
        size_t half = size_t(n) / 2;
        fields[half] = canary;
        if (decode_key(key, size, fields.data(), half) != n) return "decode_key count depends on max_fields";
        if (fields[half].data != canary.data || fields[half].len != canary.len)
            return "decode_key wrote past a short max_fields";
    }
    return "";
}

// A field list built from the input: NULLs, empty strings, short and long
// fields.
inline std::vector<std::string> fields_from(ByteReader &in, std::vector<bool> *nulls) {
    std::vector<std::string> values;
    size_t count = in.byte() % 24;
    for (size_t i = 0; i < count; i++) {
        uint8_t shape = in.byte();
        bool is_null = shape % 7 == 0;
        size_t max_len = shape % 17;
        if (shape % 5 == 0) {  // a longer field, up to 16 kB
            max_len = size_t(in.byte()) * 64;
            max_len += in.byte();
        }
        nulls->push_back(is_null);
        values.push_back(is_null ? std::string() : in.bytes(max_len));
    }
    return values;
}

// Encodes into a block of exactly encoded_key_size() bytes; false if
// encode_key writes another number of bytes.
inline bool encode_fields(const std::vector<std::string> &values, const std::vector<bool> &nulls,
                          std::string *key) {
    std::vector<KeyField> fields;
    for (size_t i = 0; i < values.size(); i++)
        fields.push_back(KeyField{values[i].data(), uint32_t(values[i].size()), bool(nulls[i])});
    size_t size = encoded_key_size(fields.data(), fields.size());
    std::unique_ptr<char[]> out(new char[size ? size : 1]);
    if (encode_key(fields.data(), fields.size(), out.get()) != size) return false;
    key->assign(out.get(), size);
    return true;
}

// Field lists survive encode + decode unchanged; two lists encode to the
// same bytes only if they are the same list.
inline std::string check_key_round_trip(const uint8_t *data, size_t size) {
    ByteReader in(data, size);
    std::vector<bool> nulls_a, nulls_b;
    std::vector<std::string> a = fields_from(in, &nulls_a);
    std::vector<std::string> b = fields_from(in, &nulls_b);
    std::string key_a, key_b;
    if (!encode_fields(a, nulls_a, &key_a) || !encode_fields(b, nulls_b, &key_b))
        return "encode_key wrote another size than encoded_key_size";

    auto copy = exact_copy(key_a.data(), key_a.size());
    std::vector<KeyField> out(a.size() + 1);
    int n = decode_key(copy.get(), key_a.size(), out.data(), out.size());
    if (n != int(a.size()))
        return "round trip: " + std::to_string(a.size()) + " fields came back as " + std::to_string(n);
    for (size_t i = 0; i < a.size(); i++) {
        if (out[i].is_null != nulls_a[i])
            return "round trip: NULL flag of field " + std::to_string(i) + " changed";
        if (std::string(out[i].data ? out[i].data : "", out[i].len) != a[i])
            return "round trip: field " + std::to_string(i) + " changed";
    }
    // Every strict prefix that cuts a field is rejected.
    if (!key_a.empty()) {
        size_t cut = size_t(in.u32()) % key_a.size();
        int m = decode_key(copy.get(), cut, nullptr, 0);
        size_t boundary = 0;
        bool at_boundary = cut == 0;
        for (size_t i = 0; i < a.size() && !at_boundary && boundary < cut; i++) {
            boundary += sizeof(uint32_t) + a[i].size();
            at_boundary = boundary == cut;
        }
        if (!at_boundary && m != -1) return "a truncated key decoded";
    }

    bool same_list = a == b && nulls_a == nulls_b;
    if (same_list != (key_a == key_b)) return "two different field lists share an encoding";
    return "";
}

// hash_bytes reads exactly its input, whatever the alignment, and is a
// function of the bytes only.
inline std::string check_hash(const uint8_t *data, size_t size) {
    auto copy = exact_copy(data, size);
    uint64_t h = hash_bytes(copy.get(), size);
    std::unique_ptr<char[]> shifted(new char[size + 3]);
    if (size) std::memcpy(shifted.get() + 3, data, size);
    if (hash_bytes(shifted.get() + 3, size) != h) return "hash depends on alignment";
    return "";
}

// ---- results ----------------------------------------------------------------

// ResultReader on arbitrary bytes: no crash; when it accepts them, every
// column and row it hands out lies inside the buffer, rows are 8-byte
// aligned, and the walk ends after at most nrows rows.
inline std::string check_result_decode(const uint8_t *data, size_t size) {
    auto copy = exact_copy(data, size);
    const char *buf = copy.get();
    ResultReader rd(buf, size);
    if (!rd.valid()) {
        const char *row;
        uint32_t len;
        if (rd.next_row(&row, &len)) return "an invalid result yields rows";
        return "";
    }
    if (size < sizeof(ResultHeader)) return "a result shorter than its header is valid";
    if (rd.kind() != ResultKind::Count && rd.kind() != ResultKind::Rows && rd.kind() != ResultKind::Error)
        return "unknown kind accepted";
    if (rd.kind() == ResultKind::Error) {
        for (const char *t : {rd.error_message(), rd.error_detail(), rd.error_hint()})
            if (!inside(t, std::strlen(t) + 1, buf, size)) return "an error text reaches past the buffer";
        if (rd.nrows() != 0) return "an error result has rows";
    }
    if (rd.kind() == ResultKind::Rows) {
        size_t cols = size_t(rd.ncolumns()) * sizeof(ColumnType);
        if (!inside(reinterpret_cast<const char *>(rd.columns()), cols, buf, size))
            return "column types reach past the buffer";
    }
    uint64_t rows = 0;
    const char *row;
    uint32_t len;
    while (rd.next_row(&row, &len)) {
        if (!inside(row, len, buf, size)) return "a row reaches past the buffer";
        if (reinterpret_cast<uintptr_t>(row) % 8 != 0) return "a row is not 8-byte aligned";
        if (++rows > rd.nrows()) return "more rows than the header says";
    }
    if (rd.next_row(&row, &len)) return "the row walk restarted after its end";
    return "";
}

// Results built from the input survive ResultWriter + ResultReader; a
// writer given too little room refuses instead of writing past it.
inline std::string check_result_round_trip(const uint8_t *data, size_t size) {
    ByteReader in(data, size);
    uint8_t family = in.byte();
    if (family % 8 == 1) {
        int32_t code = int32_t(in.u32());
        std::string texts[3];
        for (auto &t : texts) {
            t = in.bytes(in.byte() % 40);
            t.erase(std::remove(t.begin(), t.end(), '\0'), t.end());
        }
        size_t needed = error_result_size(texts[0].size(), texts[1].size(), texts[2].size());
        std::unique_ptr<char[]> buf(new char[needed]);
        if (ResultWriter(buf.get(), needed - 1).write_error(code, texts[0].c_str(), texts[1].c_str(), texts[2].c_str()))
            return "write_error wrote past a short buffer";
        ResultWriter w(buf.get(), needed);
        if (!w.write_error(code, texts[0].c_str(), texts[1].c_str(), texts[2].c_str()))
            return "write_error refused a buffer of the right size";
        ResultReader rd(buf.get(), w.size());
        if (!rd.valid() || rd.kind() != ResultKind::Error || rd.error_code() != code ||
            texts[0] != rd.error_message() || texts[1] != rd.error_detail() || texts[2] != rd.error_hint())
            return "error round trip";
        return "";
    }
    if (family % 4 == 0) {
        uint64_t high = in.u32();
        int64_t count = int64_t(high << 32 | in.u32());
        std::unique_ptr<char[]> buf(new char[sizeof(ResultHeader)]);
        ResultWriter w(buf.get(), sizeof(ResultHeader));
        if (!w.write_count(count)) return "write_count refused a buffer of the right size";
        if (w.add_row("x", 1)) return "a count result accepted a row";
        ResultReader rd(buf.get(), w.size());
        if (!rd.valid() || rd.kind() != ResultKind::Count || rd.count() != count) return "count round trip";
        return "";
    }

    std::vector<ColumnType> cols(in.byte() % 12);
    for (auto &c : cols) c = ColumnType{in.u32(), int32_t(in.u32())};
    std::vector<std::string> rows(in.byte() % 40);
    for (auto &r : rows) r = in.bytes(in.byte() % 3 == 0 ? size_t(in.byte()) * 16 : in.byte() % 24);

    size_t needed = result_prefix_size(uint32_t(cols.size()));
    for (auto &r : rows) needed += row_space(uint32_t(r.size()));
    std::unique_ptr<char[]> buf(new char[needed]);
    ResultWriter w(buf.get(), needed);
    if (!w.begin_rows(cols.data(), uint32_t(cols.size())))
        return "begin_rows refused a buffer of the right size";
    for (auto &r : rows)
        if (!w.add_row(r.data(), uint32_t(r.size()))) return "add_row refused a buffer of the right size";
    if (w.size() != needed) return "writer size differs from the computed size";
    if (w.add_row("", 0)) return "add_row wrote past a full buffer";

    ResultReader rd(buf.get(), w.size());
    if (!rd.valid() || rd.kind() != ResultKind::Rows) return "a written row result is not valid";
    if (rd.ncolumns() != cols.size() || rd.nrows() != rows.size()) return "column or row count changed";
    for (size_t i = 0; i < cols.size(); i++)
        if (rd.columns()[i].type_oid != cols[i].type_oid || rd.columns()[i].typmod != cols[i].typmod)
            return "column type changed";
    const char *row;
    uint32_t len;
    for (auto &r : rows) {
        if (!rd.next_row(&row, &len)) return "a row went missing";
        if (std::string(row, len) != r) return "a row changed";
    }
    if (rd.next_row(&row, &len)) return "an extra row appeared";

    // Too little room: the writer stops at the capacity, exactly.
    size_t short_cap = needed ? size_t(in.u32()) % needed : 0;
    std::unique_ptr<char[]> small(new char[short_cap ? short_cap : 1]);
    ResultWriter ws(small.get(), short_cap);
    bool ok = ws.begin_rows(cols.data(), uint32_t(cols.size()));
    for (size_t i = 0; ok && i < rows.size(); i++) ok = ws.add_row(rows[i].data(), uint32_t(rows[i].size()));
    if (ok) return "a writer with too little room accepted everything";
    if (ws.size() > short_cap) return "a writer with too little room went past it";
    return "";
}

// Every property on one input: what the libFuzzer target and the ctest run.
inline std::string check_all(const uint8_t *data, size_t size) {
    for (auto check :
         {check_key_decode, check_key_round_trip, check_hash, check_result_decode, check_result_round_trip}) {
        std::string failure = check(data, size);
        if (!failure.empty()) return failure;
    }
    return "";
}

}  // namespace pgmemo::fuzz
