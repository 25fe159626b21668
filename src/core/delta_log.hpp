// The delta log: the rows committed statements changed in tables watched
// with deltas, kept so that readers can carry entries forward instead of
// recomputing them (docs/consistency.md, "Deltas"). Plain C++, no
// PostgreSQL headers.
//
// Memory
//   A ring of a fixed number of bytes. Records are appended at the head and
//   never freed: the ring simply overwrites the oldest ones. A record is
//   named by its position, the monotone byte offset at which it was written;
//   it is intact while the head has not run a whole ring past it.
//
// A record and the generations
//   A committing transaction reserves and fills one record per table at
//   pre-commit (generation 0: not published). After its commit is visible it
//   bumps the table's generation counter and publishes the record under the
//   value that bump produced, in one step under the exclusive lock, so that
//   a reader holding the shared lock sees a counter value and its record
//   together. A bump made without a record (DDL, TRUNCATE, a statement past
//   pg_memo.max_delta_rows, any other table on the same counter) leaves a
//   gap: a value with no record, which no reader can carry an entry across.
//   Each slot's published records are chained newest first (prev), so a
//   reader walks from the counter's current value down to an entry's stamp
//   and finds every value on the way, or a gap.
//
// Locking protocol (one LWLock in PostgreSQL, held by the caller):
//   - exclusive: reserve (it moves the head and may overwrite old records),
//     filling a reserved record, publish (with the counter's bump);
//   - shared: collect, and reading the records it returns until released.
//   - The newest[] chain heads and every record field are protected by it.
// noexcept means "throws no C++ exception" (see StoreLocks in store.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "generations.hpp"

namespace pgmemo {

struct DeltaRecord {
    uint64_t position;    // where it was written: its name
    uint64_t generation;  // the counter value its commit's bump made; 0 until published
    uint64_t prev;        // position + 1 of the slot's previous published record; 0: none
    uint32_t length;      // bytes, header included, 8-aligned
    uint32_t slot;        // generation counter
    uint32_t dbid;
    uint32_t relid;
    uint32_t xid;         // the committing transaction (top level)
    uint32_t nold;        // row versions before the writes, then
    uint32_t nnew;        // row versions after them
    uint32_t data_len;    // bytes of rows after the header

    // Rows follow the header: for each, its length (8 bytes, so that the
    // row stays 8-aligned for PostgreSQL to read in place) and its bytes,
    // padded to 8. The old versions come first.
    char *data() noexcept { return reinterpret_cast<char *>(this + 1); }
    const char *data() const noexcept { return reinterpret_cast<const char *>(this + 1); }
};

// Walks a record's rows.
class DeltaRowReader {
public:
    explicit DeltaRowReader(const DeltaRecord &r) noexcept
        : at_(r.data()), end_(r.data() + r.data_len), left_(r.nold + r.nnew), nold_(r.nold), index_(0) {}
    // False at the end. is_new says whether the row is a new version.
    bool next(const char **row, uint32_t *len, bool *is_new) noexcept;

private:
    const char *at_;
    const char *end_;
    uint32_t left_;
    uint32_t nold_;
    uint32_t index_;
};

// Fills a reserved record's rows.
class DeltaRowWriter {
public:
    explicit DeltaRowWriter(DeltaRecord *r) noexcept : r_(r), at_(r->data()) {}
    void add(const void *row, uint32_t len) noexcept;  // old versions first

    static uint64_t row_space(uint32_t len) noexcept { return (uint64_t(len) + 8 + 7) & ~uint64_t(7); }

private:
    DeltaRecord *r_;
    char *at_;
};

enum class Collected {
    Complete,  // every value from the stamp to the current one has a record
    Gap,       // some value has none, or its record was overwritten
    TooMany,   // more records than the caller's array holds
};

class DeltaLog {
public:
    static size_t shared_size(uint64_t ring_bytes) noexcept;
    static void initialize(void *mem, uint64_t ring_bytes) noexcept;
    static DeltaLog attach(void *mem) noexcept;

    // The largest record reserve() accepts: a quarter of the ring, so that a
    // record survives at least a few commits after it.
    uint64_t max_record_bytes() const noexcept;

    // Exclusive lock. A record of data_len bytes of rows, unpublished, or
    // nullptr if it is larger than max_record_bytes.
    DeltaRecord *reserve(uint32_t slot, uint32_t dbid, uint32_t relid, uint32_t xid, uint32_t nold,
                         uint32_t nnew, uint64_t data_len) noexcept;

    // Exclusive lock. Whether the record at position is still intact.
    bool intact(uint64_t position) const noexcept;

    // Exclusive lock, right after the counter's bump produced generation.
    // False if the ring has overwritten the record meanwhile (the bump then
    // stays a gap).
    bool publish(uint64_t position, uint64_t generation) noexcept;

    // Shared lock. The records of slot with generations in (stamp, current],
    // newest first, into out[0..*count). current is the counter's value,
    // read under the same lock.
    Collected collect(uint32_t slot, uint64_t stamp, uint64_t current, const DeltaRecord **out, uint32_t capacity,
                      uint32_t *count) const noexcept;

    uint64_t records_written() const noexcept;  // shared lock

    // No lock: a table's rows committed without a record (too many rows,
    // too large, rolled back in a savepoint, another write path).
    void note_fallback() noexcept;
    uint64_t fallbacks() const noexcept;

private:
    struct Shared;
    explicit DeltaLog(Shared *s) noexcept : s_(s) {}
    DeltaRecord *at(uint64_t position) const noexcept;
    Shared *s_;
};

}  // namespace pgmemo
