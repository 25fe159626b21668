// pg_memo's WAL records: written by backends on the primary, replayed by the
// startup process on a standby (wal_records.hpp; docs/consistency.md, "Hot
// standby", has the argument).
//
// Locking: the replay state below is written by the startup process only.
// `serving` is an atomic that backends read; everything else it keeps is
// local to the startup process. The generation counters are atomics (see
// Generations). The primary's `state_logged_at` is claimed by compare and
// swap, so at most one backend writes each STATE record.
#include "durability/wal_records.hpp"
#include "commit_counts.hpp"
#include "settings.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

extern "C" {
#include "access/rmgr.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "catalog/pg_control.h"
#include "catalog/pg_tablespace_d.h"
#include "common/relpath.h"
#include "storage/fd.h"
#include "commands/dbcommands_xlog.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <atomic>
#include <sys/stat.h>
#include <cstring>
#include <new>

namespace pgmemo {

namespace {

// RM_EXPERIMENTAL_ID until pg_memo has an id of its own on
// https://wiki.postgresql.org/wiki/CustomWALResourceManagers.
constexpr RmgrId kMemoRmgrId = RM_EXPERIMENTAL_ID;
constexpr uint8 kCommitBegin = 0x00;
constexpr uint8 kBump = 0x10;
constexpr uint8 kReset = 0x20;
constexpr uint8 kState = 0x30;
constexpr uint8 kPrepared = 0x40;
constexpr uint32_t kRecordVersion = 1;
constexpr TimestampTz kStateInterval = 5 * USECS_PER_SEC;
// Commits of transactions older than the start of serving are checked for
// a lost BEGIN until commits run this far ahead of them (see settle()).
constexpr uint32_t kHorizonSpan = 1u << 30;

struct RecordHeader {
    uint32_t version;
    TransactionId xid;
    Oid dbid;
    uint32_t nslots;
    // uint32_t slots[nslots] follow
};

struct ReplayShared {
    std::atomic<uint32_t> serving;          // 1 while this standby may serve entries
    std::atomic<int64_t> state_logged_at;   // primary: when the last STATE record was written
};
ReplayShared *replay = nullptr;

XLogRecPtr write_record(uint8 info, TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    RecordHeader h{kRecordVersion, xid, MyDatabaseId, nslots};
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char *>(&h), sizeof h);
    if (nslots > 0)
        XLogRegisterData(reinterpret_cast<char *>(const_cast<uint32_t *>(slots)), int(sizeof(uint32_t) * nslots));
    return XLogInsert(kMemoRmgrId, info);
}

// ---- replay (the startup process) -----------------------------------------

// Announcements replayed whose commit or abort record has not been yet.
struct Pending {
    TransactionId xid;
    uint32_t nslots;
    uint32_t *slots;
};
Pending *pending = nullptr;
uint32_t npending = 0, pending_capacity = 0;
// PREPARED records replayed whose COMMIT or ROLLBACK PREPARED has not been.
Pending *prepared = nullptr;
uint32_t nprepared = 0, prepared_capacity = 0;
// A record this library cannot read was replayed: no serving until restart.
bool incompatible = false;
// The next transaction id when serving began: an older transaction may
// have written its BEGIN before this replay started.
TransactionId serving_horizon = InvalidTransactionId;
void (*xact_redo_of_postgres)(XLogReaderState *) = nullptr;
void (*xlog_redo_of_postgres)(XLogReaderState *) = nullptr;
void (*dbase_redo_of_postgres)(XLogReaderState *) = nullptr;
// Told when an archive recovery ends (two_phase.hpp: the prepared
// transactions this server inherited).
void (*after_archive_recovery)() = nullptr;

// Ends pending announcement i; returns how many counters it bumped.
uint32_t finish(uint32_t i, bool committed, TimestampTz at) {
    Shared &sh = shared_state();
    Pending &p = pending[i];
    uint32_t bumped = committed ? p.nslots : 0;
    if (committed)
        for (uint32_t s = 0; s < p.nslots; s++) sh.gens.bump(p.slots[s], at);
    for (uint32_t s = 0; s < p.nslots; s++) sh.gens.end_commit(p.slots[s]);
    pfree(p.slots);
    p = pending[--npending];
    return bumped;
}

void start_serving() {
    if (incompatible || replay->serving.load(std::memory_order_relaxed)) return;
    serving_horizon = XidFromFullTransactionId(ReadNextFullTransactionId());
    Shared &sh = shared_state();
    // Entries computed before now may have missed commits without records.
    sh.gens.bump(standby_replay_slot(), GetCurrentTimestamp());
    sh.gens.end_commit(standby_replay_slot());
    replay->serving.store(1, std::memory_order_seq_cst);
    ereport(LOG, (errmsg("pg_memo: this standby serves memoized results: it replays the primary's pg_memo "
                         "records")));
}

// Settles what is announced and raises the replay counter: nothing is
// served until start_serving(). `detail` says why, for the log.
void stop_serving(const char *detail) {
    TimestampTz now = GetCurrentTimestamp();
    while (npending > 0) finish(0, TransactionIdDidCommit(pending[0].xid), now);
    if (!replay->serving.load(std::memory_order_relaxed)) return;
    shared_state().gens.begin_commit(standby_replay_slot());
    replay->serving.store(0, std::memory_order_seq_cst);
    serving_horizon = InvalidTransactionId;
    ereport(LOG, (errmsg("pg_memo: this standby computes every memo call from here"), errdetail_internal("%s", detail),
                  errhint("It serves memoized results again from the next pg_memo record of a primary with "
                          "pg_memo.standby_records = on.")));
}

// The replayed commit or abort of `xid`: the end of its announcement, if it
// made one.
void settle(TransactionId xid, bool committed, TimestampTz at) {
    bool announced = false;
    uint32_t bumped = 0;
    // Every announcement of it: COMMIT PREPARED may have been tried twice.
    for (uint32_t i = 0; i < npending;)
        if (pending[i].xid == xid) {
            bumped = std::max(bumped, finish(i, committed, at));
            announced = true;
        } else {
            i++;
        }
    count_commit_bumps(bumped);  // one commit, however many announcements
    if (announced || !committed || !TransactionIdIsValid(serving_horizon)) return;
    if (TransactionIdPrecedes(xid, serving_horizon)) {
        // Its BEGIN may lie before where this replay began: every entry
        // computed here may depend on what it wrote.
        shared_state().gens.bump(standby_replay_slot(), at);
    } else if (xid - serving_horizon > kHorizonSpan) {
        serving_horizon = InvalidTransactionId;  // no transaction lives this long
    }
}

// The prepared transaction xid is about to be committed or rolled back:
// its PREPARED record's counters, announced now when committing (before
// its rows are visible), forgotten otherwise.
void finish_prepared_record(TransactionId xid, bool committing) {
    Shared &sh = shared_state();
    for (uint32_t i = 0; i < nprepared;) {
        if (prepared[i].xid != xid) {
            i++;
            continue;
        }
        if (committing) {
            for (uint32_t s = 0; s < prepared[i].nslots; s++) sh.gens.begin_commit(prepared[i].slots[s]);
            append_kept(&pending, &npending, &pending_capacity, prepared[i]);
        } else {
            pfree(prepared[i].slots);
        }
        prepared[i] = prepared[--nprepared];
    }
}

TransactionId prepared_xid_of(XLogReaderState *record, bool commit) {
    uint8 info = XLogRecGetInfo(record);
    if (commit) {
        xl_xact_parsed_commit parsed;
        ParseCommitRecord(info, reinterpret_cast<xl_xact_commit *>(XLogRecGetData(record)), &parsed);
        return parsed.twophase_xid;
    }
    xl_xact_parsed_abort parsed;
    ParseAbortRecord(info, reinterpret_cast<xl_xact_abort *>(XLogRecGetData(record)), &parsed);
    return parsed.twophase_xid;
}

void memo_xact_redo(XLogReaderState *record) {
    uint8 op = XLogRecGetInfo(record) & XLOG_XACT_OPMASK;
    if (nprepared > 0 && (op == XLOG_XACT_COMMIT_PREPARED || op == XLOG_XACT_ABORT_PREPARED))
        finish_prepared_record(prepared_xid_of(record, op == XLOG_XACT_COMMIT_PREPARED),
                               op == XLOG_XACT_COMMIT_PREPARED);
    else if (nprepared > 0 && op == XLOG_XACT_ABORT)  // its PREPARE failed after the record
        finish_prepared_record(XLogRecGetXid(record), false);
    bool watching = npending > 0 || TransactionIdIsValid(serving_horizon);
    // Before the commit is visible here: the earliest moment it can be seen.
    TimestampTz before = watching ? GetCurrentTimestamp() : 0;
    xact_redo_of_postgres(record);
    if (!watching) return;
    uint8 info = XLogRecGetInfo(record);
    switch (info & XLOG_XACT_OPMASK) {
        case XLOG_XACT_COMMIT: settle(XLogRecGetXid(record), true, before); break;
        case XLOG_XACT_ABORT: settle(XLogRecGetXid(record), false, before); break;
        case XLOG_XACT_COMMIT_PREPARED: settle(prepared_xid_of(record, true), true, before); break;
        case XLOG_XACT_ABORT_PREPARED: settle(prepared_xid_of(record, false), false, before); break;
        default: break;
    }
}

void memo_xlog_redo(XLogReaderState *record) {
    xlog_redo_of_postgres(record);
    uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    // The primary stopped; the one after it may not write the records.
    if (info == XLOG_CHECKPOINT_SHUTDOWN)
        stop_serving("The primary shut down or finished crash recovery (a shutdown checkpoint was replayed).");
    else if (info == XLOG_END_OF_RECOVERY)
        stop_serving("A new timeline began (a promotion was replayed).");
}

// Whether a directory of the database is left in any tablespace.
bool database_directory_exists(Oid dbid) {
    struct stat st;
    char *path = GetDatabasePath(dbid, DEFAULTTABLESPACE_OID);
    bool exists = stat(path, &st) == 0;
    DIR *dir = exists ? nullptr : AllocateDir("pg_tblspc");
    struct dirent *de;
    while (dir && (de = ReadDir(dir, "pg_tblspc")) != nullptr && !exists) {
        Oid tablespace = Oid(strtoul(de->d_name, nullptr, 10));
        if (!OidIsValid(tablespace)) continue;  // "." and ".."
        exists = stat(GetDatabasePath(dbid, tablespace), &st) == 0;
    }
    if (dir) FreeDir(dir);
    return exists;
}

// A dropped database, replayed: its entries go on the standby too. (The
// same record removes the old directory of ALTER DATABASE ... SET
// TABLESPACE, and the remains of a failed CREATE DATABASE: the database
// lives on, or never did, in another directory.)
void memo_dbase_redo(XLogReaderState *record) {
    dbase_redo_of_postgres(record);
    if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) != XLOG_DBASE_DROP) return;
    Oid dbid = reinterpret_cast<xl_dbase_drop_rec *>(XLogRecGetData(record))->db_id;
    if (!database_directory_exists(dbid)) forget_database(dbid);
}

void refuse_record(const char *why, uint32_t version) {
    incompatible = true;
    ereport(WARNING, (errmsg("pg_memo cannot read a WAL record of the primary: %s", why),
                      errdetail("The record's format version is %u; this pg_memo reads version %u.", version,
                                kRecordVersion),
                      errhint("Install the primary's pg_memo version on this standby and restart it.")));
    stop_serving("A pg_memo record could not be read.");
}

uint32_t *copy_slots(const uint32_t *slots, uint32_t n) {
    auto *copy = static_cast<uint32_t *>(MemoryContextAlloc(TopMemoryContext, sizeof(uint32_t) * (n ? n : 1)));
    memcpy(copy, slots, sizeof(uint32_t) * n);
    return copy;
}

void memo_redo(XLogReaderState *record) {
    if (incompatible) return;
    uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    auto *h = reinterpret_cast<const RecordHeader *>(XLogRecGetData(record));
    size_t len = XLogRecGetDataLen(record);
    if (len < sizeof(uint32_t)) return refuse_record("it is too short", 0);
    if (h->version != kRecordVersion) return refuse_record("its version is not this library's", h->version);
    if (len < sizeof *h || len != sizeof *h + sizeof(uint32_t) * size_t(h->nslots))
        return refuse_record("its length does not match its header", h->version);
    if (info != kCommitBegin && info != kBump && info != kReset && info != kState && info != kPrepared)
        return refuse_record("its kind is unknown", h->version);
    start_serving();
    const auto *slots = reinterpret_cast<const uint32_t *>(h + 1);
    Shared &sh = shared_state();
    switch (info) {
        case kCommitBegin:
            append_kept(&pending, &npending, &pending_capacity, Pending{h->xid, h->nslots, copy_slots(slots, h->nslots)});
            for (uint32_t i = 0; i < h->nslots; i++) sh.gens.begin_commit(slots[i]);
            break;
        case kPrepared:
            append_kept(&prepared, &nprepared, &prepared_capacity,
                        Pending{h->xid, h->nslots, copy_slots(slots, h->nslots)});
            break;
        case kBump: {
            TimestampTz now = GetCurrentTimestamp();
            for (uint32_t i = 0; i < h->nslots; i++) sh.gens.bump(slots[i], now);
            count_commit_bumps(h->nslots);
            break;
        }
        case kReset: sh.store.remove_all(); break;
        default: break;  // kState: start_serving() was all
    }
}

// Start of redo, in the startup process: crash recovery or a standby.
void memo_startup() {
    // Raised until the first record of a primary that writes them.
    shared_state().gens.begin_commit(standby_replay_slot());
    replay->serving.store(0, std::memory_order_seq_cst);
    xact_redo_of_postgres = RmgrTable[RM_XACT_ID].rm_redo;
    RmgrTable[RM_XACT_ID].rm_redo = memo_xact_redo;
    xlog_redo_of_postgres = RmgrTable[RM_XLOG_ID].rm_redo;
    RmgrTable[RM_XLOG_ID].rm_redo = memo_xlog_redo;
    dbase_redo_of_postgres = RmgrTable[RM_DBASE_ID].rm_redo;
    RmgrTable[RM_DBASE_ID].rm_redo = memo_dbase_redo;
    if (StandbyMode)
        ereport(LOG, (errmsg("pg_memo: this standby computes every memo call until it replays a pg_memo record"),
                      errhint("A primary writes them with pg_memo.standby_records = on.")));
}

// End of recovery (promotion, or the end of crash recovery): this server
// is a primary from here, and every commit it sees is its own.
void memo_cleanup() {
    if (ArchiveRecoveryRequested && after_archive_recovery) after_archive_recovery();
    TimestampTz now = GetCurrentTimestamp();
    while (npending > 0) finish(0, TransactionIdDidCommit(pending[0].xid), now);
    // A primary now: its own apply workers mark what they commit.
    while (nprepared > 0) pfree(prepared[--nprepared].slots);
    if (!replay->serving.load(std::memory_order_relaxed)) {
        Shared &sh = shared_state();
        sh.gens.bump(standby_replay_slot(), now);
        sh.gens.end_commit(standby_replay_slot());
    }
}

void memo_desc(StringInfo buf, XLogReaderState *record) {
    auto *h = reinterpret_cast<const RecordHeader *>(XLogRecGetData(record));
    if (XLogRecGetDataLen(record) < sizeof *h) return;
    appendStringInfo(buf, "version %u xid %u db %u counters %u", h->version, h->xid, h->dbid, h->nslots);
}

const char *memo_identify(uint8 info) {
    switch (info & ~XLR_INFO_MASK) {
        case kCommitBegin: return "COMMIT_BEGIN";
        case kBump: return "BUMP";
        case kReset: return "RESET";
        case kState: return "STATE";
        case kPrepared: return "PREPARED";
        default: return nullptr;
    }
}

RmgrData memo_rmgr = {"pg_memo", memo_redo, memo_desc, memo_identify, memo_startup, memo_cleanup, nullptr, nullptr};

}  // namespace

void register_wal_records(void (*archive_recovery_ended)()) {
    after_archive_recovery = archive_recovery_ended;
    RegisterCustomRmgr(kMemoRmgrId, &memo_rmgr);
}

size_t standby_replay_shared_size() { return sizeof(ReplayShared); }

void standby_replay_attach(char *mem, bool created) {
    replay = reinterpret_cast<ReplayShared *>(mem);
    if (created) new (mem) ReplayShared{{0}, {0}};
}

bool writing_wal_records() { return guc_standby_records && XLogStandbyInfoActive() && !RecoveryInProgress(); }

bool standby_serves() { return replay->serving.load(std::memory_order_seq_cst) != 0; }

void log_commit_begin(TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    // Flushed with the commit record that follows it.
    write_record(kCommitBegin, xid, slots, nslots);
}

void log_bump(const uint32_t *slots, uint32_t nslots) {
    XLogSetAsyncXactLSN(write_record(kBump, InvalidTransactionId, slots, nslots));
}

void log_prepared(TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    // Flushed with the PREPARE record that follows it.
    write_record(kPrepared, xid, slots, nslots);
}

void log_reset() {
    if (writing_wal_records()) XLogSetAsyncXactLSN(write_record(kReset, InvalidTransactionId, nullptr, 0));
}

void log_state_if_due() {
    if (!writing_wal_records()) return;
    TimestampTz now = GetCurrentTimestamp();
    int64_t last = replay->state_logged_at.load(std::memory_order_relaxed);
    if (now - last < kStateInterval || !replay->state_logged_at.compare_exchange_strong(last, now)) return;
    XLogSetAsyncXactLSN(write_record(kState, InvalidTransactionId, nullptr, 0));
}

}  // namespace pgmemo
