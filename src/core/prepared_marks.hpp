// The state file of a prepared transaction's marks (two-phase commit): what
// COMMIT PREPARED must announce and bump, kept across restarts and crashes.
// Plain C++: no PostgreSQL headers. The glue (src/pg/durability/two_phase.cpp) writes
// and reads the bytes; this file defines them.
//
// No allocation, no exception: the glue calls this between calls that can
// raise ERROR, so it owns every byte (palloc'd) and this only fills them.
//
// Layout (host byte order: the file never leaves its server):
//   magic "PGMEMO2P", format version, transaction id, database oid,
//   gid length, slot count, the gid's bytes, the slots (uint32 each),
//   XXH3-64 of every byte before it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgmemo {

// A view: gid and slots belong to the caller.
struct PreparedMarks {
    uint32_t xid = 0;
    uint32_t dbid = 0;
    const char *gid = nullptr;  // gid_len bytes, not NUL-terminated
    uint32_t gid_len = 0;
    const uint32_t *slots = nullptr;
    uint32_t nslots = 0;
};

// How many bytes the file of these marks takes.
size_t encoded_prepared_marks_size(const PreparedMarks &marks) noexcept;

// Writes the file's bytes to out, which holds encoded_prepared_marks_size().
void encode_prepared_marks(const PreparedMarks &marks, unsigned char *out) noexcept;

// Parses a file's bytes; false (*out untouched) unless they are exactly one
// well-formed file of this format version with a matching checksum. On
// success out->gid points into data, and the slots are copied to
// slots_out, which holds at least len / sizeof(uint32_t) of them (what a
// file of len bytes can hold).
bool decode_prepared_marks(const unsigned char *data, size_t len, PreparedMarks *out, uint32_t *slots_out) noexcept;

}  // namespace pgmemo
