// Warm restart (pg_memo.save): the postmaster saves the cache when it exits
// after a clean shutdown, to pg_stat/pg_memo.cache (as pg_stat_statements
// saves its file), and restores it at the next start, before any other
// process exists. The file format is in src/core/saved_cache.hpp.
//
// Why a restored entry is exactly as valid as it was at the save
//
//   An entry is current while no counter it depends on has moved since it
//   was computed; a counter moves when a commit writes what it stands for.
//   So a restored entry is right if no commit (nor any other change to
//   what it read) has happened between the save and the moment backends
//   can use it, and if the counters are restored as they were.
//
//   - The save happens in the postmaster after its last child has exited,
//     and only when pg_control's state is DB_SHUTDOWNED. Only a shutdown
//     checkpoint outside recovery writes that state (pg_resetwal and
//     single-user mode aside, below), and the checkpointer writes it after
//     every backend has exited, with all data flushed: it is the last WAL
//     record of that run. Every commit of that run bumped its counters in
//     the committing backend before it exited (a backend that dies
//     otherwise is a crash: the postmaster exits, or reinitializes shared
//     memory, with a nonzero code, and nothing is saved). The cache and
//     the counters saved are therefore those of the data as of that
//     checkpoint. (A counter with a commit still in progress, which cannot
//     happen at that point, would be saved one step ahead anyway.)
//   - The restore requires that pg_control still says DB_SHUTDOWNED, with
//     the very checkpoint LSN and timeline saved, and that pg_control is
//     byte for byte what it was at the save (its fingerprint). A startup
//     from that state without backup_label, recovery.signal or
//     standby.signal does no recovery at all: the startup process replays
//     nothing, and new WAL starts right after that checkpoint. So no WAL
//     was replayed and nothing was written between the save and the
//     restore, and no backend runs before the restore is done.
//   - Anything that can change the data in between changes what is
//     checked: a crash (state DB_IN_PRODUCTION, not saved in the first
//     place), a standby (DB_SHUTDOWNED_IN_RECOVERY, or standby.signal),
//     archive recovery or promotion (recovery.signal; a new timeline),
//     pg_rewind (DB_IN_ARCHIVE_RECOVERY, backup_label), pg_resetwal (a new
//     checkpoint LSN past all existing WAL), a restore from a base backup
//     (backup_label, an older pg_control), a single-user session (it
//     restores nothing, and its own shutdown checkpoint moves the LSN).
//     (A cold copy of the stopped data directory, file included, is that
//     same state: restoring it there is right.)
//     The file is unlinked as soon as it is opened, so it is read at most
//     once: even if that unlink were lost, the next start would find
//     pg_control in production or past another checkpoint.
//   - A file from another server is never trusted: its system identifier
//     must be this server's, and two servers sharing one (a standby, a
//     copy) cannot share the same checkpoint LSN, timeline and pg_control
//     contents (times, next XID and OID) unless they are the same state.
//     The checksum refuses damaged bytes; the build id refuses a file
//     written by another pg_memo library (the encodings it holds, and the
//     hashing that maps tables to counters, are that build's).
//
//   Unlogged tables keep their rows over a clean shutdown (they are reset
//   only by crash recovery, which rules out a restore). Prepared
//   transactions outlive a restart as they outlive any moment of a running
//   server: pg_memo bumps what they wrote at PREPARE (DDL, whose locks are
//   recovered before any backend runs) or at COMMIT PREPARED (a two-phase
//   subscription), never in between.
//
//   Counters are restored as saved, not reset: a restored entry's stamps
//   keep meaning what they meant, and the next write to a table moves its
//   counter past every stamp ever given out for it, so no bump after the
//   restart can land back on an old stamp.
//
// Locks. The restore runs in the postmaster's shmem startup hook, before any
// child exists; the save runs in the postmaster's exit (on_shmem_exit, code
// 0), after every child has exited. Nobody else can touch the region at
// either point, so both use a Store handle whose locks do nothing. (The
// store's LWLocks would also work there, uncontended, but an LWLock the
// postmaster had to wait for would be a PANIC: it has no PGPROC to sleep
// on.) The save is skipped on any other exit code: after a crash, shared
// memory may be inconsistent.
#include "durability/warm_restart.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/guc.h"
}

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hash.hpp"
#include "saved_cache.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

namespace pgmemo {

namespace {

constexpr const char *kSavedFile = PGSTAT_STAT_PERMANENT_DIRECTORY "/pg_memo.cache";
constexpr const char *kSavedTempFile = PGSTAT_STAT_PERMANENT_DIRECTORY "/pg_memo.cache.tmp";

struct WarmRestartStatus {
    TimestampTz restored_at;
    int64 restored_entries;
};

WarmRestartStatus *restart_status = nullptr;

// Postmaster only: what the exit callback saves, and who wrote the entries.
WarmRestartRegion postmaster_region;
uint64_t postmaster_build_id = 0;
uint32_t postmaster_environment = 0;

// For the postmaster, before its first child and after its last: no other
// process can hold or want a lock.
class NoStoreLocks final : public StoreLocks {
public:
    void lock_partition(uint32_t, bool) noexcept override {}
    void unlock_partition(uint32_t) noexcept override {}
    void lock_allocator() noexcept override {}
    void unlock_allocator() noexcept override {}
};
NoStoreLocks no_store_locks;

Store unlocked_store(const WarmRestartRegion &r) {
    return Store(r.store, Generations::attach(r.generations), StatsTable::attach(r.stats, r.stats_slots),
                 &no_store_locks);
}

// The identity of the library file this postmaster loaded (inode, size,
// modification time), so a file saved by one build of pg_memo is never read
// by another. Taken at startup: a library replaced on disk while the server
// runs is not the code that made the entries. 0 if unknown.
uint64_t library_identity() {
    Dl_info info;
    struct stat st;
    if (dladdr(reinterpret_cast<void *>(&warm_restart_startup), &info) == 0 || !info.dli_fname ||
        stat(info.dli_fname, &st) != 0)
        return 0;
    uint64_t id = hash_mix(uint64_t(st.st_ino), uint64_t(st.st_size));
    return hash_mix(id, uint64_t(st.st_mtim.tv_sec) * 1000000000u + uint64_t(st.st_mtim.tv_nsec));
}

// What results can depend on outside WAL and pg_memo's library, as this
// postmaster found it at startup: the server's version, the C library's
// (its collations) and the time zone data's. A restart is often taken to
// upgrade exactly these; then nothing is restored.
uint32_t environment_identity() {
    const char *server_version = GetConfigOption("server_version_num", true, false);
    uint64_t h = server_version ? hash_bytes(server_version, strlen(server_version)) : 0;
    const char *libc = gnu_get_libc_version();
    h = hash_mix(h, hash_bytes(libc, strlen(libc)));
    // The first line of the system's zone data, which Debian's PostgreSQL
    // reads ("# version 2025b"); nothing when it is elsewhere.
    char line[128] = "";
    if (FILE *f = fopen("/usr/share/zoneinfo/tzdata.zi", "r")) {
        if (!fgets(line, sizeof line, f)) line[0] = '\0';
        fclose(f);
    }
    h = hash_mix(h, hash_bytes(line, strlen(line)));
    return uint32_t(h ^ (h >> 32));
}

bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 || errno != ENOENT;  // unsure counts as present
}

ControlState control_state(DBState state) {
    switch (state) {
        case DB_SHUTDOWNED: return ControlState::CleanShutdown;
        case DB_SHUTDOWNED_IN_RECOVERY: return ControlState::StandbyShutdown;
        case DB_IN_ARCHIVE_RECOVERY: return ControlState::ArchiveRecovery;
        default: return ControlState::NotShutDown;
    }
}

// pg_control (as on disk: the postmaster has not written it yet at startup,
// nor since the shutdown checkpoint at exit) and the data directory.
ServerFacts server_facts() {
    ServerFacts f;
    bool crc_ok = false;
    ControlFileData *control = get_controlfile(DataDir, &crc_ok);
    f.control_ok = crc_ok;
    f.state = control_state(control->state);
    f.system_identifier = control->system_identifier;
    f.checkpoint_lsn = control->checkPoint;
    f.timeline = control->checkPointCopy.ThisTimeLineID;
    f.control_fingerprint = hash_bytes(control, sizeof(ControlFileData));
    pfree(control);
    f.backup_label = file_exists(BACKUP_LABEL_FILE);
    f.recovery_signal = file_exists(RECOVERY_SIGNAL_FILE);
    f.standby_signal = file_exists(STANDBY_SIGNAL_FILE);
    f.cache_size_kb = uint32_t(guc_cache_size_kb);
    f.build_id = postmaster_build_id;
    f.environment = postmaster_environment;
    return f;
}

// Why the server's state rules out saving or restoring, or null.
const char *state_reason(const ServerFacts &f) {
    if (!f.control_ok) return "pg_control could not be read with a valid checksum";
    switch (f.state) {
        case ControlState::CleanShutdown: return nullptr;
        case ControlState::StandbyShutdown: return "the server was a standby when it shut down";
        case ControlState::ArchiveRecovery: return "the server was in archive recovery (a backup or pg_rewind)";
        case ControlState::NotShutDown: return "the server did not shut down cleanly (crash recovery runs first)";
    }
    return "unknown server state";
}

const char *refusal_reason(Refusal r, const SavedCacheHeader &saved, const ServerFacts &now) {
    switch (r) {
        case Refusal::None: return nullptr;
        case Refusal::ControlUnreadable:
        case Refusal::NotShutDown:
        case Refusal::StandbyShutdown:
        case Refusal::ArchiveRecovery: return state_reason(now);
        case Refusal::OtherServer:
            return psprintf("it was saved by another server (system identifier " UINT64_FORMAT
                            ", this server's is " UINT64_FORMAT ")",
                            saved.system_identifier, now.system_identifier);
        case Refusal::BackupLabel: return "backup_label exists: the server starts from a base backup";
        case Refusal::StandbySignal: return "standby.signal exists: the server starts as a standby";
        case Refusal::RecoverySignal: return "recovery.signal exists: the server starts with archive recovery";
        case Refusal::CheckpointMoved:
            return psprintf("the server's last checkpoint is %X/%X on timeline %u, not the shutdown checkpoint "
                            "%X/%X on timeline %u it was saved after (pg_resetwal, a restore or recovery since)",
                            uint32(now.checkpoint_lsn >> 32), uint32(now.checkpoint_lsn), now.timeline,
                            uint32(saved.checkpoint_lsn >> 32), uint32(saved.checkpoint_lsn), saved.timeline);
        case Refusal::ControlFileChanged: return "pg_control changed since it was saved";
        case Refusal::BuildChanged: return "it was saved by another build of pg_memo's library";
        case Refusal::EnvironmentChanged:
            return "the server, its C library (collations) or the time zone data changed since it was saved";
        case Refusal::CacheSizeChanged:
            return psprintf("pg_memo.cache_size changed from %u kB to %u kB", saved.cache_size_kb,
                            now.cache_size_kb);
    }
    return "unknown reason";
}

// ---- saving

class FileOutput final : public SavedCacheOutput {
public:
    explicit FileOutput(FILE *file) : file_(file) {}
    bool write(const void *data, size_t len) noexcept override { return fwrite(data, 1, len, file_) == len; }

private:
    FILE *file_;
};

// Writes every current entry to the temporary file; true if all went well.
bool write_entries(FILE *file, const ServerFacts &facts, uint64_t *saved) {
    const WarmRestartRegion &r = postmaster_region;
    Generations gens = Generations::attach(r.generations);
    StatsTable stats = StatsTable::attach(r.stats, r.stats_slots);
    Store store = unlocked_store(r);

    SavedCacheHeader header;
    header.build_id = facts.build_id;
    header.environment = facts.environment;
    header.system_identifier = facts.system_identifier;
    header.checkpoint_lsn = facts.checkpoint_lsn;
    header.timeline = facts.timeline;
    header.cache_size_kb = facts.cache_size_kb;
    header.control_fingerprint = facts.control_fingerprint;
    header.saved_at = GetCurrentTimestamp();

    FileOutput out(file);
    SavedCacheWriter writer(out);
    bool ok = writer.begin(header, gens);
    store.for_each_entry([&](uint64_t hash, const char *key, uint32_t key_len, uint32_t stats_slot,
                             const EntryView &e) {
        if (!ok || !worth_saving(e, gens)) return;
        SavedEntry s = SavedEntry::of(hash, key, key_len, e);
        if (stats_slot != StatsTable::kOverflowSlot && stats_slot < stats.size() && stats.ready(stats_slot)) {
            const StatsSlot &slot = stats.slot(stats_slot);
            s.dbid = slot.dbid;
            s.cache_name = slot.name;
            s.cache_name_len = uint32_t(strnlen(slot.name, kMaxCacheNameLen));
        }
        ok = writer.add_entry(s);
    });
    ok = ok && writer.finish();
    *saved = writer.entries();
    return ok;
}

void save_at_exit(int code, Datum) {
    if (code != 0) return;  // a crash or a failed start: shared memory may be inconsistent
    if (!guc_save) {
        ereport(LOG, (errmsg("pg_memo: not saving the cache: pg_memo.save is off")));
        return;
    }
    ServerFacts facts = server_facts();
    if (const char *why = state_reason(facts)) {
        ereport(LOG, (errmsg("pg_memo: not saving the cache: %s", why)));
        return;
    }

    FILE *file = AllocateFile(kSavedTempFile, PG_BINARY_W);
    if (!file) {
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("pg_memo: not saving the cache: could not create \"%s\": %m", kSavedTempFile)));
        return;
    }
    uint64_t saved = 0;
    bool written = write_entries(file, facts, &saved);
    int write_errno = errno;
    if (FreeFile(file) != 0 && written) {
        written = false;
        write_errno = errno;
    }
    if (!written) {
        errno = write_errno;
        ereport(LOG, (errcode_for_file_access(),
                      errmsg("pg_memo: not saving the cache: could not write \"%s\": %m", kSavedTempFile)));
        unlink(kSavedTempFile);
        return;
    }
    if (durable_rename(kSavedTempFile, kSavedFile, LOG) != 0) {
        unlink(kSavedTempFile);
        return;
    }
    ereport(LOG, (errmsg("pg_memo: saved " UINT64_FORMAT " cached results to \"%s\"", saved, kSavedFile)));
}

// ---- restoring

class FileInput final : public SavedCacheInput {
public:
    FileInput(FILE *file, MemoryContext context) : file_(file), context_(context) {}
    size_t read(void *buf, size_t len) noexcept override { return fread(buf, 1, len, file_); }
    bool failed() const noexcept override { return ferror(file_) != 0; }
    char *record_space(size_t len) noexcept override {
        if (len > capacity_) {
            void *grown = MemoryContextAllocExtended(context_, len, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
            if (!grown) return nullptr;
            if (buffer_) pfree(buffer_);
            buffer_ = static_cast<char *>(grown);
            capacity_ = len;
        }
        return buffer_;
    }

private:
    FILE *file_;
    MemoryContext context_;
    char *buffer_ = nullptr;
    size_t capacity_ = 0;
};

// Restores counters, then entries, until the arena would have to evict to
// take more. On any failure, undoes everything: the region is as it was
// created. Returns the entries restored, or -1 with *failure set.
int64 apply_saved_cache(const WarmRestartRegion &r, FileInput &in, const SavedCacheHeader &saved,
                        SavedCacheStatus *failure) {
    Generations gens = Generations::attach(r.generations);
    StatsTable stats = StatsTable::attach(r.stats, r.stats_slots);
    Store store = unlocked_store(r);
    SavedCacheReader reader(in);
    SavedCacheHeader again;
    TimestampTz now = GetCurrentTimestamp();
    uint64_t max_record = uint64_t(saved.cache_size_kb) * 1024;

    SavedCacheStatus s = reader.read_header(&again);
    if (s == SavedCacheStatus::Ok) s = reader.read_counters(gens);
    uint64_t evictions = store.info().evictions;
    bool full = false;
    SavedEntry e;
    while (s == SavedCacheStatus::Ok && (s = reader.next_entry(&e, max_record)) == SavedCacheStatus::Ok) {
        if (full) continue;  // read on: the end record still has to check out
        EntryParts p = e.parts(e.cache_name_len ? stats.find_or_claim(e.dbid, e.cache_name, e.cache_name_len, now)
                                                : StatsTable::kOverflowSlot);
        InsertStatus inserted = store.insert(p, UINT64_MAX, nullptr);
        full = inserted == InsertStatus::NoSpace || store.info().evictions != evictions;
    }
    if (s != SavedCacheStatus::End) {
        store.remove_all();
        Generations::initialize(r.generations);
        *failure = s;
        return -1;
    }
    return int64(store.info().entries);
}

// Checks the file, decides, and restores. The caller closes and has
// already unlinked it.
void restore_from(FILE *file, const WarmRestartRegion &r, MemoryContext context) {
    FileInput in(file, context);
    SavedCacheHeader saved;
    SavedCacheReader header_reader(in);
    SavedCacheStatus s = header_reader.read_header(&saved);
    if (s != SavedCacheStatus::Ok) {
        ereport(LOG, (errmsg("pg_memo: not restoring the saved cache in \"%s\": %s", kSavedFile, describe(s))));
        return;
    }
    rewind(file);
    s = verify_saved_cache_checksum(in);
    const char *why = nullptr;
    if (s != SavedCacheStatus::Ok)
        why = describe(s);
    else if (!guc_save)
        why = "pg_memo.save is off";
    else {
        ServerFacts now = server_facts();
        why = refusal_reason(refusal_to_restore(saved, now), saved, now);
    }
    if (why) {
        ereport(LOG, (errmsg("pg_memo: not restoring the cache saved at %s: %s", timestamptz_to_str(saved.saved_at),
                             why)));
        return;
    }

    rewind(file);
    int64 restored = apply_saved_cache(r, in, saved, &s);
    if (restored < 0) {
        ereport(LOG, (errmsg("pg_memo: not restoring the cache saved at %s: %s", timestamptz_to_str(saved.saved_at),
                             describe(s))));
        return;
    }
    restart_status->restored_at = GetCurrentTimestamp();
    restart_status->restored_entries = restored;
    ereport(LOG, (errmsg("pg_memo: restored " INT64_FORMAT " cached results saved at %s", restored,
                         timestamptz_to_str(saved.saved_at))));
}

void restore_at_startup(const WarmRestartRegion &r) {
    FILE *file = AllocateFile(kSavedFile, PG_BINARY_R);
    if (!file) {
        if (errno != ENOENT) {
            ereport(LOG, (errcode_for_file_access(),
                          errmsg("pg_memo: not restoring the saved cache: could not open \"%s\": %m", kSavedFile)));
            unlink(kSavedFile);
        } else if (guc_save) {
            ServerFacts now = server_facts();
            const char *why = state_reason(now);
            ereport(LOG, (errmsg("pg_memo: starting with an empty cache: %s",
                                 why ? why : "no cache was saved at the last shutdown")));
        }
        return;
    }
    // Read at most once, whatever happens next.
    if (unlink(kSavedFile) != 0)
        ereport(LOG, (errcode_for_file_access(), errmsg("pg_memo: could not remove \"%s\": %m", kSavedFile)));

    // Everything the restore allocates (records, messages) goes with it.
    MemoryContext context = AllocSetContextCreate(TopMemoryContext, "pg_memo warm restart", ALLOCSET_DEFAULT_SIZES);
    MemoryContext previous = MemoryContextSwitchTo(context);
    restore_from(file, r, context);
    MemoryContextSwitchTo(previous);
    FreeFile(file);
    MemoryContextDelete(context);
}

}  // namespace

size_t warm_restart_shared_size() { return MAXALIGN(sizeof(WarmRestartStatus)) + MAXIMUM_ALIGNOF; }

void warm_restart_startup(const WarmRestartRegion &region, bool created) {
    restart_status = reinterpret_cast<WarmRestartStatus *>(TYPEALIGN(MAXIMUM_ALIGNOF, region.status));
    if (created) {
        restart_status->restored_at = 0;
        restart_status->restored_entries = 0;
    }
    // The postmaster of a server: not a child, not single-user mode or
    // bootstrap (those restore and save nothing; see the top of this file).
    if (IsUnderPostmaster || !IsPostmasterEnvironment || !created) return;

    postmaster_region = region;
    postmaster_build_id = hash_mix(saved_cache_core_fingerprint(), library_identity());
    postmaster_environment = environment_identity();
    restore_at_startup(region);
    on_shmem_exit(save_at_exit, (Datum)0);
}

void warm_restart_attach(char *mem, bool created) {
    CoreRegions core = core_regions();
    warm_restart_startup(WarmRestartRegion{core.generations, core.stats, core.stats_slots, core.store, mem}, created);
}

void warm_restart_status(TimestampTz *restored_at, int64 *restored_entries) {
    *restored_at = restart_status ? restart_status->restored_at : 0;
    *restored_entries = restart_status ? restart_status->restored_entries : 0;
}

}  // namespace pgmemo
