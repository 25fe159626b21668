// Two-phase commit (docs/consistency.md, "Two-phase commit"). PREPARE is
// never refused: the prepared transaction's marked counters are kept in a
// state file of pg_memo's, written durably before the PREPARE record, so
// that they outlive a restart or a crash as the prepared transaction does.
// COMMIT PREPARED, from any session, announces them before PostgreSQL
// commits the prepared transaction and bumps them once that commit is
// visible and its invalidations are sent; ROLLBACK PREPARED forgets them.
#pragma once

#include "pg_memo.hpp"
#include "function_ref.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace pgmemo {

// PREPARE TRANSACTION's gid, noted by the utility hub for the pre-prepare
// that follows at the end of the statement; forgotten when the transaction
// ends (prepared, or not: then its file goes too).
void note_prepare_gid(const char *gid);
void forget_prepare_gid(bool prepared);

// At pre-prepare: keeps the marked counters for the noted gid, durably.
// Nothing when the transaction marked nothing.
void save_prepared_marks(TransactionId xid, const uint32_t *slots, uint32_t nslots);

// At the end of an archive recovery (promotion, a restored backup): the
// prepared transactions recovered may have been prepared by another server,
// whose state files are not here. Their COMMIT PREPARED announces and bumps
// every counter.
void note_inherited_prepared_transactions();

// COMMIT PREPARED or ROLLBACK PREPARED (from the utility hub,
// hooks/utility_events.cpp): runs `finish` (PostgreSQL's own statement)
// between the announcement and the bump of the prepared transaction's
// counters.
void finish_prepared(const TransactionStmt &stmt, FnRef<void()> finish);

}  // namespace pgmemo
