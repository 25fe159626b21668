#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "key.hpp"

#include <cstring>

namespace pgmemo {

namespace {
constexpr uint32_t kNullMarker = 0xFFFFFFFFu;
}

size_t encoded_key_size(const KeyField *fields, size_t nfields) noexcept {
    size_t total = 0;
    for (size_t i = 0; i < nfields; i++) total += sizeof(uint32_t) + (fields[i].is_null ? 0 : fields[i].len);
    return total;
}

size_t encode_key(const KeyField *fields, size_t nfields, char *out) noexcept {
    char *p = out;
    for (size_t i = 0; i < nfields; i++) {
        uint32_t marker = fields[i].is_null ? kNullMarker : fields[i].len;
        std::memcpy(p, &marker, sizeof marker);
        p += sizeof marker;
        if (!fields[i].is_null && fields[i].len > 0) {
            std::memcpy(p, fields[i].data, fields[i].len);
            p += fields[i].len;
        }
    }
    return size_t(p - out);
}

int decode_key(const char *key, size_t len, KeyField *fields, size_t max_fields) noexcept {
    size_t pos = 0, n = 0;
    while (pos < len) {
        uint32_t marker;
        if (len - pos < sizeof marker) return -1;
        std::memcpy(&marker, key + pos, sizeof marker);
        pos += sizeof marker;
        bool is_null = marker == kNullMarker;
        uint32_t flen = is_null ? 0 : marker;
        if (len - pos < flen) return -1;
        if (n < max_fields) fields[n] = KeyField{key + pos, flen, is_null};
        n++;
        pos += flen;
    }
    return int(n);
}

}  // namespace pgmemo
