// Cache keys: a self-delimiting byte encoding of the fields that decide a
// result (database, role, cache name, query text, parameters, ...).
//
// Every field is written as a 4-byte length followed by its bytes, so no two
// different field lists can encode to the same bytes ("ab","c" != "a","bc").
// A NULL field has its own length marker, distinct from the empty string.
// The encoded key is the identity of a cache entry and, later, of a flight.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

struct KeyField {
    const char *data;  // may be null when len == 0 or is_null
    uint32_t len;
    bool is_null;
};

// Bytes needed to encode these fields.
size_t encoded_key_size(const KeyField *fields, size_t nfields) noexcept;

// Writes the encoding into out, which holds encoded_key_size() bytes.
// Returns the number of bytes written.
size_t encode_key(const KeyField *fields, size_t nfields, char *out) noexcept;

// Splits an encoded key back into up to max_fields fields (views into key).
// Returns the number of fields, or -1 if the bytes are not a valid encoding.
int decode_key(const char *key, size_t len, KeyField *fields, size_t max_fields) noexcept;

}  // namespace pgmemo
