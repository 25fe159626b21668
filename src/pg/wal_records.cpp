// pg_memo's WAL records: written by the committing backend on the primary,
// replayed by the startup process on a standby (wal_records.hpp).
#include "wal_records.hpp"

extern "C" {
#include "access/rmgr.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
}

#include <cstring>

namespace pgmemo {

namespace {

// RM_EXPERIMENTAL_ID until pg_memo has an id of its own on
// https://wiki.postgresql.org/wiki/CustomWALResourceManagers.
constexpr RmgrId kMemoRmgrId = RM_EXPERIMENTAL_ID;
constexpr uint8 kCommitBegin = 0x00;
constexpr uint8 kCommitEnd = 0x10;
constexpr uint32_t kRecordVersion = 1;

struct RecordHeader {
    uint32_t version;
    TransactionId xid;
    Oid dbid;
    uint32_t nslots;
    // uint32_t slots[nslots] follow
};

XLogRecPtr write_record(uint8 info, TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    RecordHeader h{kRecordVersion, xid, MyDatabaseId, nslots};
    XLogBeginInsert();
    XLogRegisterData(reinterpret_cast<char *>(&h), sizeof h);
    XLogRegisterData(reinterpret_cast<char *>(const_cast<uint32_t *>(slots)), int(sizeof(uint32_t) * nslots));
    return XLogInsert(kMemoRmgrId, info);
}

// ---- replay (the startup process) -----------------------------------------

// Announcements replayed without their END yet.
struct Pending {
    TransactionId xid;
    uint32_t nslots;
    uint32_t *slots;
};
Pending *pending = nullptr;
uint32_t npending = 0, pending_capacity = 0;

void finish(Pending &p, bool committed) {
    Shared &sh = shared_state();
    if (committed)
        for (uint32_t i = 0; i < p.nslots; i++) sh.gens.bump(p.slots[i], GetCurrentTimestamp());
    for (uint32_t i = 0; i < p.nslots; i++) sh.gens.end_commit(p.slots[i]);
    pfree(p.slots);
    p = pending[--npending];
}

// Announcements whose transaction the replayed commit log already shows as
// ended: their END was lost (the primary crashed between the two records).
void resolve_ended(TransactionId except) {
    for (uint32_t i = 0; i < npending;) {
        Pending &p = pending[i];
        // A transaction without an id wrote no rows: nothing to wait for.
        if (p.xid != except && (!TransactionIdIsValid(p.xid) || TransactionIdDidCommit(p.xid)))
            finish(p, true);
        else if (p.xid != except && TransactionIdDidAbort(p.xid))
            finish(p, false);
        else
            i++;
    }
}

void memo_redo(XLogReaderState *record) {
    uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    auto *h = reinterpret_cast<const RecordHeader *>(XLogRecGetData(record));
    if (h->version != kRecordVersion)
        ereport(PANIC, (errmsg("pg_memo: WAL record of version %u, this library reads version %u", h->version,
                               kRecordVersion),
                        errhint("Install the pg_memo version of the primary on this standby.")));
    const auto *slots = reinterpret_cast<const uint32_t *>(h + 1);
    Shared &sh = shared_state();
    if (info == kCommitBegin) {
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        auto *copy = static_cast<uint32_t *>(palloc(sizeof(uint32_t) * (h->nslots ? h->nslots : 1)));
        memcpy(copy, slots, sizeof(uint32_t) * h->nslots);
        append_kept(&pending, &npending, &pending_capacity, Pending{h->xid, h->nslots, copy});
        MemoryContextSwitchTo(old);
        for (uint32_t i = 0; i < h->nslots; i++) sh.gens.begin_commit(slots[i]);
    } else if (info == kCommitEnd) {
        bool announced = false;
        for (uint32_t i = 0; i < npending; i++)
            if (pending[i].xid == h->xid) {
                finish(pending[i], true);
                announced = true;
                break;
            }
        // Replay that began after its BEGIN: bumping is always safe.
        if (!announced)
            for (uint32_t i = 0; i < h->nslots; i++) sh.gens.bump(slots[i], GetCurrentTimestamp());
    } else {
        elog(PANIC, "pg_memo: unknown WAL record info %u", info);
    }
    resolve_ended(h->xid);
}

// End of recovery (promotion): every announcement is settled now.
void memo_cleanup() {
    while (npending > 0)
        finish(pending[0], !TransactionIdIsValid(pending[0].xid) || !TransactionIdDidAbort(pending[0].xid));
}

void memo_desc(StringInfo buf, XLogReaderState *record) {
    auto *h = reinterpret_cast<const RecordHeader *>(XLogRecGetData(record));
    appendStringInfo(buf, "xid %u db %u counters %u", h->xid, h->dbid, h->nslots);
}

const char *memo_identify(uint8 info) {
    switch (info & ~XLR_INFO_MASK) {
        case kCommitBegin: return "COMMIT_BEGIN";
        case kCommitEnd: return "COMMIT_END";
        default: return nullptr;
    }
}

RmgrData memo_rmgr = {"pg_memo", memo_redo, memo_desc, memo_identify, nullptr, memo_cleanup, nullptr, nullptr};

}  // namespace

void register_wal_records() { RegisterCustomRmgr(kMemoRmgrId, &memo_rmgr); }

bool writing_wal_records() { return guc_standby_records && XLogStandbyInfoActive() && !RecoveryInProgress(); }

void log_commit_begin(TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    write_record(kCommitBegin, xid, slots, nslots);
}

void log_commit_end(TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    // Not flushed here (that would cost every commit a second flush): the
    // WAL writer flushes it soon, as it does an asynchronous commit. Until
    // a standby replays it, the counters stay announced there: its readers
    // compute, they are never served an entry the commit made stale.
    XLogSetAsyncXactLSN(write_record(kCommitEnd, xid, slots, nslots));
}

}  // namespace pgmemo
