#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "saved_cache.hpp"

#include <cstring>
#include <new>

#include "hash.hpp"
#include "result_format.hpp"
#include "stats.hpp"

// xxHash's streaming XXH3 for the checksum, compiled into this file as
// hash.cpp compiles the one-shot hash (static functions, no library).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace pgmemo {

static_assert(sizeof(XXH3_state_t) <= 576 && alignof(XXH3_state_t) <= 64, "checksum state storage");
static_assert(sizeof(DepStamp) == 16, "DepStamp layout is part of the file format");

namespace {

constexpr uint32_t kEntryTag = 1;
constexpr uint32_t kEndTag = 2;
constexpr size_t kHeaderBytes = 64;
constexpr size_t kEntryFixedBytes = 40;  // hash .. name_len

XXH3_state_t *state_of(unsigned char *storage) { return reinterpret_cast<XXH3_state_t *>(storage); }

struct RawHeader {
    uint32_t magic;
    uint32_t version;
    uint64_t build_id;
    uint64_t system_identifier;
    uint64_t checkpoint_lsn;
    uint32_t timeline;
    uint32_t cache_size_kb;
    uint64_t control_fingerprint;
    int64_t saved_at;
    uint32_t counters;
    uint32_t environment;
};
static_assert(sizeof(RawHeader) == kHeaderBytes, "header layout");

struct RawEntry {
    uint64_t hash;
    int64_t stamped_at;
    uint32_t dbid;
    uint32_t key_len;
    uint32_t ndeps;
    uint32_t meta_len;
    uint32_t payload_len;
    uint32_t name_len;
};
static_assert(sizeof(RawEntry) == kEntryFixedBytes, "entry layout");

struct RawEnd {
    uint32_t tag;
    uint32_t reserved;
    uint64_t entries;
};

// The body of an entry record: what follows its tag and length.
uint64_t entry_body_bytes(const RawEntry &r) noexcept {
    return kEntryFixedBytes + sizeof(DepStamp) * uint64_t(r.ndeps) + align8(r.key_len) + align8(r.meta_len) +
           align8(r.payload_len) + align8(r.name_len);
}

bool is_error_result(const char *payload, uint32_t len) noexcept {
    ResultKind kind;
    if (len < sizeof(ResultHeader)) return false;
    std::memcpy(&kind, payload + offsetof(ResultHeader, kind), sizeof kind);
    return kind == ResultKind::Error;
}

}  // namespace

const char *describe(SavedCacheStatus status) noexcept {
    switch (status) {
        case SavedCacheStatus::Ok: return "no error";
        case SavedCacheStatus::End: return "no error (end of file)";
        case SavedCacheStatus::ReadError: return "the file could not be read";
        case SavedCacheStatus::Truncated: return "the file is truncated";
        case SavedCacheStatus::NotACacheFile: return "the file is not a pg_memo saved cache (wrong magic number)";
        case SavedCacheStatus::WrongVersion: return "the file has another format version";
        case SavedCacheStatus::ChecksumMismatch: return "the file is damaged (its checksum does not match)";
        case SavedCacheStatus::Malformed: return "the file is damaged (a record is malformed)";
        case SavedCacheStatus::OutOfMemory: return "out of memory while reading the file";
    }
    return "unknown error";
}

uint64_t saved_cache_core_fingerprint() noexcept {
    static const char probe[] = "pg_memo saved cache";
    uint64_t fp = hash_bytes(probe, sizeof probe - 1);
    fp = hash_mix(fp, Generations::slot_of(1, GenerationKind::Relation, 16384));
    fp = hash_mix(fp, Generations::slot_of(5, GenerationKind::Definition, 1259));
    fp = hash_mix(fp, (uint64_t(Generations::kSlots) << 32) | kSavedCacheFormatVersion);
    return fp;
}

bool worth_saving(const EntryView &e, const Generations &gens) noexcept {
    if (gens.check(e.deps, e.ndeps) != Generations::StampState::Current) return false;
    return !is_error_result(e.payload, e.payload_len);
}

// ---- writing

SavedCacheWriter::SavedCacheWriter(SavedCacheOutput &out) noexcept : out_(out) {
    XXH3_64bits_reset(state_of(checksum_state_));
}

bool SavedCacheWriter::put(const void *data, size_t len) noexcept {
    if (!ok_ || len == 0) return ok_;
    XXH3_64bits_update(state_of(checksum_state_), data, len);
    ok_ = out_.write(data, len);
    return ok_;
}

bool SavedCacheWriter::pad_to_8(size_t written) noexcept {
    static const char zeros[8] = {};
    return put(zeros, align8(written) - written);
}

bool SavedCacheWriter::begin(const SavedCacheHeader &h, const Generations &gens) noexcept {
    RawHeader raw{};
    raw.magic = kSavedCacheMagic;
    raw.version = kSavedCacheFormatVersion;
    raw.build_id = h.build_id;
    raw.environment = h.environment;
    raw.system_identifier = h.system_identifier;
    raw.checkpoint_lsn = h.checkpoint_lsn;
    raw.timeline = h.timeline;
    raw.cache_size_kb = h.cache_size_kb;
    raw.control_fingerprint = h.control_fingerprint;
    raw.saved_at = h.saved_at;
    raw.counters = Generations::kSlots;
    if (!put(&raw, sizeof raw)) return false;

    uint64_t chunk[512];
    for (uint32_t base = 0; base < Generations::kSlots; base += 512) {
        for (uint32_t i = 0; i < 512; i++) {
            uint32_t slot = base + i;
            // Pending read first: once it reads zero, that commit's bump is in the counter.
            bool pending = gens.commit_pending(slot);
            chunk[i] = gens.read(slot) + (pending ? 1 : 0);
        }
        if (!put(chunk, sizeof chunk)) return false;
    }
    return true;
}

bool SavedCacheWriter::add_entry(const SavedEntry &e) noexcept {
    RawEntry raw{e.hash, e.stamped_at, e.dbid, e.key_len, e.ndeps, e.meta_len, e.payload_len, e.cache_name_len};
    uint64_t body = entry_body_bytes(raw);
    if (body > UINT32_MAX) return true;  // cannot be in a store (entries are at most half the arena)
    uint32_t head[2] = {kEntryTag, uint32_t(body)};
    put(head, sizeof head);
    put(&raw, sizeof raw);
    put(e.deps, sizeof(DepStamp) * e.ndeps);
    put(e.key, e.key_len);
    pad_to_8(e.key_len);
    put(e.meta, e.meta_len);
    pad_to_8(e.meta_len);
    put(e.payload, e.payload_len);
    pad_to_8(e.payload_len);
    put(e.cache_name, e.cache_name_len);
    pad_to_8(e.cache_name_len);
    if (ok_) entries_++;
    return ok_;
}

bool SavedCacheWriter::finish() noexcept {
    RawEnd end{kEndTag, 0, entries_};
    if (!put(&end, sizeof end)) return false;
    uint64_t checksum = XXH3_64bits_digest(state_of(checksum_state_));
    ok_ = out_.write(&checksum, sizeof checksum);  // not part of what it sums
    return ok_;
}

// ---- reading

SavedCacheReader::SavedCacheReader(SavedCacheInput &in) noexcept : in_(in) {
    XXH3_64bits_reset(state_of(checksum_state_));
}

SavedCacheStatus SavedCacheReader::get(void *buf, size_t len) noexcept {
    if (len == 0) return SavedCacheStatus::Ok;
    if (in_.read(buf, len) != len) return in_.failed() ? SavedCacheStatus::ReadError : SavedCacheStatus::Truncated;
    XXH3_64bits_update(state_of(checksum_state_), buf, len);
    return SavedCacheStatus::Ok;
}

SavedCacheStatus SavedCacheReader::read_header(SavedCacheHeader *h) noexcept {
    RawHeader raw;
    SavedCacheStatus s = get(&raw, sizeof raw);
    if (s != SavedCacheStatus::Ok) return s;
    if (raw.magic != kSavedCacheMagic) return SavedCacheStatus::NotACacheFile;
    if (raw.version != kSavedCacheFormatVersion) return SavedCacheStatus::WrongVersion;
    if (raw.counters != Generations::kSlots) return SavedCacheStatus::Malformed;
    h->build_id = raw.build_id;
    h->environment = raw.environment;
    h->system_identifier = raw.system_identifier;
    h->checkpoint_lsn = raw.checkpoint_lsn;
    h->timeline = raw.timeline;
    h->cache_size_kb = raw.cache_size_kb;
    h->control_fingerprint = raw.control_fingerprint;
    h->saved_at = raw.saved_at;
    return SavedCacheStatus::Ok;
}

SavedCacheStatus SavedCacheReader::read_counters(Generations &gens) noexcept {
    uint64_t chunk[512];
    for (uint32_t base = 0; base < Generations::kSlots; base += 512) {
        SavedCacheStatus s = get(chunk, sizeof chunk);
        if (s != SavedCacheStatus::Ok) return s;
        for (uint32_t i = 0; i < 512; i++) gens.restore(base + i, chunk[i]);
    }
    return SavedCacheStatus::Ok;
}

SavedCacheStatus SavedCacheReader::next_entry(SavedEntry *e, uint64_t max_record_bytes) noexcept {
    uint32_t head[2];
    SavedCacheStatus s = get(head, sizeof head);
    if (s != SavedCacheStatus::Ok) return s;

    if (head[0] == kEndTag) {
        uint64_t count;
        if (head[1] != 0) return SavedCacheStatus::Malformed;
        if ((s = get(&count, sizeof count)) != SavedCacheStatus::Ok) return s;
        if (count != entries_) return SavedCacheStatus::Malformed;
        uint64_t expected = XXH3_64bits_digest(state_of(checksum_state_)), stored;
        if (in_.read(&stored, sizeof stored) != sizeof stored)
            return in_.failed() ? SavedCacheStatus::ReadError : SavedCacheStatus::Truncated;
        if (stored != expected) return SavedCacheStatus::ChecksumMismatch;
        char extra;
        if (in_.read(&extra, 1) != 0) return SavedCacheStatus::Malformed;  // bytes after the checksum
        return in_.failed() ? SavedCacheStatus::ReadError : SavedCacheStatus::End;
    }
    if (head[0] != kEntryTag || head[1] < kEntryFixedBytes || head[1] % 8 != 0 || head[1] > max_record_bytes)
        return SavedCacheStatus::Malformed;

    char *body = in_.record_space(head[1]);
    if (!body) return SavedCacheStatus::OutOfMemory;
    if ((s = get(body, head[1])) != SavedCacheStatus::Ok) return s;

    RawEntry raw;
    std::memcpy(&raw, body, sizeof raw);
    if (entry_body_bytes(raw) != head[1] || raw.key_len == 0 || raw.name_len > kMaxCacheNameLen)
        return SavedCacheStatus::Malformed;

    auto *deps = reinterpret_cast<DepStamp *>(body + kEntryFixedBytes);
    for (uint32_t i = 0; i < raw.ndeps; i++) {
        if (deps[i].slot >= Generations::kSlots) return SavedCacheStatus::Malformed;
        deps[i].flags &= ~kDeltaStamp;
    }
    const char *p = body + kEntryFixedBytes + sizeof(DepStamp) * uint64_t(raw.ndeps);
    e->hash = raw.hash;
    e->stamped_at = raw.stamped_at;
    e->dbid = raw.dbid;
    e->deps = deps;
    e->ndeps = raw.ndeps;
    e->key = p;
    e->key_len = raw.key_len;
    p += align8(raw.key_len);
    e->meta = p;
    e->meta_len = raw.meta_len;
    p += align8(raw.meta_len);
    e->payload = p;
    e->payload_len = raw.payload_len;
    p += align8(raw.payload_len);
    e->cache_name = p;
    e->cache_name_len = raw.name_len;
    entries_++;
    return SavedCacheStatus::Ok;
}

SavedCacheStatus verify_saved_cache_checksum(SavedCacheInput &in) noexcept {
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    // The last 8 bytes read so far are held back: they may be the checksum.
    char buf[8 + 8192];
    size_t held = 0;
    uint64_t total = 0;
    for (;;) {
        size_t n = in.read(buf + held, sizeof buf - held);
        if (n == 0) break;
        total += n;
        held += n;
        if (held > 8) {
            XXH3_64bits_update(&state, buf, held - 8);
            std::memmove(buf, buf + held - 8, 8);
            held = 8;
        }
    }
    if (in.failed()) return SavedCacheStatus::ReadError;
    if (total < kHeaderBytes + sizeof(RawEnd) + 8) return SavedCacheStatus::Truncated;
    uint64_t stored;
    std::memcpy(&stored, buf, sizeof stored);
    return stored == XXH3_64bits_digest(&state) ? SavedCacheStatus::Ok : SavedCacheStatus::ChecksumMismatch;
}

// ---- the rule

Refusal refusal_to_restore(const SavedCacheHeader &saved, const ServerFacts &now) noexcept {
    if (!now.control_ok) return Refusal::ControlUnreadable;
    if (saved.system_identifier != now.system_identifier) return Refusal::OtherServer;
    if (now.backup_label) return Refusal::BackupLabel;
    if (now.standby_signal) return Refusal::StandbySignal;
    if (now.recovery_signal) return Refusal::RecoverySignal;
    switch (now.state) {
        case ControlState::CleanShutdown: break;
        case ControlState::StandbyShutdown: return Refusal::StandbyShutdown;
        case ControlState::ArchiveRecovery: return Refusal::ArchiveRecovery;
        case ControlState::NotShutDown: return Refusal::NotShutDown;
    }
    if (saved.checkpoint_lsn != now.checkpoint_lsn || saved.timeline != now.timeline)
        return Refusal::CheckpointMoved;
    if (saved.control_fingerprint != now.control_fingerprint) return Refusal::ControlFileChanged;
    if (saved.build_id != now.build_id) return Refusal::BuildChanged;
    if (saved.environment != now.environment) return Refusal::EnvironmentChanged;
    if (saved.cache_size_kb != now.cache_size_kb) return Refusal::CacheSizeChanged;
    return Refusal::None;
}

}  // namespace pgmemo
