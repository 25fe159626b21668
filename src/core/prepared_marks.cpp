#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "prepared_marks.hpp"

#include <cstring>

#include "hash.hpp"

namespace pgmemo {

namespace {

constexpr char kMagic[8] = {'P', 'G', 'M', 'E', 'M', 'O', '2', 'P'};
constexpr uint32_t kVersion = 1;

struct Header {
    char magic[8];
    uint32_t version;
    uint32_t xid;
    uint32_t dbid;
    uint32_t gid_len;
    uint32_t nslots;
};

}  // namespace

size_t encoded_prepared_marks_size(const PreparedMarks &marks) noexcept {
    return sizeof(Header) + marks.gid_len + sizeof(uint32_t) * size_t(marks.nslots) + sizeof(uint64_t);
}

void encode_prepared_marks(const PreparedMarks &marks, unsigned char *out) noexcept {
    Header h{};
    memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kVersion;
    h.xid = marks.xid;
    h.dbid = marks.dbid;
    h.gid_len = marks.gid_len;
    h.nslots = marks.nslots;
    unsigned char *p = out;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    if (h.gid_len) memcpy(p, marks.gid, h.gid_len);
    p += h.gid_len;
    if (h.nslots) memcpy(p, marks.slots, sizeof(uint32_t) * h.nslots);
    p += sizeof(uint32_t) * h.nslots;
    uint64_t sum = hash_bytes(out, size_t(p - out));
    memcpy(p, &sum, sizeof sum);
}

bool decode_prepared_marks(const unsigned char *data, size_t len, PreparedMarks *out, uint32_t *slots_out) noexcept {
    Header h;
    if (len < sizeof h + sizeof(uint64_t)) return false;
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion) return false;
    size_t body = sizeof h + size_t(h.gid_len) + sizeof(uint32_t) * size_t(h.nslots);
    if (h.gid_len > 1024 || h.nslots > (1u << 20) || len != body + sizeof(uint64_t)) return false;
    uint64_t sum;
    memcpy(&sum, data + body, sizeof sum);
    if (sum != hash_bytes(data, body)) return false;
    out->xid = h.xid;
    out->dbid = h.dbid;
    out->gid = reinterpret_cast<const char *>(data + sizeof h);
    out->gid_len = h.gid_len;
    if (h.nslots) memcpy(slots_out, data + sizeof h + h.gid_len, sizeof(uint32_t) * h.nslots);
    out->slots = slots_out;
    out->nslots = h.nslots;
    return true;
}

}  // namespace pgmemo
