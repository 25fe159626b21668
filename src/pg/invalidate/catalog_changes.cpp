// Catalog changes: DDL seen while a transaction runs, marked at its end.
//
// The protocol is docs/consistency.md, "DDL". In short:
//   - Every utility statement that can change the catalogs makes its
//     transaction a bypass from that statement on (the utility hub): its
//     uncommitted catalog state (a trigger disabled for a moment, a
//     partition attached, a revoked grant) never reaches the cache.
//   - The object access hook marks altered and dropped relations at once
//     (a dropped relation of any kind, temporary too, also its schema and
//     the names counter), the parents of inheritance links, dropped domain
//     constraints and types, and remembers what can only be resolved once
//     visible (new or renamed relations of any kind, new types and
//     constraints).
//   - A top-level statement that commits in steps (CREATE INDEX
//     CONCURRENTLY, ...) marks in each step what its earlier steps marked. It also notes the
//     schemas the parser looks up by a qualified name, for the privilege
//     checks of hits.
//   - At pre-commit the transaction's own invalidation messages mark every
//     relation whose definition, privileges, policies or triggers changed
//     (relcache messages), and the routines or roles counter for changes to
//     the catalogs a query's text resolves through outside its relations
//     (catalog cache messages). The commit protocol (invalidation.hpp) announces
//     and bumps these marks like row writes.
#include "invalidate/catalog_changes.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/dependency.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_conversion.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_transform.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_ts_dict.h"
#include "catalog/pg_ts_parser.h"
#include "catalog/pg_ts_template.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/sinval.h"
#include "tcop/utility.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

#include "invalidate/write_set.hpp"
#include "invalidate/watch.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

namespace pgmemo {

namespace {

bool dropped_relation = false;      // purge dead entries once committed
bool changed_catalogs_now = false;  // DDL ran, or a relation or type was created, renamed or moved

// Objects whose creation, renaming or move can change what a name means,
// resolved at pre-commit when the catalogs show them (TopTransactionContext).
List *renamed_relations = NIL;
List *created_relations = NIL;  // by this transaction: their drop leaves no name behind
List *created_types = NIL;
List *changed_constraints = NIL;

// Schemas the parser looked up by a qualified name, while analysis collects
// them (TopMemoryContext, so that the hook never allocates in a context that
// an error could have freed).
bool collecting_schemas = false;
Oid *looked_up_schemas = nullptr;
int looked_up_count = 0;
int looked_up_capacity = 0;

// A statement that changes the catalogs in steps, one transaction each
// (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY, DROP INDEX
// CONCURRENTLY, DETACH PARTITION CONCURRENTLY): what one step marked is
// marked again by every later step, the last one included (committed after
// the statement returns), so that the step that makes the change visible
// (a renamed index swapped in, a pg_class row removed) also bumps it.
// TopMemoryContext.
int utility_depth = 0;
KeptSlotSet statement_slots;

// Marks a counter for this transaction (and the statement's later steps).
void mark(uint32_t slot) {
    mark_written(slot);
    if (utility_depth > 0) statement_slots.add(slot);
}

void mark_relation(Oid relid) {
    mark(relation_slot(relid));
    mark(definition_slot(relid));
}

// A relation's row type, or an array type: it comes and goes with its owner.
bool is_implicit_type(Oid type) {
    return get_typ_typrelid(type) != InvalidOid || get_element_type(type) != InvalidOid;
}

// The domain a constraint belongs to, or InvalidOid (a table's constraint).
Oid constraint_domain(Oid constraint) {
    HeapTuple tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(constraint));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    Oid domain = reinterpret_cast<Form_pg_constraint>(GETSTRUCT(tuple))->contypid;
    ReleaseSysCache(tuple);
    return domain;
}

// The counter that a change to a row of a catalog with this syscache
// stands for, or nothing. Every catalog change a transaction makes is in its
// invalidation messages; these catalogs decide what a query's text resolves
// to outside its relations (a cast, an operator class reversing ORDER BY,
// a schema renamed under a qualified name) or who may call what (EXECUTE,
// USAGE). Relations are told by their relcache messages instead, and row
// types come and go with their tables (see created_types).
enum class CatalogCounter { None, Routines, Roles };
CatalogCounter counter_for_catalog_cache(int cache_id) {
    switch (cache_id) {
        case AGGFNOID:
        case AMNAME:
        case AMOID:
        case AMOPOPID:
        case AMOPSTRATEGY:
        case AMPROCNUM:
        case CASTSOURCETARGET:
        case CLAAMNAMENSP:
        case CLAOID:
        case COLLNAMEENCNSP:
        case COLLOID:
        case CONDEFAULT:
        case CONNAMENSP:
        case CONVOID:
        case ENUMOID:
        case ENUMTYPOIDNAME:
        case LANGNAME:
        case LANGOID:
        case NAMESPACENAME:
        case NAMESPACEOID:
        case OPERNAMENSP:
        case OPEROID:
        case OPFAMILYAMNAMENSP:
        case OPFAMILYOID:
        case PROCNAMEARGSNSP:
        case PROCOID:
        case RANGEMULTIRANGE:
        case RANGETYPE:
        case TRFOID:
        case TRFTYPELANG:
        case TSCONFIGMAP:
        case TSCONFIGNAMENSP:
        case TSCONFIGOID:
        case TSDICTNAMENSP:
        case TSDICTOID:
        case TSPARSERNAMENSP:
        case TSPARSEROID:
        case TSTEMPLATENAMENSP:
        case TSTEMPLATEOID: return CatalogCounter::Routines;
        case AUTHNAME:
        case AUTHOID:
        case AUTHMEMMEMROLE:  // memberships: privileges held through a role
        case AUTHMEMROLEMEM:
        case DATABASEOID: return CatalogCounter::Roles;  // (the owner is pg_database_owner)
        default: return CatalogCounter::None;
    }
}

// Marks what one invalidation message of the committing transaction says
// changed.
void mark_invalidation(const SharedInvalidationMessage &m) {
    if (m.id == SHAREDINVALRELCACHE_ID) {
        if (m.rc.dbId == MyDatabaseId && OidIsValid(m.rc.relId)) mark_relation(m.rc.relId);
        return;
    }
    if (m.id < 0 || (m.cc.dbId != MyDatabaseId && m.cc.dbId != InvalidOid)) return;
    switch (counter_for_catalog_cache(m.id)) {
        case CatalogCounter::Routines:
            mark(routines_slot());
            // A schema's name is also what reg* input resolves through.
            if (m.id == NAMESPACENAME || m.id == NAMESPACEOID) mark(names_slot());
            return;
        case CatalogCounter::Roles: mark(roles_slot()); return;
        case CatalogCounter::None: return;
    }
}

bool is_internal(ObjectAccessType access, void *arg) {
    if (access == OAT_POST_CREATE && arg) return static_cast<ObjectAccessPostCreate *>(arg)->is_internal;
    if (access == OAT_POST_ALTER && arg) return static_cast<ObjectAccessPostAlter *>(arg)->is_internal;
    if (access == OAT_DROP && arg)
        return (static_cast<ObjectAccessDrop *>(arg)->dropflags & PERFORM_DELETION_INTERNAL) != 0;
    return false;
}

void remember(List **list, Oid oid) {
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    *list = lappend_oid(*list, oid);
    MemoryContextSwitchTo(old);
}

// Any relation, of any kind, temporary or not, takes a name in its schema:
// a query's FROM resolves a sequence, an index (and fails) or a temporary
// table as readily as a table, and 'name'::regclass resolves all of them.
void note_relation_change(ObjectAccessType access, Oid relid, int sub_id, void *arg) {
    bool whole_relation = sub_id == 0;
    // At once, so that this transaction bypasses the relation's entries
    // (a new column is a POST_CREATE of the column).
    if (access != OAT_POST_CREATE || !whole_relation) mark_relation(relid);
    if (!whole_relation) return;
    bool internal = is_internal(access, arg);
    if (access == OAT_DROP) {
        // Created by this transaction: its name was never visible.
        if (list_member_oid(created_relations, relid)) return;
        bool temporary = get_rel_persistence(relid) == RELPERSISTENCE_TEMP;
        // Its name (and its row type's) is gone from its schema: marked
        // while the catalog still says which schema that is. The drops a
        // backend makes of its temporary relations at exit or DISCARD are
        // internal, and end their names all the same.
        mark(names_slot());  // what 'name'::regclass resolved to
        mark(namespace_slot(get_rel_namespace(relid)));
        if (!temporary && !internal) dropped_relation = true;
        return;
    }
    if (access == OAT_POST_CREATE) {
        // Internal creations too (an ADD PRIMARY KEY's index, a TOAST
        // table): resolved at pre-commit, when a rewrite's transient heap
        // is gone again.
        remember(&created_relations, relid);
    } else if (internal) {
        // An internal change of a table keeps its name (a rewrite swapping
        // files); the internal renames are of TOAST tables and indexes.
        char relkind = get_rel_relkind(relid);
        if (relkind != RELKIND_TOASTVALUE && relkind != RELKIND_INDEX && relkind != RELKIND_PARTITIONED_INDEX)
            return;
    }
    // A name may now mean another relation: the schema is re-stamped at
    // pre-commit, when the catalogs show it; until then this transaction
    // uses no cached result.
    remember(&renamed_relations, relid);
    if (!internal) changed_catalogs_now = true;
}

void note_type_change(ObjectAccessType access, Oid type) {
    if (access != OAT_DROP) {
        remember(&created_types, type);  // not visible yet: resolved at pre-commit
        changed_catalogs_now = true;
    } else if (!is_implicit_type(type)) {  // still in the catalog while it is dropped
        mark(routines_slot());
        mark(names_slot());  // what 'name'::regtype resolved to
    }
}

// A domain's constraints are checked by every cast to it (ALTER DOMAIN ADD
// CONSTRAINT ... NOT VALID makes a cached cast's rows an error). A table's
// constraints reach us as its relcache invalidation.
void note_constraint_change(ObjectAccessType access, Oid constraint) {
    if (access != OAT_DROP) {
        remember(&changed_constraints, constraint);  // a new one is not visible yet
    } else if (OidIsValid(constraint_domain(constraint))) {
        mark(routines_slot());
    }
}

// A child attached, inherited, detached or disinherited: the parent's rows
// change, though its relcache is not always invalidated (a second
// inheritance child leaves the parent's pg_class row alone).
void note_inheritance_change(Oid child, void *arg) {
    mark_relation(child);
    if (arg) mark_relation(static_cast<ObjectAccessPostAlter *>(arg)->auxiliary_id);
}

// Catalogs whose objects a query's text resolves to outside its relations.
bool resolves_query_text(Oid class_id) {
    return class_id == ProcedureRelationId || class_id == OperatorRelationId ||
           class_id == CollationRelationId || class_id == TSConfigRelationId ||
           class_id == TSDictionaryRelationId || class_id == TSParserRelationId ||
           class_id == TSTemplateRelationId || class_id == CastRelationId ||
           class_id == OperatorClassRelationId || class_id == OperatorFamilyRelationId ||
           class_id == AccessMethodOperatorRelationId || class_id == AccessMethodProcedureRelationId ||
           class_id == NamespaceRelationId || class_id == ConversionRelationId ||
           class_id == TransformRelationId;
}

// The parser checked USAGE on a schema it looked up by a qualified name.
void note_schema_lookup(Oid schema, void *arg) {
    if (!collecting_schemas || !arg || !static_cast<ObjectAccessNamespaceSearch *>(arg)->ereport_on_violation)
        return;  // not analyzing, or a search path being computed
    for (int i = 0; i < looked_up_count; i++)
        if (looked_up_schemas[i] == schema) return;
    append_kept(&looked_up_schemas, &looked_up_count, &looked_up_capacity, schema);
}

}  // namespace

object_access_hook_type object_access_before_memo = nullptr;

void note_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg) {
    if (object_access_before_memo) object_access_before_memo(access, class_id, object_id, sub_id, arg);
    if (access == OAT_NAMESPACE_SEARCH) {
        note_schema_lookup(object_id, arg);
        return;
    }
    // Only definitions changing matter, not OAT_FUNCTION_EXECUTE, which
    // fires for every function call.
    if (!IsTransactionState() || (access != OAT_POST_CREATE && access != OAT_POST_ALTER && access != OAT_DROP))
        return;

    if (class_id == RelationRelationId) {
        note_relation_change(access, object_id, sub_id, arg);
    } else if (class_id == TypeRelationId) {
        note_type_change(access, object_id);
    } else if (class_id == ConstraintRelationId) {
        note_constraint_change(access, object_id);
    } else if (class_id == InheritsRelationId) {
        note_inheritance_change(object_id, access == OAT_POST_ALTER ? arg : nullptr);
    } else if (resolves_query_text(class_id)) {
        // A new, replaced or dropped function, operator or cast can change
        // what a query means: a body, or which overload, cast or sort order
        // it resolves to. So can a collation or text search configuration
        // that takes a name over, or a renamed schema under a qualified name.
        mark(routines_slot());
        if (class_id == NamespaceRelationId) mark(names_slot());
    }
}

namespace {

// Statements that cannot change the catalogs in a way a query's result or
// permission could depend on; every other utility statement is DDL here.
// TRUNCATE and COPY write rows (the trigger records them); ANALYZE, REINDEX
// and COMMENT change plans and descriptions, never results.
bool leaves_catalogs_alone(Node *stmt) {
    switch (nodeTag(stmt)) {
        case T_TransactionStmt:
        case T_VariableSetStmt:
        case T_VariableShowStmt:
        case T_PrepareStmt:
        case T_ExecuteStmt:
        case T_DeallocateStmt:
        case T_DeclareCursorStmt:
        case T_FetchStmt:
        case T_ClosePortalStmt:
        case T_DoStmt:
        case T_CallStmt:
        case T_CopyStmt:
        case T_TruncateStmt:
        case T_ListenStmt:
        case T_NotifyStmt:
        case T_UnlistenStmt:
        case T_LockStmt:
        case T_CheckPointStmt:
        case T_LoadStmt:
        case T_ConstraintsSetStmt:
        case T_VacuumStmt:
        case T_ReindexStmt:
        case T_RefreshMatViewStmt:
        case T_CommentStmt: return true;  // (DO, CALL and EXECUTE run their statements through here too)
        case T_ExplainStmt: {             // EXPLAIN ANALYZE CREATE TABLE AS creates a table
            Node *query = reinterpret_cast<ExplainStmt *>(stmt)->query;
            if (!IsA(query, Query)) return false;
            // EXPLAIN EXECUTE runs a prepared statement, which is never DDL.
            Node *utility = reinterpret_cast<Query *>(query)->utilityStmt;
            return reinterpret_cast<Query *>(query)->commandType != CMD_UTILITY ||
                   (utility && IsA(utility, ExecuteStmt));
        }
        default: return false;
    }
}

// DDL inside a transaction (ALTER TABLE ... DISABLE TRIGGER, ATTACH
// PARTITION, GRANT, CREATE CAST, ...) changes what this transaction's
// queries mean before anything is committed, often on catalogs no hook
// reports. From the statement on (a memo call inside it included), the
// transaction uses no cached result and stores none; what it changed is
// marked from its invalidation messages at pre-commit.
bool concurrently_option(List *params) {
    ListCell *lc;
    foreach (lc, params) {
        auto *option = lfirst_node(DefElem, lc);
        if (strcmp(option->defname, "concurrently") == 0) return defGetBoolean(option);
    }
    return false;
}

// Whether the statement commits transactions of its own, changing the
// catalogs in steps.
bool commits_in_steps(Node *stmt) {
    switch (nodeTag(stmt)) {
        case T_IndexStmt: return reinterpret_cast<IndexStmt *>(stmt)->concurrent;
        case T_ReindexStmt: return concurrently_option(reinterpret_cast<ReindexStmt *>(stmt)->params);
        case T_DropStmt: return reinterpret_cast<DropStmt *>(stmt)->concurrent;
        case T_AlterTableStmt: {
            ListCell *lc;
            foreach (lc, reinterpret_cast<AlterTableStmt *>(stmt)->cmds) {
                auto *cmd = lfirst_node(AlterTableCmd, lc);
                if (cmd->subtype == AT_DetachPartition && castNode(PartitionCmd, cmd->def)->concurrent) return true;
            }
            return false;
        }
        default: return false;
    }
}

}  // namespace

void note_utility_statement(Node *stmt) {
    if (!leaves_catalogs_alone(stmt) && IsTransactionState()) changed_catalogs_now = true;
}

void run_utility_statement(Node *stmt, ProcessUtilityContext context, FnRef<void()> run) {
    if (IsA(stmt, DropdbStmt)) {
        // Its entries could never be hit again, and a later database may
        // get its OID: freed once it is gone (a failed DROP leaves them).
        Oid dbid = get_database_oid(castNode(DropdbStmt, stmt)->dbname, true);
        run();
        return forget_database(dbid);
    }
    if (context != PROCESS_UTILITY_TOPLEVEL || IsTransactionBlock() || !commits_in_steps(stmt)) return run();
    utility_depth++;
    PG_TRY();
    { run(); }
    PG_CATCH();
    {
        // No later step will commit. Only this backend's list is written.
        utility_depth--;
        statement_slots.clear();
        PG_RE_THROW();
    }
    PG_END_TRY();
    utility_depth--;  // its last step commits next, and marks again (mark_catalog_changes)
}

void catalog_changes_subtransaction_aborted() { collecting_schemas = false; }  // an error during analysis

bool transaction_changed_catalogs() { return changed_catalogs_now; }

// Marks, at the end of the transaction, what its DDL changed: every relation
// it sent a relcache invalidation for (ALTER, DROP, GRANT/REVOKE, policies,
// triggers, view replacement), the routines and roles counters for the
// catalogs above, the schemas of relations created, renamed or moved, and the
// routines counter for new types and changed domain constraints. Only a
// transaction with an xid changed catalogs (this skips VACUUM's in-place
// statistics updates).
bool mark_catalog_changes() {
    // A later step of a statement that commits in steps: its earlier steps'
    // marks again; the statement's last step, once it returned.
    for (uint32_t i = 0; i < statement_slots.count; i++) mark_written(statement_slots.slots[i]);
    if (utility_depth == 0) statement_slots.clear();
    if (!TransactionIdIsValid(GetTopTransactionIdIfAny())) return dropped_relation;
    SharedInvalidationMessage *msgs;
    bool init_file_inval;
    int n = xactGetCommittedInvalidationMessages(&msgs, &init_file_inval);
    for (int i = 0; i < n; i++) mark_invalidation(msgs[i]);

    ListCell *lc;
    foreach (lc, renamed_relations) {
        Oid relid = lfirst_oid(lc);
        // Gone by now (a rewrite's transient heap): no name left to resolve.
        Oid nspid = get_rel_namespace(relid);
        if (!OidIsValid(nspid)) continue;
        mark(namespace_slot(nspid));
        mark(names_slot());  // what 'name'::regclass and ::regtype resolve to
    }
    foreach (lc, created_types) {
        Oid type = lfirst_oid(lc);
        // Row and array types come with their owner; a type created and
        // dropped again in this transaction leaves no name behind.
        if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(type)) || is_implicit_type(type)) continue;
        mark(routines_slot());
        mark(names_slot());
    }
    foreach (lc, changed_constraints) {
        // Visible now (a constraint is created within its command).
        if (OidIsValid(constraint_domain(lfirst_oid(lc)))) mark(routines_slot());  // casts to a domain check it
    }
    return dropped_relation;
}

void forget_catalog_changes() {
    dropped_relation = false;
    changed_catalogs_now = false;
    collecting_schemas = false;
    renamed_relations = NIL;  // their memory goes with the transaction
    created_relations = NIL;
    created_types = NIL;
    changed_constraints = NIL;
}

void start_schema_lookups() {
    looked_up_count = 0;
    collecting_schemas = true;
}

void stop_schema_lookups() { collecting_schemas = false; }

const Oid *explicit_namespaces(int *n) {
    *n = looked_up_count;
    return looked_up_schemas;
}

}  // namespace pgmemo
