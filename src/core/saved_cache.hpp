// Warm restart's file: the cache as saved at a clean shutdown, and the rule
// for trusting it at the next start. Plain C++, no PostgreSQL headers; the
// glue (src/pg/durability/warm_restart.cpp) does the file I/O and reads pg_control.
//
// Layout (native byte order; 8-byte fields on 8-byte offsets):
//   header    magic u32, format version u32, build id u64, system
//             identifier u64, checkpoint LSN u64, timeline u32, cache size
//             (kB) u32, pg_control fingerprint u64, saved at i64, counter
//             count u32 (= Generations::kSlots), reserved u32
//   counters  every generation counter, u64 each, raw values
//   entries   per entry: tag u32 (1), length u32 (of the body), then the
//             body: hash u64, stamped_at i64, dbid u32, key_len u32, ndeps
//             u32, meta_len u32, payload_len u32, name_len u32, deps
//             (DepStamp each), key, meta, payload, cache name (each padded
//             to 8 with zeros; name_len 0 is the overflow row "(other)")
//   end       tag u32 (2), reserved u32, entry count u64
//   checksum  XXH3-64 of every byte before it
//
// Bump kSavedCacheFormatVersion whenever this layout, or the encoding of
// keys, meta or results (key.hpp, result_format.hpp, the glue's meta),
// changes: a file is restored only by a build that reads it exactly as it
// was written. (The build id also changes whenever pg_memo's library file
// does; see src/pg/durability/warm_restart.cpp.)
//
// noexcept means "throws no C++ exception" (see StoreLocks in store.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "generations.hpp"
#include "store.hpp"

namespace pgmemo {

constexpr uint32_t kSavedCacheMagic = 0x434d4750;  // "PGMC" in little-endian bytes
constexpr uint32_t kSavedCacheFormatVersion = 2;

// What the file says about where and when it was written.
struct SavedCacheHeader {
    uint64_t build_id = 0;             // saved_cache_core_fingerprint() mixed with the library's identity
    uint64_t system_identifier = 0;    // pg_control's
    uint64_t checkpoint_lsn = 0;       // the shutdown checkpoint's location
    uint32_t timeline = 0;             // and its timeline
    uint32_t cache_size_kb = 0;        // pg_memo.cache_size
    uint64_t control_fingerprint = 0;  // hash of pg_control's bytes
    Micros saved_at = 0;
    // What a query's result can depend on outside WAL and the library: the
    // C library (its collations) and the time zone data; a hash.
    uint32_t environment = 0;
};

// One entry as written and as read back. Pointers are valid during
// SavedCacheWriter::add_entry, or until the next SavedCacheReader call.
struct SavedEntry {
    uint64_t hash = 0;
    const char *key = nullptr;
    uint32_t key_len = 0;
    const DepStamp *deps = nullptr;
    uint32_t ndeps = 0;
    const char *meta = nullptr;
    uint32_t meta_len = 0;
    const char *payload = nullptr;
    uint32_t payload_len = 0;
    Micros stamped_at = 0;
    // The stats row it counts in, by name: slots are renumbered at every
    // start. An empty name is the overflow row (StatsTable::kOverflowSlot).
    uint32_t dbid = 0;
    const char *cache_name = nullptr;
    uint32_t cache_name_len = 0;

    // A stored entry as it is saved (its stats row's name set apart).
    static SavedEntry of(uint64_t hash, const char *key, uint32_t key_len, const EntryView &e) noexcept {
        SavedEntry s;
        s.hash = hash;
        s.key = key;
        s.key_len = key_len;
        s.deps = e.deps;
        s.ndeps = e.ndeps;
        s.meta = e.meta;
        s.meta_len = e.meta_len;
        s.payload = e.payload;
        s.payload_len = e.payload_len;
        s.stamped_at = e.stamped_at;
        return s;
    }

    // What inserting it back takes, counted in stats_slot.
    EntryParts parts(uint32_t stats_slot) const noexcept {
        EntryParts p;
        p.hash = hash;
        p.key = key;
        p.key_len = key_len;
        p.deps = deps;
        p.ndeps = ndeps;
        p.meta = meta;
        p.meta_len = meta_len;
        p.payload = payload;
        p.payload_len = payload_len;
        p.stamped_at = stamped_at;
        p.stats_slot = stats_slot;
        return p;
    }
};

enum class SavedCacheStatus {
    Ok,
    End,               // next_entry: the end record, with the right count and checksum
    ReadError,         // the input failed
    Truncated,         // the input ended early
    NotACacheFile,     // wrong magic number
    WrongVersion,      // another format version
    ChecksumMismatch,  // the bytes are not the ones written
    Malformed,         // a record that cannot have been written
    OutOfMemory,       // no room for a record
};

// For log messages: "the file is truncated", ...
const char *describe(SavedCacheStatus status) noexcept;

// Where a saved cache is written (the .tmp file, in the glue).
class SavedCacheOutput {
public:
    virtual bool write(const void *data, size_t len) noexcept = 0;  // false on an I/O error

protected:
    ~SavedCacheOutput() = default;
};

// Where a saved cache is read from.
class SavedCacheInput {
public:
    // Reads up to len bytes; fewer only at the end of the input or on an
    // error (failed() tells which).
    virtual size_t read(void *buf, size_t len) noexcept = 0;
    virtual bool failed() const noexcept = 0;
    // Room for one record of len bytes, 8-byte aligned, valid until the next
    // call; null when out of memory.
    virtual char *record_space(size_t len) noexcept = 0;

protected:
    ~SavedCacheInput() = default;
};

// The part of the build id the core decides: the format version and what
// the hash functions make of fixed inputs (which counter a table maps to,
// which bucket a key goes to). A build that hashes differently must not
// reuse counters saved by slot number.
uint64_t saved_cache_core_fingerprint() noexcept;

// Whether an entry is worth saving: current (no counter moved, no commit in
// progress on one of them) and not an error result (pg_memo.error_ttl
// keeps those briefly; they are not carried over a restart).
bool worth_saving(const EntryView &entry, const Generations &gens) noexcept;

// Writes header, counters, entries and end, in that order, keeping the
// checksum as it goes. Trivially destructible (the glue may keep it in a
// frame an ERROR unwinds).
class SavedCacheWriter {
public:
    explicit SavedCacheWriter(SavedCacheOutput &out) noexcept;

    // Every counter as it is now; a counter with a commit still in progress
    // (none, after a clean shutdown) is written one step ahead, so no entry
    // stamped before that commit can be current after a restore.
    bool begin(const SavedCacheHeader &header, const Generations &gens) noexcept;
    bool add_entry(const SavedEntry &entry) noexcept;
    bool finish() noexcept;  // the end record and the checksum
    uint64_t entries() const noexcept { return entries_; }

private:
    bool put(const void *data, size_t len) noexcept;
    bool pad_to_8(size_t written) noexcept;

    SavedCacheOutput &out_;
    uint64_t entries_ = 0;
    bool ok_ = true;
    alignas(64) unsigned char checksum_state_[576];  // XXH3_state_t (static_assert in the .cpp)
};

// Reads a file back, in the order it was written. Checks structure and,
// at the end record, the checksum; verify_saved_cache_checksum checks the
// checksum alone first, before anything is applied.
class SavedCacheReader {
public:
    explicit SavedCacheReader(SavedCacheInput &in) noexcept;

    // Magic and format version.
    SavedCacheStatus read_header(SavedCacheHeader *header) noexcept;
    // Restores every counter (Generations::restore).
    SavedCacheStatus read_counters(Generations &gens) noexcept;
    // Ok with *entry filled, End after the last one, or what is wrong. The
    // deps come back with kDeltaStamp cleared: the delta log is not saved,
    // so no restored entry is kept by deltas.
    SavedCacheStatus next_entry(SavedEntry *entry, uint64_t max_record_bytes) noexcept;

private:
    SavedCacheStatus get(void *buf, size_t len) noexcept;  // reads and hashes

    SavedCacheInput &in_;
    uint64_t entries_ = 0;
    alignas(64) unsigned char checksum_state_[576];
};

// Reads the whole input: Ok when its last 8 bytes are the checksum of the
// rest.
SavedCacheStatus verify_saved_cache_checksum(SavedCacheInput &in) noexcept;

// What the server looks like at startup, from pg_control and the data
// directory (the glue gathers it).
enum class ControlState {
    CleanShutdown,    // DB_SHUTDOWNED: a primary's shutdown checkpoint is the last record
    StandbyShutdown,  // DB_SHUTDOWNED_IN_RECOVERY
    ArchiveRecovery,  // DB_IN_ARCHIVE_RECOVERY (a backup, pg_rewind)
    NotShutDown,      // anything else: crash recovery runs first
};

struct ServerFacts {
    bool control_ok = false;  // pg_control read, with a valid CRC
    ControlState state = ControlState::NotShutDown;
    uint64_t system_identifier = 0;
    uint64_t checkpoint_lsn = 0;
    uint32_t timeline = 0;
    uint64_t control_fingerprint = 0;
    bool backup_label = false;
    bool recovery_signal = false;
    bool standby_signal = false;
    uint32_t cache_size_kb = 0;
    uint64_t build_id = 0;
    uint32_t environment = 0;
};

enum class Refusal {
    None,  // restore
    ControlUnreadable,
    OtherServer,
    BackupLabel,
    RecoverySignal,
    StandbySignal,
    NotShutDown,
    StandbyShutdown,
    ArchiveRecovery,
    CheckpointMoved,
    ControlFileChanged,
    CacheSizeChanged,
    BuildChanged,
    EnvironmentChanged,
};

// Why a file with this header must not be restored now (None: it may).
// Restored only when the server starts from the very shutdown checkpoint
// the file was saved after, with nothing to replay: see the safety
// argument at the top of src/pg/durability/warm_restart.cpp.
Refusal refusal_to_restore(const SavedCacheHeader &saved, const ServerFacts &now) noexcept;

}  // namespace pgmemo
