// A writing transaction's commit protocol: what it wrote (write_set.hpp)
// announced at pre-commit, bumped once its commit is visible, forgotten at
// its end; and the watch trigger's function.
//
// The protocol is docs/consistency.md, "Writers". In short:
//   - A BEFORE ... FOR EACH STATEMENT trigger on every watched table marks the
//     table's generation counter as written by this transaction. BEFORE, so
//     that a memo call evaluated inside the writing statement already sees
//     the mark and does not store a result containing the statement's own,
//     uncommitted rows.
//   - DDL is marked by catalog_changes.cpp, into the same written set.
//   - Logical replication apply writes rows without firing statement
//     triggers: in an apply worker, every transaction marks the relations of
//     its subscription at pre-commit. (A row trigger would cost every
//     ordinary writer a tuple fetch per row.)
//   - At pre-commit the marked counters are announced as committing, before
//     the commit is visible; until the bump lowers that again, no entry
//     depending on them is served (Generations::check).
//   - The commit is visible to new snapshots before XACT_EVENT_COMMIT, but
//     its catalog invalidations are sent only after it (AtEOXact_Inval). The
//     bump waits for them, in the resource release that follows, so that a
//     reader that sees a bumped counter also receives the invalidations of
//     the commit that bumped it. It only does atomic increments.
//   - Abort forgets the marks: rolled-back writes never happened.
//   - A table watched with deltas also has its changed rows captured
//     (delta_capture.cpp): its counter is then bumped together with a
//     record of them, so that readers can carry entries forward. Any mark
//     but the trigger's (DDL, memo.invalidate, apply) is "coarse": its
//     counter gets no record.
// The hub that calls these steps in order is transaction_events.cpp.
#include "invalidate/invalidation.hpp"

extern "C" {
#include "catalog/pg_subscription_rel.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "replication/worker_internal.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(pg_memo_invalidation_trigger);
Datum pg_memo_invalidation_trigger(PG_FUNCTION_ARGS);
}

#include "invalidate/catalog_changes.hpp"
#include "invalidate/delta_capture.hpp"
#include "commit_counts.hpp"
#include "compat.hpp"
#include "durability/wal_records.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"
#include "invalidate/write_set.hpp"

namespace pgmemo {

namespace {

bool purge_after_commit = false;  // it dropped relations: free their entries
uint32_t pending_count = 0;       // own_writes().slots[0..n) whose commit is announced
bool commit_to_publish = false;   // committed; bumped once its invalidations are out
// Read at pre-commit (or pre-prepare), before the commit can be visible: the
// bumps carry it as the earliest moment their change can have become
// visible (Generations::invalidated_after).
Micros commit_began_at = 0;
// Whether the BEGIN record went to WAL for standbys (wal_records.hpp): their
// replay of the commit record then settles it.
bool announced_in_wal = false;

// Announces the commit on every marked counter before it becomes visible
// (see Generations): until the bump, no entry depending on them is current.
void begin_commit() {
    Shared &sh = shared_state();
    SlotSetView written = own_writes();
    for (uint32_t i = pending_count; i < written.count; i++) sh.gens.begin_commit(written.slots[i]);
    pending_count = written.count;
    // Before the commit record: a standby announces them before it makes
    // the rows visible. A transaction without an id has no commit record;
    // its counters go to WAL with the bump.
    TransactionId xid = GetTopTransactionIdIfAny();
    if (!announced_in_wal && TransactionIdIsValid(xid) && writing_wal_records()) {
        log_commit_begin(xid, written.slots, written.count);
        announced_in_wal = true;
    }
}

// After the bump, or when the transaction aborts instead. Atomics only.
void end_commit() {
    if (pending_count == 0) return;
    Shared &sh = shared_state();
    SlotSetView written = own_writes();
    for (uint32_t i = 0; i < pending_count; i++) sh.gens.end_commit(written.slots[i]);
    pending_count = 0;
}

}  // namespace

void forget_transaction() {
    announced_in_wal = false;
    forget_writes();
    forget_row_writes();
    purge_after_commit = false;
    forget_catalog_changes();
}

// In a logical replication worker: the tables its subscription replicates,
// which this transaction may have written row by row. Coarse (all of them,
// whichever it wrote) but it costs nothing outside apply workers. Also run
// by the transaction that does COMMIT PREPARED for a two-phase
// subscription, so the bump follows the moment its rows became visible.
void mark_subscription_relations() {
    if (!MyLogicalRepWorker) return;
    // Its rows may be visible before this pre-commit (a two-phase
    // subscription's COMMIT PREPARED runs inside this transaction): the
    // transaction's start is the earliest they can have become visible.
    commit_began_at = GetCurrentTransactionStartTimestamp();
    ListCell *lc;
    foreach (lc, compat_subscription_relations(MyLogicalRepWorker->subid)) {
        auto *state = static_cast<SubscriptionRelState *>(lfirst(lc));
        mark_written(relation_slot(state->relid));
        mark_written(any_scope_slot(state->relid));  // its rows' scopes are unknown
    }
}

namespace {

// Bumps the marked counters and withdraws their announcement. Must not
// fail: atomics only.
void publish_commit() {
    SlotSetView written = own_writes();
    if (written.count > 0) {
        Shared &sh = shared_state();
        for (uint32_t i = 0; i < written.count; i++)
            if (!bump_with_delta_record(written.slots[i], commit_began_at))
                sh.gens.bump(written.slots[i], commit_began_at);
        count_commit_bumps(written.count);
        // Bumped on a standby by its replay of the commit record, after
        // the BEGIN; without one (no transaction id), by a record of its own.
        if (!announced_in_wal && writing_wal_records()) log_bump(written.slots, written.count);
        end_commit();
        // A dropped table's entries can never be hit again: give
        // their memory back now rather than when eviction finds them.
        if (purge_after_commit) sh.store.remove_stale();
    }
    forget_transaction();
}

}  // namespace

void commit_starts() { commit_began_at = GetCurrentTimestamp(); }

void purge_dropped_relations_after_commit(bool dropped) { purge_after_commit = dropped; }

void announce_commit() {
    if (own_writes().count > 0) begin_commit();
}

void log_apply_worker_prepare() {
    if (!MyLogicalRepWorker || !writing_wal_records()) return;
    mark_subscription_relations();
    if (own_writes().count > 0) log_prepared(GetTopTransactionIdIfAny(), own_writes().slots, own_writes().count);
}

void commit_is_visible() { commit_to_publish = true; }

void publish_visible_commit() {
    if (!commit_to_publish) return;
    commit_to_publish = false;
    publish_commit();
}

void abandon_commit() {
    commit_to_publish = false;
    end_commit();
}

namespace {

// The watched table's statement trigger: its counter, and the start of the
// statement whose rows may be captured (delta_capture.hpp).
void note_rows_written(Relation rel, TriggerEvent event) {
    uint32_t slot = relation_slot(RelationGetRelid(rel));
    mark_rows_written(slot);
    note_statement_start(rel, slot, event);
}

}  // namespace

}  // namespace pgmemo

Datum pg_memo_invalidation_trigger(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("memo.invalidation_trigger() must be called as a trigger")));
    TriggerData *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    pgmemo::shared_state();  // fail here, where aborting is still clean
    pgmemo::note_rows_written(trigdata->tg_relation, trigdata->tg_event);
    // A statement trigger: the result is ignored.
    return PointerGetDatum(nullptr);
}
