// Delta capture (docs/consistency.md, "Deltas").
//
// A table watched with deltas has, beside pg_memo_invalidate, three AFTER
// ... FOR EACH STATEMENT triggers with transition tables (one per event:
// PostgreSQL allows transition tables on single-event triggers only), all
// calling memo.delta_trigger(). This file keeps, for the transaction, each
// written table's captured rows and how many statements started and were
// captured, and publishes one record per table at commit.
//
// A table's rows are published only when nothing can be missing from them:
//   - every statement that fired pg_memo_invalidate (BEFORE) for an event
//     was captured (AFTER) for the same event, no more, no fewer: a disabled,
//     dropped or imitated delta trigger, a statement that failed, or any
//     write path that skips the AFTER trigger shows as a mismatch;
//   - no TRUNCATE, no statement past pg_memo.max_delta_rows, nothing captured
//     in a subtransaction that rolled back;
//   - nothing but row writes marked the table's counter (DDL, memo.invalidate,
//     logical replication apply: write_set.hpp's coarse set), and no other
//     table of the transaction shares the counter;
//   - the record fits the log.
// Otherwise the counter is bumped without a record, which every reader
// treats as "anything may have changed": today's table-level invalidation.
//
// A table with scope columns (invalidate/scope_columns.hpp) also has, for each captured row,
// old and new alike, the counter of each value its scope columns hold
// marked as the rows are captured; a write whose rows are not all captured
// marks the table's AnyScope counter at pre-commit instead.
//
// Locks: the delta log's LWLock, exclusive, to write a record at
// pre-commit and to bump a counter together with publishing its record at
// commit; held over no call that can raise and never with another
// pg_memo lock (docs/architecture.md, "Locking protocol"). The captured
// rows are this backend's own.
#include "invalidate/delta_capture.hpp"

extern "C" {
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_delta_trigger);
Datum pg_memo_delta_trigger(PG_FUNCTION_ARGS);
}

#include "invalidate/scope_columns.hpp"
#include "invalidate/write_set.hpp"
#include "settings.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

namespace pgmemo {

namespace {

enum Event { kInsert, kUpdate, kDelete, kEvents };

// One table written by this transaction through its pg_memo trigger.
struct RowWrites {
    Oid relid;
    uint32_t slot;
    int32 started[kEvents];   // statements that fired pg_memo_invalidate
    int32 captured[kEvents];  // statements whose rows memo.delta_trigger kept
    bool coarse;              // publish no record: see the file header
    bool has_deltas;          // memo.delta_trigger fired for it
    SubTransactionId last_capture;
    List *old_rows;  // HeapTuple, flattened, in row_context
    List *new_rows;
    uint64 bytes;  // DeltaRowWriter::row_space of every row
    bool reserved;
    uint64 position;  // of the reserved record
    bool scoped;        // it has scope columns (invalidate/scope_columns.hpp)
    int scopes_marked;  // Scope counters marked for it
    bool any_scope;     // its AnyScope counter is marked
};

RowWrites *tables = nullptr;  // TopMemoryContext: read by the commit's publication
uint32_t ntables = 0;
uint32_t tables_capacity = 0;
MemoryContext row_context = nullptr;

RowWrites *find_table(Oid relid) {
    for (uint32_t i = 0; i < ntables; i++)
        if (tables[i].relid == relid) return &tables[i];
    return nullptr;
}

RowWrites *table_for(Oid relid, uint32_t slot) {
    if (RowWrites *t = find_table(relid)) return t;
    RowWrites fresh{};
    fresh.relid = relid;
    fresh.slot = slot;
    append_kept(&tables, &ntables, &tables_capacity, fresh);
    return &tables[ntables - 1];
}

void drop_rows(RowWrites *t) {
    t->coarse = true;
    t->old_rows = t->new_rows = NIL;  // freed with row_context at the end
    t->bytes = 0;
}

int event_of(TriggerEvent event) {
    if (TRIGGER_FIRED_BY_INSERT(event)) return kInsert;
    if (TRIGGER_FIRED_BY_UPDATE(event)) return kUpdate;
    if (TRIGGER_FIRED_BY_DELETE(event)) return kDelete;
    return -1;  // TRUNCATE
}

// Copies a transition table's rows, flattened: a reader in another backend
// must not follow TOAST pointers to rows that VACUUM may have removed.
List *copy_rows(Tuplestorestate *rows, TupleDesc desc, uint64 *bytes) {
    List *out = NIL;
    TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
    tuplestore_rescan(rows);
    while (tuplestore_gettupleslot(rows, true, false, slot)) {
        HeapTuple tuple = ExecCopySlotHeapTuple(slot);
        if (HeapTupleHasExternal(tuple)) tuple = toast_flatten_tuple(tuple, desc);
        *bytes += DeltaRowWriter::row_space(tuple->t_len);
        out = lappend(out, tuple);
    }
    ExecDropSingleTupleTableSlot(slot);
    return out;
}

bool slot_shared(const RowWrites &t) {
    for (uint32_t i = 0; i < ntables; i++)
        if (tables[i].relid != t.relid && tables[i].slot == t.slot) return true;
    return false;
}

bool complete(const RowWrites &t, const SlotSetView &coarse) {
    if (t.coarse || coarse.contains(t.slot) || slot_shared(t)) return false;
    for (int e = 0; e < kEvents; e++)
        if (t.started[e] != t.captured[e]) return false;
    return true;
}

void mark_any_scope(RowWrites *t) {
    if (t->any_scope) return;
    mark_rows_written(any_scope_slot(t->relid));
    t->any_scope = true;
}

// Marks the scopes that rows (a statement's old or new rows, just
// captured) hold in the scope columns its trigger names.
void mark_row_scopes(RowWrites *t, Relation rel, const Trigger &trigger, List *rows) {
    ScopeColumns columns = scope_columns_of_trigger(trigger);
    TupleDesc desc = RelationGetDescr(rel);
    for (int c = 0; c < columns.count && !t->any_scope; c++) {
        AttrNumber attnum = columns.attnums[c];
        ScopeHasher hasher;
        if (attnum > desc->natts || TupleDescAttr(desc, attnum - 1)->attisdropped ||
            !scope_hasher_for(TupleDescAttr(desc, attnum - 1)->atttypid,
                              TupleDescAttr(desc, attnum - 1)->attcollation, &hasher))
            return mark_any_scope(t);
        ScopeHashes hashes;
        ListCell *lc;
        foreach (lc, rows) {
            bool isnull;
            Datum value = heap_getattr(static_cast<HeapTuple>(lfirst(lc)), attnum, desc, &isnull);
            add_scope_values(hasher, value, isnull, &hashes);
            if (t->scopes_marked + hashes.count > kMaxScopesPerTable) return mark_any_scope(t);
        }
        for (int i = 0; i < hashes.count; i++) mark_rows_written(scope_slot(t->relid, attnum, hashes.values[i]));
        t->scopes_marked += hashes.count;
    }
}

void write_record(RowWrites *t, TransactionId xid) {
    Shared &sh = shared_state();
    uint32_t nold = uint32_t(list_length(t->old_rows)), nnew = uint32_t(list_length(t->new_rows));
    LWLockAcquire(delta_lock(), LW_EXCLUSIVE);
    DeltaRecord *r = sh.deltas.reserve(t->slot, MyDatabaseId, t->relid, xid, nold, nnew, t->bytes);
    if (r) {
        DeltaRowWriter w(r);
        ListCell *lc;
        foreach (lc, t->old_rows) w.add(static_cast<HeapTuple>(lfirst(lc))->t_data, static_cast<HeapTuple>(lfirst(lc))->t_len);
        foreach (lc, t->new_rows) w.add(static_cast<HeapTuple>(lfirst(lc))->t_data, static_cast<HeapTuple>(lfirst(lc))->t_len);
        t->reserved = true;
        t->position = r->position;
    }
    LWLockRelease(delta_lock());
}

}  // namespace

void note_statement_start(Relation rel, uint32_t slot, TriggerEvent event) {
    RowWrites *t = table_for(RelationGetRelid(rel), slot);
    t->scoped |= may_have_scope_columns(rel);
    int e = event_of(event);
    if (e < 0)
        drop_rows(t);  // TRUNCATE: no rows to tell
    else
        t->started[e]++;
}

void mark_scopes_of_uncaptured_writes(const SlotSetView &coarse) {
    for (uint32_t i = 0; i < ntables; i++)
        if (tables[i].scoped && !complete(tables[i], coarse)) mark_any_scope(&tables[i]);
}

void reserve_delta_records(const SlotSetView &coarse) {
    TransactionId xid = GetTopTransactionIdIfAny();
    Shared &sh = shared_state();
    for (uint32_t i = 0; i < ntables; i++) {
        RowWrites *t = &tables[i];
        if (complete(*t, coarse))
            write_record(t, xid);
        if (t->has_deltas && !t->reserved) sh.deltas.note_fallback();
    }
}

bool bump_with_delta_record(uint32_t slot, Micros visible_after) {
    for (uint32_t i = 0; i < ntables; i++) {
        RowWrites &t = tables[i];
        if (t.slot != slot || !t.reserved) continue;
        Shared &sh = shared_state();
        // One step under the lock: a reader sees the new value and its
        // record together, or neither.
        LWLockAcquire(delta_lock(), LW_EXCLUSIVE);
        uint64_t generation = sh.gens.bump_to(slot, visible_after);
        if (!sh.deltas.publish(t.position, generation)) sh.deltas.note_fallback();  // overwritten meanwhile
        LWLockRelease(delta_lock());
        return true;
    }
    return false;
}

void forget_row_writes() {
    ntables = 0;
    if (row_context) MemoryContextReset(row_context);
}

void forget_rows_captured_in(SubTransactionId subid) {
    // Subtransactions started inside this one have larger ids: a capture
    // made since it began was made inside it, and its rows never happened.
    for (uint32_t i = 0; i < ntables; i++)
        if (tables[i].last_capture >= subid) drop_rows(&tables[i]);
}

}  // namespace pgmemo

// memo.delta_trigger(): AFTER INSERT, UPDATE or DELETE FOR EACH STATEMENT,
// with the transition tables of its event.
Datum pg_memo_delta_trigger(PG_FUNCTION_ARGS) {
    using namespace pgmemo;
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("memo.delta_trigger() must be called as a trigger")));
    auto *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    shared_state();
    Relation rel = trigdata->tg_relation;
    RowWrites *t = table_for(RelationGetRelid(rel), relation_slot(RelationGetRelid(rel)));
    int e = event_of(trigdata->tg_event);
    t->has_deltas = true;
    if (e < 0 || !TRIGGER_FIRED_AFTER(trigdata->tg_event) || !TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event)) {
        drop_rows(t);
        return PointerGetDatum(nullptr);
    }
    t->captured[e]++;
    t->has_deltas = true;
    if (t->coarse) return PointerGetDatum(nullptr);

    // The transition tables this event needs: a trigger made otherwise
    // (by hand) cannot tell what changed.
    Tuplestorestate *old_rows = trigdata->tg_oldtable, *new_rows = trigdata->tg_newtable;
    if ((e != kInsert && !old_rows) || (e != kDelete && !new_rows)) {
        drop_rows(t);
        return PointerGetDatum(nullptr);
    }
    int64 changed = (old_rows ? tuplestore_tuple_count(old_rows) : 0) + (new_rows ? tuplestore_tuple_count(new_rows) : 0);
    int64 statement_rows = e == kUpdate ? changed / 2 : changed;
    if (statement_rows > guc_max_delta_rows) {
        drop_rows(t);
        return PointerGetDatum(nullptr);
    }
    if (!row_context)
        row_context = AllocSetContextCreate(TopMemoryContext, "pg_memo delta rows", ALLOCSET_DEFAULT_SIZES);
    MemoryContext old = MemoryContextSwitchTo(row_context);
    TupleDesc desc = RelationGetDescr(rel);
    List *old_copies = old_rows ? copy_rows(old_rows, desc, &t->bytes) : NIL;
    List *new_copies = new_rows ? copy_rows(new_rows, desc, &t->bytes) : NIL;
    t->old_rows = list_concat(t->old_rows, old_copies);
    t->new_rows = list_concat(t->new_rows, new_copies);
    MemoryContextSwitchTo(old);
    // Old rows as well as new: a row moved out of a scope changes it too.
    mark_row_scopes(t, rel, *trigdata->tg_trigger, old_copies);
    mark_row_scopes(t, rel, *trigdata->tg_trigger, new_copies);
    t->last_capture = GetCurrentSubTransactionId();
    // A record larger than the log keeps is never written: stop early.
    if (t->bytes > shared_state().deltas.max_record_bytes()) drop_rows(t);
    return PointerGetDatum(nullptr);
}
