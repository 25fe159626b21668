// Write tracking: what the current transaction wrote, announced at
// pre-commit and bumped after its commit (docs/consistency.md, "Writers").
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "commands/trigger.h"
}

namespace pgmemo {

// Registers the transaction callbacks; called from _PG_init.
void register_invalidation_callbacks();

// The counters the current transaction has written (tables it wrote, DDL).
SlotSetView own_writes();

// Marks a counter as written by this transaction: bumped at commit, and this
// transaction bypasses entries that depend on it until then.
void mark_written(uint32_t slot);

// A relation's definition changed (DDL, memo.invalidate): its Relation and
// Definition counters are both marked, so no caller accepts an older answer
// over it (pg_memo.max_staleness).
void mark_relation_changed(Oid relid);

// A watched table's trigger fired: its rows are being written. Unlike
// mark_written, this leaves the counter free to be bumped with a delta
// record (delta_capture.hpp).
void mark_rows_written(Oid relid, TriggerEvent event);

uint32_t relation_slot(Oid relid);    // its rows (and definition)
uint32_t definition_slot(Oid relid);  // its definition only

}  // namespace pgmemo
