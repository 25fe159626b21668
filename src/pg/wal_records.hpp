// pg_memo's own WAL records (a custom resource manager): what invalidates
// entries on the primary, replayed on a hot standby in the order the
// standby needs it (issue 17, first part; the standby does not serve
// entries yet: every memo call in recovery still computes).
//
//   BEGIN (at pre-commit, before the commit record): the counters the
//     transaction marked. Replay announces them as committing, before the
//     standby replays the commit record that makes the rows visible.
//   END (after the commit is visible and its invalidations sent): the same
//     counters. Replay bumps them and withdraws the announcement.
// A primary that crashed between the two leaves an announcement without
// its END: resolved when a later record is replayed and the transaction
// shows as committed or aborted in the replayed commit log, and at the end
// of recovery (promotion).
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registers the resource manager; from _PG_init (shared_preload_libraries).
void register_wal_records();

// Whether this server writes the records (pg_memo.standby_records, and a
// WAL level that keeps standby information).
bool writing_wal_records();

void log_commit_begin(TransactionId xid, const uint32_t *slots, uint32_t nslots);
void log_commit_end(TransactionId xid, const uint32_t *slots, uint32_t nslots);

}  // namespace pgmemo
