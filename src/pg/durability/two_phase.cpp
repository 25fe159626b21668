// Two-phase commit: the prepared transaction's marks in a state file of
// pg_memo's (two_phase.hpp; the format is src/core/prepared_marks.hpp).
//
// Why a file and not WAL: a prepared transaction can outlive many
// checkpoints, and replay after a restart starts at the last one; a record
// written at PREPARE would be gone by then. The file is written and synced
// before the PREPARE record, so a prepared transaction that marked anything
// always has one. A file can outlive its transaction (a crash after the
// file, before the PREPARE record; an error in between): it names the
// transaction id, and a COMMIT PREPARED uses it only while that
// transaction is still prepared (in progress), with the same gid and
// database. PREPARE of a transaction that marked nothing writes nothing.
//
// Locks: none of pg_memo's. COMMIT PREPARED announces and bumps the
// generation counters, which are atomics; the state file is this
// backend's while it writes or reads it (its gid is the prepared
// transaction's, which one session at a time can finish).
#include "durability/two_phase.hpp"

extern "C" {
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/procarray.h"
#include "utils/timestamp.h"
}

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.hpp"
#include "commit_counts.hpp"
#include "compat.hpp"
#include "prepared_marks.hpp"
#include "durability/wal_records.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

namespace pgmemo {

namespace {

constexpr const char *kDirectory = "pg_memo_2pc";
// Written at the end of an archive recovery (a promoted standby, a restored
// backup): the next transaction id then. A transaction prepared before it
// was prepared elsewhere, and its state file, not WAL-logged, may be
// missing here.
constexpr const char *kInheritedFile = "pg_memo_2pc/inherited";

char prepare_gid[GIDSIZE];
bool prepare_gid_noted = false;
// The file this transaction's pre-prepare wrote: removed if the PREPARE
// then fails (temporary objects, say).
char saved_path[MAXPGPATH];
bool saved_file = false;

void file_path(Oid dbid, const char *gid, char *path) {
    snprintf(path, MAXPGPATH, "%s/%u_%016llx", kDirectory, dbid,
             static_cast<unsigned long long>(hash_bytes(gid, strlen(gid))));
}

void write_all(int fd, const char *path, const unsigned char *data, size_t len) {
    errno = 0;
    if (write(fd, data, len) != ssize_t(len))
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_memo could not write file \"%s\": %m", path)));
}

// path gets exactly these bytes, or keeps what it had: a synced temporary
// file renamed over it durably, in the synced directory.
void write_durably(const char *path, const unsigned char *data, size_t len) {
    if (MakePGDirectory(kDirectory) == 0) {
        fsync_fname(kDirectory, true);
        fsync_fname(".", true);
    } else if (errno != EEXIST) {
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_memo could not create directory \"%s\": %m", kDirectory)));
    }
    char temp[MAXPGPATH + 8];
    snprintf(temp, sizeof temp, "%s.tmp", path);
    int fd = OpenTransientFile(temp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
    if (fd < 0) ereport(ERROR, (errcode_for_file_access(), errmsg("pg_memo could not create file \"%s\": %m", temp)));
    write_all(fd, temp, data, len);
    if (pg_fsync(fd) != 0)
        ereport(data_sync_elevel(ERROR), (errcode_for_file_access(), errmsg("pg_memo could not fsync file \"%s\": %m", temp)));
    CloseTransientFile(fd);
    durable_rename(temp, path, ERROR);
}

// The transaction id of the prepared transaction gid of this database.
TransactionId prepared_xid(const char *gid) {
    SPI_connect();
    Oid types[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(gid)};
    TransactionId xid = InvalidTransactionId;
    if (SPI_execute_with_args("SELECT transaction::text FROM pg_catalog.pg_prepared_xacts "
                              "WHERE gid = $1 AND database = pg_catalog.current_database()",
                              1, types, values, nullptr, true, 1) == SPI_OK_SELECT &&
        SPI_processed == 1) {
        char *text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        if (text) xid = TransactionId(strtoul(text, nullptr, 10));
    }
    SPI_finish();
    return xid;
}

// Whether the prepared transaction gid was prepared before this server's
// last archive recovery ended (so maybe elsewhere, without its file here);
// *xid: its transaction id, looked up only when there was such a recovery.
bool inherited_prepared_transaction(const char *gid, TransactionId *xid) {
    int fd = OpenTransientFile(kInheritedFile, O_RDONLY | PG_BINARY);
    if (fd < 0) return false;
    uint32_t horizon = 0;
    bool read_ok = read(fd, &horizon, sizeof horizon) == ssize_t(sizeof horizon);
    CloseTransientFile(fd);
    *xid = prepared_xid(gid);
    // A damaged marker: every prepared transaction counts as inherited.
    return TransactionIdIsValid(*xid) && (!read_ok || TransactionIdPrecedes(*xid, horizon));
}

// A two-phase subscription's apply worker names its prepared transactions
// pg_gid_<subscription>_<remote xid> and writes no state file (it marks its
// tables again when it commits them itself). One resolved by hand (after
// DROP or DISABLE SUBSCRIPTION) is committed here: its marks are every
// table of the subscription (*n = 0 when the subscription is gone).
bool subscription_prepared(const char *gid, uint32_t **slots, uint32_t *n) {
    unsigned subid, remote_xid;
    char rest;
    if (sscanf(gid, "pg_gid_%u_%u%c", &subid, &remote_xid, &rest) != 2) return false;
    List *tables = compat_subscription_relations(Oid(subid));
    *n = 0;
    *slots = static_cast<uint32_t *>(palloc(sizeof(uint32_t) * (2 * list_length(tables) + 1)));
    ListCell *lc;
    foreach (lc, tables) {
        Oid relid = static_cast<SubscriptionRelState *>(lfirst(lc))->relid;
        (*slots)[(*n)++] = relation_slot(relid);
        (*slots)[(*n)++] = any_scope_slot(relid);  // its rows' scopes are unknown
    }
    return true;
}

enum class Found {
    None,      // no file, or another gid's under the same name: left alone
    Leftover,  // this gid's, of a transaction that is not prepared (any more)
    Marks,     // the marks of the prepared transaction
    Damaged,
};

// What the file at `path` holds for the prepared transaction `gid` of this
// database.
Found load(const char *path, const char *gid, PreparedMarks *marks) {
    int fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
    if (fd < 0) {
        if (errno == ENOENT) return Found::None;
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_memo could not open file \"%s\": %m", path)));
    }
    struct stat st;
    if (fstat(fd, &st) != 0)
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_memo could not stat file \"%s\": %m", path)));
    size_t len = size_t(st.st_size);
    auto *data = static_cast<unsigned char *>(palloc(len ? len : 1));
    auto *slots = static_cast<uint32_t *>(palloc(sizeof(uint32_t) * (len / sizeof(uint32_t) + 1)));
    bool read_ok = read(fd, data, len) == ssize_t(len);
    CloseTransientFile(fd);
    if (!read_ok || !decode_prepared_marks(data, len, marks, slots)) return Found::Damaged;
    if (marks->dbid != MyDatabaseId || marks->gid_len != strlen(gid) || memcmp(marks->gid, gid, marks->gid_len) != 0)
        return Found::None;
    return TransactionIdIsInProgress(marks->xid) ? Found::Marks : Found::Leftover;
}

}  // namespace

void note_prepare_gid(const char *gid) {
    strlcpy(prepare_gid, gid, sizeof prepare_gid);
    prepare_gid_noted = true;
}

void forget_prepare_gid(bool prepared) {
    if (saved_file && !prepared) (void)unlink(saved_path);
    saved_file = false;
    prepare_gid_noted = false;
}

void save_prepared_marks(TransactionId xid, const uint32_t *slots, uint32_t nslots) {
    // Only PREPARE TRANSACTION names a gid; a logical replication apply
    // worker prepares without one and marks its tables again at COMMIT
    // PREPARED (invalidation.cpp).
    if (nslots == 0 || !prepare_gid_noted) return;
    PreparedMarks marks;
    marks.xid = xid;
    marks.dbid = MyDatabaseId;
    marks.gid = prepare_gid;
    marks.gid_len = uint32_t(strlen(prepare_gid));
    marks.slots = slots;
    marks.nslots = nslots;
    size_t len = encoded_prepared_marks_size(marks);
    auto *bytes = static_cast<unsigned char *>(palloc(len));
    encode_prepared_marks(marks, bytes);

    char path[MAXPGPATH];
    file_path(MyDatabaseId, prepare_gid, path);
    write_durably(path, bytes, len);
    strlcpy(saved_path, path, sizeof saved_path);
    saved_file = true;
}

void note_inherited_prepared_transactions() {
    uint32_t horizon = XidFromFullTransactionId(ReadNextFullTransactionId());
    // In the startup process, an error would stop the server: a failed
    // write is logged instead (the disk is then the lesser problem).
    MemoryContext context = CurrentMemoryContext;
    PG_TRY();
    {
        write_durably(kInheritedFile, reinterpret_cast<const unsigned char *>(&horizon), sizeof horizon);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        EmitErrorReport();
        FlushErrorState();
    }
    PG_END_TRY();
}

void finish_prepared(const TransactionStmt &stmt, FnRef<void()> finish) {
    char path[MAXPGPATH];
    file_path(MyDatabaseId, stmt.gid, path);
    PreparedMarks marks;
    Found found = load(path, stmt.gid, &marks);
    bool commit = stmt.kind == TRANS_STMT_COMMIT_PREPARED;
    // Without its marks, a commit announces and bumps every counter, so
    // nothing stale is served.
    bool every_counter = false;
    if (found == Found::Damaged) {
        // Never expected: written whole and synced, checksummed.
        ereport(WARNING, (errmsg("pg_memo: the state file of prepared transaction \"%s\" is damaged", stmt.gid),
                          errdetail("Every cached result is invalidated at its commit instead.")));
        every_counter = true;
        marks.xid = InvalidTransactionId;
    } else if (commit) {
        // The file holds this prepared transaction's marks only if it names
        // its very transaction id: a base backup can bring the file of an
        // earlier transaction with the same gid, whose xid is long finished
        // here (or, promoted, never ran here at all).
        if (found == Found::Marks && marks.xid != prepared_xid(stmt.gid)) found = Found::Leftover;
        uint32_t *subscription_slots, nsubscription;
        TransactionId xid;
        if (found != Found::Marks && subscription_prepared(stmt.gid, &subscription_slots, &nsubscription)) {
            every_counter = nsubscription == 0;
            marks.xid = prepared_xid(stmt.gid);
            marks.slots = subscription_slots;
            marks.nslots = nsubscription;
            found = Found::Marks;
        } else if (found != Found::Marks && inherited_prepared_transaction(stmt.gid, &xid)) {
            // Prepared before a promotion or a restore: its file, if it had
            // one, stayed with the server that prepared it.
            every_counter = true;
            marks.xid = xid;
        }
    }
    if (!commit || !(every_counter || found == Found::Marks)) {
        finish();
        if (found != Found::None) (void)unlink(path);
        return;
    }
    if (every_counter) {
        auto *every = static_cast<uint32_t *>(palloc(sizeof(uint32_t) * Generations::kSlots));
        for (uint32_t s = 0; s < Generations::kSlots; s++) every[s] = s;
        marks.slots = every;
        marks.nslots = Generations::kSlots;
    }

    // As a commit's pre-commit would: announced before the commit can be
    // visible (and, for standbys, BEGIN before its commit record).
    Shared &sh = shared_state();
    const uint32_t *slots = marks.slots;
    uint32_t nslots = marks.nslots;
    TimestampTz began_at = GetCurrentTimestamp();
    for (uint32_t i = 0; i < nslots; i++) sh.gens.begin_commit(slots[i]);
    // (A damaged file's has no id: the standby's announcement then lasts
    // until the primary restarts, and the standby computes every call.)
    if (writing_wal_records()) log_commit_begin(marks.xid, slots, nslots);
    PG_TRY();
    {
        finish();
    }
    PG_CATCH();
    {
        // Atomics only: no lock is taken, none can be held over.
        for (uint32_t i = 0; i < nslots; i++) sh.gens.end_commit(slots[i]);
        PG_RE_THROW();
    }
    PG_END_TRY();
    // Visible now, its invalidations sent (FinishPreparedTransaction).
    for (uint32_t i = 0; i < nslots; i++) sh.gens.bump(slots[i], began_at);
    count_commit_bumps(nslots);
    for (uint32_t i = 0; i < nslots; i++) sh.gens.end_commit(slots[i]);
    (void)unlink(path);
}

}  // namespace pgmemo
