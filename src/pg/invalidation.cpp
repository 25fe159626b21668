// Invalidation: per-transaction write tracking, bumped at commit.
//
// The protocol is docs/consistency.md. In short:
//   - A BEFORE ... FOR EACH STATEMENT trigger on every watched table marks the
//     table's generation counter as written by this transaction. BEFORE, so
//     that a memo call evaluated inside the writing statement already sees
//     the mark and does not store a result containing the statement's own,
//     uncommitted rows.
//   - DDL is seen twice: the object access hook marks altered and dropped
//     relations at once (so the DDL transaction bypasses their entries), and
//     at pre-commit the transaction's own relcache invalidations mark every
//     relation whose definition, privileges, policies or triggers changed.
//   - XACT_EVENT_COMMIT runs after the commit is visible to new snapshots:
//     it bumps every marked counter. It only does atomic increments.
//   - Abort forgets the marks: rolled-back writes never happened.
#include "memoize.hpp"

extern "C" {
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/sinval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(pg_memo_invalidation_trigger);
Datum pg_memo_invalidation_trigger(PG_FUNCTION_ARGS);
}

namespace pgmemo {

namespace {

// Counters this transaction wrote. Lives in TopMemoryContext so that the
// commit callback can read it without allocating.
uint32_t *written_slots = nullptr;
uint32_t written_count = 0;
uint32_t written_capacity = 0;
uint64_t written_filter = 0;
bool wrote_watched_rows = false;  // a watched table's trigger fired
bool dropped_relation = false;    // purge dead entries once committed
bool changed_names = false;       // created/renamed relations or routines

// Relations whose name or schema may have changed (created, renamed, moved):
// their schema's name resolution is re-stamped at pre-commit.
List *renamed_relations = NIL;  // in TopTransactionContext

object_access_hook_type prev_object_access_hook = nullptr;

void forget_transaction() {
    written_count = 0;
    written_filter = 0;
    wrote_watched_rows = false;
    dropped_relation = false;
    changed_names = false;
    renamed_relations = NIL;  // its memory goes with the transaction
}

void mark_namespace(Oid nspid) {
    if (OidIsValid(nspid))
        mark_written(Generations::slot_of(MyDatabaseId, GenerationKind::Namespace, nspid));
}

// Marks every relation the transaction sent a relcache invalidation for:
// ALTER, DROP, GRANT/REVOKE, policies, trigger changes, view replacement.
void mark_invalidated_relations() {
    SharedInvalidationMessage *msgs;
    bool init_file_inval;
    int n = xactGetCommittedInvalidationMessages(&msgs, &init_file_inval);
    for (int i = 0; i < n; i++) {
        const SharedInvalidationMessage &m = msgs[i];
        if (m.id == SHAREDINVALRELCACHE_ID && m.rc.dbId == MyDatabaseId && OidIsValid(m.rc.relId))
            mark_written(relation_slot(m.rc.relId));
    }
    ListCell *lc;
    foreach (lc, renamed_relations)
        mark_namespace(get_rel_namespace(lfirst_oid(lc)));
}

void memo_xact_callback(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
            // Only transactions with an xid changed catalogs; this also skips
            // VACUUM's in-place statistics updates.
            if (TransactionIdIsValid(GetTopTransactionIdIfAny())) mark_invalidated_relations();
            break;
        case XACT_EVENT_PRE_PREPARE:
            // COMMIT PREPARED may run in any backend, without this session's
            // record of what to invalidate. DDL whose locks keep readers out
            // until then is safe to bump now; writes and name changes are not.
            if (wrote_watched_rows)
                ereport(ERROR,
                        (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                         errmsg("cannot PREPARE a transaction that wrote to a table watched by pg_memo"),
                         errdetail("COMMIT PREPARED runs without this session's record of the "
                                   "writes, so cached results could not be invalidated.")));
            if (changed_names)
                ereport(ERROR,
                        (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                         errmsg("cannot PREPARE a transaction that creates or renames relations, "
                                "functions, operators or types while pg_memo is loaded"),
                         errdetail("Such changes can alter what a cached query's names resolve to, and "
                                   "COMMIT PREPARED could not invalidate the results.")));
            if (TransactionIdIsValid(GetTopTransactionIdIfAny())) mark_invalidated_relations();
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PREPARE:
            // Visible to new snapshots now (or, for PREPARE, only DDL whose
            // locks keep readers out until COMMIT PREPARED). Must not fail.
            if (written_count > 0) {
                Shared &sh = shared_state();
                for (uint32_t i = 0; i < written_count; i++) sh.gens.bump(written_slots[i]);
                // A dropped table's entries can never be hit again: give
                // their memory back now rather than when eviction finds them.
                if (dropped_relation) sh.store.remove_stale();
            }
            forget_transaction();
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            forget_transaction();
            flights_cleanup();  // normally done already by the flight's own PG_CATCH
            break;
        default:
            break;
    }
}

void memo_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg) {
    if (prev_object_access_hook) prev_object_access_hook(access, class_id, object_id, sub_id, arg);
    // Only definitions changing matter: not OAT_FUNCTION_EXECUTE, which
    // fires for every function call, nor OAT_NAMESPACE_SEARCH.
    if (!IsTransactionState() ||
        (access != OAT_POST_CREATE && access != OAT_POST_ALTER && access != OAT_DROP))
        return;

    if (class_id == RelationRelationId) {
        if (access == OAT_POST_ALTER || access == OAT_DROP) mark_written(relation_slot(object_id));
        if (access == OAT_DROP && sub_id == 0 && get_rel_persistence(object_id) != RELPERSISTENCE_TEMP)
            dropped_relation = true;
        if (access == OAT_POST_CREATE || (access == OAT_POST_ALTER && sub_id == 0)) {
            MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
            renamed_relations = lappend_oid(renamed_relations, object_id);
            MemoryContextSwitchTo(old);
            changed_names = true;
        }
    } else if (class_id == ProcedureRelationId || class_id == OperatorRelationId ||
               class_id == TypeRelationId) {
        // A new, replaced or dropped function, operator or type can change
        // what a query means (a body, or what a name resolves to).
        mark_written(Generations::slot_of(MyDatabaseId, GenerationKind::Routines, 0));
        changed_names = true;
    }
}

}  // namespace

uint32_t relation_slot(Oid relid) {
    return Generations::slot_of(MyDatabaseId, GenerationKind::Relation, relid);
}

SlotSetView own_writes() { return SlotSetView{written_slots, written_count, written_filter}; }

void mark_written(uint32_t slot) {
    if (own_writes().contains(slot)) return;
    if (written_count == written_capacity) {
        uint32_t cap = written_capacity ? written_capacity * 2 : 16;
        written_slots = static_cast<uint32_t *>(
            written_slots ? repalloc(written_slots, cap * sizeof(uint32_t))
                          : MemoryContextAlloc(TopMemoryContext, cap * sizeof(uint32_t)));
        written_capacity = cap;
    }
    written_slots[written_count++] = slot;
    written_filter |= SlotSetView::filter_bit(slot);
}

void mark_rows_written(Oid relid) {
    mark_written(relation_slot(relid));
    wrote_watched_rows = true;
}

void register_invalidation_callbacks() {
    RegisterXactCallback(memo_xact_callback, nullptr);
    prev_object_access_hook = object_access_hook;
    object_access_hook = memo_object_access;
}

}  // namespace pgmemo

Datum pg_memo_invalidation_trigger(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("memo.invalidation_trigger() must be called as a trigger")));
    TriggerData *trigdata = reinterpret_cast<TriggerData *>(fcinfo->context);
    pgmemo::shared_state();  // fail here, where aborting is still clean
    pgmemo::mark_rows_written(RelationGetRelid(trigdata->tg_relation));
    if (TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event)) return PointerGetDatum(nullptr);
    // The replica-only row trigger (logical replication apply fires no
    // statement triggers): a BEFORE row trigger passes the row on unchanged.
    if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)) return PointerGetDatum(trigdata->tg_newtuple);
    return PointerGetDatum(trigdata->tg_trigtuple);
}
