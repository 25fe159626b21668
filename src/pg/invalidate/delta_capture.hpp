// Delta capture: the rows each statement changed in a table watched with
// deltas, kept for this transaction and published at its commit
// (docs/consistency.md, "Deltas").
#pragma once

#include "pg_memo.hpp"
#include "generations.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace pgmemo {

// pg_memo_invalidate (BEFORE ... FOR EACH STATEMENT) fired for rel.
void note_statement_start(Relation rel, uint32_t slot, TriggerEvent event);

// Pre-commit or pre-prepare, before the marks are announced or saved: the
// AnyScope counter of every table with scope columns whose written rows
// were not all captured
// (their scopes are unknown: TRUNCATE, past pg_memo.max_delta_rows, ...).
void mark_scopes_of_uncaptured_writes(const SlotSetView &coarse);

// Pre-commit, before the commit is announced: one record per table whose
// every statement was captured, on a counter that nothing else marked
// (coarse: the counters marked by anything but a row write).
void reserve_delta_records(const SlotSetView &coarse);

// After the commit is visible: bumps slot and publishes its record, under
// the delta log's lock. False if slot has no record (bump it plainly).
bool bump_with_delta_record(uint32_t slot, Micros visible_after);

// The transaction ended: forget its rows.
void forget_row_writes();

// The subtransaction subid aborted (the transaction-event hub,
// transaction_events.cpp): the rows captured inside it never happened.
void forget_rows_captured_in(SubTransactionId subid);

}  // namespace pgmemo
