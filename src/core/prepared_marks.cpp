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

std::vector<unsigned char> encode_prepared_marks(const PreparedMarks &marks) {
    Header h{};
    memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kVersion;
    h.xid = marks.xid;
    h.dbid = marks.dbid;
    h.gid_len = uint32_t(marks.gid.size());
    h.nslots = uint32_t(marks.slots.size());
    std::vector<unsigned char> out(sizeof h + h.gid_len + sizeof(uint32_t) * h.nslots + sizeof(uint64_t));
    unsigned char *p = out.data();
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    memcpy(p, marks.gid.data(), h.gid_len);
    p += h.gid_len;
    if (h.nslots) memcpy(p, marks.slots.data(), sizeof(uint32_t) * h.nslots);
    p += sizeof(uint32_t) * h.nslots;
    uint64_t sum = hash_bytes(out.data(), size_t(p - out.data()));
    memcpy(p, &sum, sizeof sum);
    return out;
}

bool decode_prepared_marks(const unsigned char *data, size_t len, PreparedMarks *out) {
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
    out->gid.assign(reinterpret_cast<const char *>(data + sizeof h), h.gid_len);
    out->slots.resize(h.nslots);
    if (h.nslots) memcpy(out->slots.data(), data + sizeof h + h.gid_len, sizeof(uint32_t) * h.nslots);
    return true;
}

}  // namespace pgmemo
