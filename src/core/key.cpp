#include "key.hpp"

#include <cstring>

namespace pgmemo {

namespace {
constexpr uint32_t kNullMarker = 0xFFFFFFFFu;
}

size_t encoded_key_size(const KeyField *fields, size_t nfields) noexcept {
    size_t total = 0;
    for (size_t i = 0; i < nfields; i++)
        total += sizeof(uint32_t) + (fields[i].is_null ? 0 : fields[i].len);
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

}  // namespace pgmemo
