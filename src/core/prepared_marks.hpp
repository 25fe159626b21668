// The state file of a prepared transaction's marks (two-phase commit): what
// COMMIT PREPARED must announce and bump, kept across restarts and crashes.
// Plain C++: no PostgreSQL headers. The glue (src/pg/two_phase.cpp) writes
// and reads the bytes; this file defines them.
//
// Layout (host byte order: the file never leaves its server):
//   magic "PGMEMO2P", format version, transaction id, database oid,
//   gid length, slot count, the gid's bytes, the slots (uint32 each),
//   XXH3-64 of every byte before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pgmemo {

struct PreparedMarks {
    uint32_t xid = 0;
    uint32_t dbid = 0;
    std::string gid;
    std::vector<uint32_t> slots;
};

// The file's bytes for these marks.
std::vector<unsigned char> encode_prepared_marks(const PreparedMarks &marks);

// Parses a file's bytes; false (out untouched) unless they are exactly one
// well-formed file of this format version with a matching checksum.
bool decode_prepared_marks(const unsigned char *data, size_t len, PreparedMarks *out);

}  // namespace pgmemo
