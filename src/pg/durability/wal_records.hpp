// pg_memo's own WAL records (a custom resource manager): what invalidates
// entries on the primary, replayed on a hot standby so that the standby
// serves its own entries exactly (docs/consistency.md, "Hot standby").
//
//   BEGIN (at pre-commit, before the commit record, in the same flush): the
//     transaction's id and the counters it marked. Replay announces them as
//     committing, before the standby replays the commit record that makes
//     the rows visible. The replay of that commit (or abort) record settles
//     them: pg_memo wraps the redo of PostgreSQL's transaction records in
//     the startup process, and bumps after it, once the commit is visible
//     and its catalog invalidations are sent, as the primary does.
//   BUMP: counters marked by a transaction without a commit record of its
//     own (memo.invalidate alone), or bumped at PREPARE; bumped at replay.
//   PREPARED: a logical replication apply worker's prepared transaction
//     (a two-phase subscription) and the counters of its subscription's
//     tables. Replay remembers them; the replay of its COMMIT PREPARED
//     record announces them first and bumps them after, as for BEGIN. (A
//     user's PREPARE TRANSACTION needs none: its COMMIT PREPARED writes a
//     BEGIN; the apply worker's runs inside a transaction of its own, with
//     no id, whose BUMP would come after the rows are visible.)
//   DROP DATABASE: no record of pg_memo's; the replay of PostgreSQL's own
//     record frees the database's entries on the standby too.
//   RESET: memo.reset(); the standby empties its store too.
//   STATE: says only "this primary writes the records"; written now and
//     then by misses, so that a standby starts serving without a write.
//
// A standby serves only while it knows that every commit it replays had
// its records written: from the first record it replays, until the primary
// restarts (a shutdown or end-of-recovery checkpoint in the WAL), or a
// record it cannot read. Until then, and after, it computes every call.
// Every entry stored on a standby depends on one more counter, the replay
// counter, which is announced (raised) while the standby does not serve and
// bumped when it starts again: no entry computed before a gap is served
// after it.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registers the resource manager; from _PG_init (shared_preload_libraries).
// archive_recovery_ended: called at the end of an archive recovery (a
// promotion, a restore), in the startup process.
void register_wal_records(void (*archive_recovery_ended)());

// The replay state's shared memory, laid out by shared_state.cpp.
size_t standby_replay_shared_size();
void standby_replay_attach(char *mem, bool created);

// Whether this server writes the records (pg_memo.standby_records, and a
// WAL level that keeps standby information).
bool writing_wal_records();

// Whether this server, in recovery, may serve entries: it replays the
// records of a primary that writes them all.
bool standby_serves();


// A committing transaction with an id: its marked counters, before its
// commit record.
void log_commit_begin(TransactionId xid, const uint32_t *slots, uint32_t nslots);
// Counters bumped with no commit record to settle them.
void log_bump(const uint32_t *slots, uint32_t nslots);
// An apply worker's PREPARE: its transaction and its marked counters.
void log_prepared(TransactionId xid, const uint32_t *slots, uint32_t nslots);
// memo.reset().
void log_reset();
// At most every few seconds, from a miss: tells standbys that this primary
// writes the records (cheap when not due).
void log_state_if_due();

}  // namespace pgmemo
