// Query analysis: is this query cacheable, what does its result depend on,
// and which privilege checks must a hit repeat?
//
// Runs on the miss path only, on the rewritten query tree (views expanded,
// so their base tables are found too).
#include "compute/analysis.hpp"
#include "compute/stable_functions.hpp"
#include "durability/wal_records.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rls.h"
#include "executor/functions.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rowsecurity.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/acl.h"
#include "catalog/pg_type.h"
}

#include "invalidate/catalog_changes.hpp"
#include "call.hpp"
#include "compat.hpp"
#include "invalidate/write_set.hpp"
#include "privileges.hpp"
#include "invalidate/watch.hpp"
#include "settings.hpp"
#include "counter_slots.hpp"

namespace pgmemo {

void refuse_system_catalog(Oid relid) {
    if (!IsCatalogRelationOid(relid)) return;
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("pg_memo cannot cache queries over system catalog %s", get_rel_name(relid)),
                    errdetail("Catalog changes fire no triggers.")));
}

namespace {

struct Collector {
    uint32_t *slots;
    uint32_t *slot_flags;  // kDataStamp when only row writes move it (every add said so)
    uint32_t nslots, capacity;
    const Query *query;    // the query whose range table is being walked
    List *permissions;     // of RelationPermission *: the executor's checks
    List *privileges;      // of PrivilegeItem *
    List *clock_literals;  // locations of constants of date/time types
    Oid first_mutable_function;
    bool first_mutable_labelled_immutable;  // a policy's, in a language pg_memo cannot read
    bool mutable_expression;   // e.g. CURRENT_USER, nextval
    bool resolves_names;       // a reg* constant or parameter (regclass, regrole, ...)
    bool runs_bodies;          // calls a function whose body PostgreSQL checks as the caller
    // The relations whose every row it depends on: a table read with all
    // its descendants (or that has none), each descendant, a view. An
    // ancestor or other parent added for its writes is not among them, nor
    // a table read with ONLY: a function's statement that reads them whole
    // reads rows no dependency covers (learned_reads.hpp).
    List *relids;
    AttrNumber system_column;  // a system column other than tableoid, or 0
    Uncacheable uncacheable;
    // What the key must hold besides (Analysis::settings): custom settings
    // read with current_setting (of char *), and whether session_user is.
    List *settings;
    bool reads_session_user;
    // Row level security applied to a relation read; each such relation as
    // (relid, check_as_user), of RelationPermission *: a function's
    // statement may read it through the same policies (add_learned).
    bool applies_policies;
    List *policy_reads;
    // The policies' expressions of the range table entry last met, walked
    // next by range_table_walker, and what to name them in an error.
    const List *policy_quals;
    const char *policies_named;
    // While their expressions are walked, the policies' name; and those in
    // which a refused function or expression was met, if it was there.
    const char *in_policies;
    const char *refused_in_policies;
    // Inside the body of a SQL function read like the query's text: how
    // deep, and whose privileges it runs with (a SECURITY DEFINER
    // function's owner; InvalidOid: the caller's).
    int body_depth;
    Oid acting_as;
    bool bodies_read_relations;
    // An IMMUTABLE function's body read settings: the planner may fold its
    // call into a constant, so no plan of the statement may be reused.
    bool plan_folds_settings;
    // current_user or session_user: names, which a role's rename changes.
    bool reads_role_names;
    Oid seen_through;  // the function of the node being walked, when its call is keyed or its body read
};

// flags: kDataStamp for a table's Relation counter. A counter that two
// objects share keeps the flag only if both added it with the flag.
void add_slot(Collector *c, uint32_t slot, uint32_t flags = 0) {
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i] == slot) {
            c->slot_flags[i] &= flags;
            return;
        }
    if (c->nslots == c->capacity) {
        c->capacity *= 2;
        c->slots = static_cast<uint32_t *>(repalloc(c->slots, c->capacity * sizeof(uint32_t)));
        c->slot_flags = static_cast<uint32_t *>(repalloc(c->slot_flags, c->capacity * sizeof(uint32_t)));
    }
    c->slot_flags[c->nslots] = flags;
    c->slots[c->nslots++] = slot;
}

[[noreturn]] void refuse(const char *what, const char *detail = nullptr) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("pg_memo cannot cache %s", what),
                    detail ? errdetail("%s", detail) : 0));
    pg_unreachable();
}

[[noreturn]] void refuse_foreign_table(Oid relid) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("pg_memo cannot cache queries over foreign table %s", get_rel_name(relid)),
                    errdetail("Writes to it happen elsewhere and fire no trigger here.")));
    pg_unreachable();
}

// Every ancestor of a partition or inheritance child, nearest first.
List *ancestors_of(Oid relid) {
    List *result = NIL;
    List *queue = list_make1_oid(relid);
    Relation inherits = table_open(InheritsRelationId, AccessShareLock);
    while (queue != NIL) {
        Oid child = linitial_oid(queue);
        queue = list_delete_first(queue);
        ScanKeyData key;
        ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(child));
        SysScanDesc scan = systable_beginscan(inherits, InheritsRelidSeqnoIndexId, true, nullptr, 1, &key);
        HeapTuple tuple;
        while ((tuple = systable_getnext(scan)) != nullptr) {
            Oid parent = reinterpret_cast<Form_pg_inherits>(GETSTRUCT(tuple))->inhparent;
            if (!list_member_oid(result, parent)) {
                result = lappend_oid(result, parent);
                queue = lappend_oid(queue, parent);
            }
        }
        systable_endscan(scan);
    }
    table_close(inherits, AccessShareLock);
    return result;
}

// A watched table or partition, or one that must become one.
void add_table(Collector *c, Oid relid) {
    if (get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE) refuse_foreign_table(relid);
    Relation rel = table_open(relid, AccessShareLock);
    WatchState state = relation_watch_state(rel);
    table_close(rel, NoLock);
    if (state == WatchState::NotWatched) {
        char *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
                                                get_rel_name(relid));
        if (guc_unwatched_tables == kUnwatchedCompute) {
            // Computed and not stored: a table unwatched by mistake slows the
            // API down instead of taking it down. Said once per session.
            static bool warned = false;
            if (!warned)
                ereport(WARNING, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                                  errmsg("table %s is not watched by pg_memo: its queries run uncached", name),
                                  errdetail("pg_memo.unwatched_tables is compute; this warning is given once "
                                            "per session, and memo.stats counts the calls as bypasses."),
                                  errhint("Run SELECT memo.watch('%s'); as its owner.", name)));
            warned = true;
            c->uncacheable = Uncacheable::NotWatched;
            return;
        }
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not watched by pg_memo", name),
                        errhint("Run SELECT memo.watch('%s'); as its owner, so that writes to it "
                                "invalidate cached results, or set pg_memo.unwatched_tables to compute "
                                "to run such queries uncached.",
                                name)));
    }
    if (state == WatchState::Disabled) c->uncacheable = Uncacheable::TriggersDisabled;
    // Rows and definition apart: an entry whose rows alone moved is an
    // older answer to the same question (pg_memo.max_staleness). Not the
    // rows a policy or a function's body reads (memberships): they say who
    // may read what, which no older answer may outlive.
    add_slot(c, relation_slot(relid), c->in_policies || c->body_depth > 0 ? 0 : kDataStamp);
    add_slot(c, definition_slot(relid));
}

// Whether the policies of relid for check_as_user were walked: the relation
// was met in the range table, with its policies' expressions.
bool policies_walked(const Collector *c, Oid relid, Oid check_as_user) {
    ListCell *lc;
    foreach (lc, c->policy_reads) {
        auto *read = static_cast<RelationPermission *>(lfirst(lc));
        if (read->relid == relid && read->check_as_user == check_as_user) return true;
    }
    return false;
}

// Row level security applies to relid: its policies' expressions are in the
// range table entry (securityQuals), walked like the query's own; where a
// function's statement reads it (learned), they were not seen unless the
// query read it too.
void note_policies(Collector *c, Oid relid, Oid check_as_user, bool quals_in_tree) {
    if (!quals_in_tree && !policies_walked(c, relid, check_as_user))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache queries over table %s: row level security applies "
                               "to it where a function reads it",
                               get_rel_name(relid)),
                        errdetail("pg_memo reads the policies of the tables a query reads, and of those the "
                                  "body of a SQL function it calls reads, not those of other functions' "
                                  "statements."),
                        errhint("Write the function in SQL, or read the table in the query itself.")));
    c->applies_policies = true;
    if (policies_walked(c, relid, check_as_user)) return;
    auto *read = static_cast<RelationPermission *>(palloc0(sizeof(RelationPermission)));
    read->relid = relid;
    read->check_as_user = check_as_user;
    c->policy_reads = lappend(c->policy_reads, read);
}

// A relation the query reads, of the kind relkind; inh: with its
// descendants; check_as_user: whom the executor checks and applies row
// level security as (InvalidOid: the current user); quals_in_tree: its
// policies' expressions, where they apply, are in the tree walked.
// Returns whether row level security applies to it.
bool add_relation_oid(Collector *c, Oid relid, char relkind, bool inh, bool sampled, Oid check_as_user,
                      bool quals_in_tree) {
    bool policies = false;
    const char *name = get_rel_name(relid);
    refuse_system_catalog(relid);
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache queries over temporary table %s", name),
                        errdetail("A temporary table is private to one session.")));
    if (sampled) refuse("TABLESAMPLE", "Sampling returns different rows each time.");

    switch (relkind) {
        case RELKIND_RELATION:
        case RELKIND_PARTITIONED_TABLE:
            // Raises PostgreSQL's own error where row_security is off.
            policies = check_enable_rls(relid, check_as_user, false) == RLS_ENABLED;
            if (policies) note_policies(c, relid, check_as_user, quals_in_tree);
            add_table(c, relid);
            if (c->body_depth > 0) c->bodies_read_relations = true;
            if (inh || !has_subclass(relid)) c->relids = list_append_unique_oid(c->relids, relid);
            // A write fires only the triggers of the table it names: rows of
            // a partition or child change through its ancestors too, and a
            // parent's rows through every descendant.
            if (has_superclass(relid)) {
                List *parents = ancestors_of(relid);
                ListCell *lc;
                foreach (lc, parents) add_table(c, lfirst_oid(lc));
            }
            if (inh && has_subclass(relid)) {
                List *children = find_all_inheritors(relid, AccessShareLock, nullptr);
                ListCell *lc;
                foreach (lc, children) {
                    Oid child = lfirst_oid(lc);
                    if (child == relid) continue;
                    add_table(c, child);
                    c->relids = list_append_unique_oid(c->relids, child);  // its own descendants are in children
                    // An inheritance child can have other parents, and a
                    // write through one of them changes this parent's rows
                    // too. A partition has only the one parent.
                    if (!get_rel_relispartition(child)) {
                        List *parents = ancestors_of(child);
                        ListCell *lp;
                        foreach (lp, parents) add_table(c, lfirst_oid(lp));
                    }
                }
            }
            break;
        case RELKIND_VIEW:
            // No rows of its own; its definition changes reach us through
            // relcache invalidation. Base tables are found in its expansion.
            add_slot(c, relation_slot(relid));
            c->relids = list_append_unique_oid(c->relids, relid);
            break;
        case RELKIND_MATVIEW:
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("pg_memo cannot cache queries over materialized view %s", name),
                            errhint("Cache the materialized view's query over its base tables instead.")));
            break;
        case RELKIND_FOREIGN_TABLE: refuse_foreign_table(relid);
        default:
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("pg_memo cannot cache queries over relation %s", name)));
    }
    return policies;
}

void add_permission(Collector *c, const RelationPermission &perm) {
    if (perm.required == 0) return;
    auto *kept = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission)));
    *kept = perm;
    c->permissions = lappend(c->permissions, kept);
}

// The names of a table's policies, for an error raised by their expressions.
const char *policy_names(Oid relid) {
    Relation rel = table_open(relid, NoLock);  // locked by the rewriter
    StringInfoData names;
    initStringInfo(&names);
    if (rel->rd_rsdesc) {
        ListCell *lc;
        foreach (lc, rel->rd_rsdesc->policies) {
            auto *policy = static_cast<RowSecurityPolicy *>(lfirst(lc));
            appendStringInfo(&names, "%s%s", names.len ? ", " : "", quote_identifier(policy->policy_name));
        }
    }
    table_close(rel, NoLock);
    return psprintf("table %s (%s)", get_rel_name(relid), names.data);
}

void add_relation(Collector *c, RangeTblEntry *rte) {
    RelationPermission perm = compat_relation_permission(c->query, rte);
    // A SECURITY DEFINER function's statements are checked as its owner.
    if (!OidIsValid(perm.check_as_user) && OidIsValid(c->acting_as)) perm.check_as_user = c->acting_as;
    perm.policies_applied = add_relation_oid(c, rte->relid, rte->relkind, rte->inh, rte->tablesample != nullptr,
                                             perm.check_as_user, true);
    if (perm.policies_applied) {
        c->policy_quals = rte->securityQuals;
        c->policies_named = policy_names(rte->relid);
    }
    add_permission(c, perm);
}

// Relations the statements of the query's functions read: as if the text
// named them, each with its descendants, checked as the executor checked it.
void learned_read_context(void *arg) {
    errcontext("relation %s is read by a statement that a function of the query runs",
               get_rel_name(*static_cast<Oid *>(arg)));
}

void add_learned(Collector *c, const RelationPermission *learned, int n) {
    Oid current = InvalidOid;
    ErrorContextCallback context{error_context_stack, learned_read_context, &current};
    error_context_stack = &context;
    for (int i = 0; i < n; i++) {
        current = learned[i].relid;
        char relkind = get_rel_relkind(learned[i].relid);
        if (relkind == '\0')  // dropped since: the query cannot read it any more
            continue;
        RelationPermission perm = learned[i];
        perm.policies_applied = add_relation_oid(c, perm.relid, relkind, true, false, perm.check_as_user, false);
        add_permission(c, perm);
    }
    error_context_stack = context.previous;
}

void add_privilege(Collector *c, PrivilegeKind kind, Oid oid) {
    ListCell *lc;
    foreach (lc, c->privileges) {
        auto *item = static_cast<PrivilegeItem *>(lfirst(lc));
        if (item->kind == kind && item->oid == oid) return;
    }
    auto *item = static_cast<PrivilegeItem *>(palloc(sizeof(PrivilegeItem)));
    *item = PrivilegeItem{kind, oid};
    c->privileges = lappend(c->privileges, item);
}

bool note_function(Oid funcid, void *context) {
    auto *c = static_cast<Collector *>(context);
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for function %u", funcid);
    auto *proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    // A policy decides who reads what: its own IMMUTABLE function in a
    // procedural language (one reading current_setting, say) is not taken
    // at its label; a SQL one is read through (read_sql_body), C and
    // built-in ones are.
    bool label_doubted = c->in_policies && funcid >= FirstNormalObjectId && proc->prolang != INTERNALlanguageId &&
                         proc->prolang != ClanguageId;
    if ((proc->provolatile != PROVOLATILE_IMMUTABLE || label_doubted) && !depends_only_on_keyed_settings(funcid) &&
        funcid != c->seen_through && !OidIsValid(c->first_mutable_function)) {
        c->first_mutable_function = funcid;
        c->first_mutable_labelled_immutable = proc->provolatile == PROVOLATILE_IMMUTABLE;
        c->refused_in_policies = c->in_policies;
    }
    // A SQL or PL function's body is parsed and run as the caller: EXECUTE
    // on what it calls, USAGE on what it names. A hit cannot repeat those
    // checks, so the entry depends on every role and membership change.
    if (proc->prolang != INTERNALlanguageId && proc->prolang != ClanguageId) c->runs_bodies = true;
    // The executor checks EXECUTE as the current user, in views too; in a
    // SECURITY DEFINER body as its owner, whose grants bump the routines
    // counter and memberships the roles counter (runs_bodies).
    bool acl_is_null;
    Datum acl = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_proacl, &acl_is_null);
    if (!public_holds(acl, acl_is_null, true, ACL_EXECUTE) && !OidIsValid(c->acting_as))
        add_privilege(c, PrivilegeKind::FunctionExecute, funcid);
    ReleaseSysCache(tuple);
    return false;  // keep walking
}

// The schemas the parser looked up by a qualified name: it checked USAGE on
// them as the current user.
void note_explicit_schemas(Collector *c) {
    int n;
    const Oid *schemas = explicit_namespaces(&n);
    for (int i = 0; i < n; i++) {
        HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schemas[i]));
        if (!HeapTupleIsValid(tuple)) continue;  // dropped since: the lookup failed
        bool acl_is_null;
        Datum acl = SysCacheGetAttr(NAMESPACEOID, tuple, Anum_pg_namespace_nspacl, &acl_is_null);
        if (!public_holds(acl, acl_is_null, false, ACL_USAGE))
            add_privilege(c, PrivilegeKind::SchemaUsage, schemas[i]);
        ReleaseSysCache(tuple);
    }
}

// Types whose input resolves a name to an OID through the catalogs.
bool is_name_type(Oid type) {
    switch (type) {
        case REGCLASSOID:
        case REGTYPEOID:
        case REGPROCOID:
        case REGPROCEDUREOID:
        case REGOPEROID:
        case REGOPERATOROID:
        case REGCONFIGOID:
        case REGDICTIONARYOID:
        case REGNAMESPACEOID:
        case REGROLEOID:
        case REGCOLLATIONOID: return true;
        default: return false;
    }
}

// Types whose input accepts 'now', 'today', 'tomorrow' and 'yesterday'.
bool is_clock_type(Oid type) {
    return type == DATEOID || type == TIMEOID || type == TIMETZOID || type == TIMESTAMPOID ||
           type == TIMESTAMPTZOID;
}

// Whether values of type hold values of a type that pred accepts: itself,
// or through domains, arrays, ranges, multiranges and composite types.
bool type_holds(Oid type, bool (*pred)(Oid), int depth = 0) {
    if (depth > 32) return false;  // composite types cannot nest this deep in practice
    type = getBaseType(type);
    if (pred(type)) return true;
    Oid inner = get_element_type(type);
    if (!OidIsValid(inner) && type_is_range(type)) inner = get_range_subtype(type);
    if (!OidIsValid(inner) && type_is_multirange(type)) inner = get_multirange_range(type);
    if (OidIsValid(inner)) return type_holds(inner, pred, depth + 1);
    if (!OidIsValid(get_typ_typrelid(type))) return false;
    TupleDesc desc = lookup_rowtype_tupdesc(type, -1);
    bool holds = false;
    for (int i = 0; i < desc->natts && !holds; i++) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        holds = !att->attisdropped && type_holds(att->atttypid, pred, depth + 1);
    }
    ReleaseTupleDesc(desc);
    return holds;
}

void note_value_type(Collector *c, Oid type) {
    if (!c->resolves_names && type_holds(type, is_name_type)) c->resolves_names = true;
}

bool collect_walker(Node *node, void *context);

// The composite types a value of this type holds (itself, or through
// domains, arrays, ranges and their attributes): the entry depends on their
// relations, whose invalidations alone report a change to their attributes
// (ALTER TYPE ... ADD ATTRIBUTE, ALTER TABLE ... ADD COLUMN of a table used
// as a column's type). Built-in types are never such composites.
void note_composites(Collector *c, Oid type, int depth = 0) {
    if (type < FirstNormalObjectId || depth > 32) return;
    type = getBaseType(type);
    if (type < FirstNormalObjectId) return;
    Oid inner = get_element_type(type);
    if (!OidIsValid(inner) && type_is_range(type)) inner = get_range_subtype(type);
    if (!OidIsValid(inner) && type_is_multirange(type)) inner = get_multirange_range(type);
    if (OidIsValid(inner)) return note_composites(c, inner, depth + 1);
    Oid relid = get_typ_typrelid(type);
    if (!OidIsValid(relid)) return;
    add_slot(c, relation_slot(relid));
    TupleDesc desc = lookup_rowtype_tupdesc(type, -1);
    for (int i = 0; i < desc->natts; i++)
        if (!TupleDescAttr(desc, i)->attisdropped)
            note_composites(c, TupleDescAttr(desc, i)->atttypid, depth + 1);
    ReleaseTupleDesc(desc);
}

// The value-carrying expressions whose type is noted (exprType() accepts
// them all; the walker also meets nodes it does not).
void note_row_type(Collector *c, Node *node) {
    switch (nodeTag(node)) {
        case T_Var:
        case T_Const:
        case T_Param:
        case T_RowExpr:
        case T_FuncExpr:
        case T_OpExpr:
        case T_CoerceViaIO:
        case T_RelabelType:
        case T_ConvertRowtypeExpr:
        case T_CoerceToDomain:
        case T_FieldSelect:
        case T_FieldStore:
        case T_ArrayCoerceExpr:
        case T_SubscriptingRef:
        case T_ArrayExpr:
        case T_Aggref:
        case T_WindowFunc:
        case T_CaseExpr:
        case T_CoalesceExpr:
        case T_MinMaxExpr: break;
        default: return;
    }
    note_composites(c, exprType(node));
}

// A call that leaves out arguments gets their defaults only when it is
// planned, after this analysis: f(a, t timestamptz DEFAULT now()) would slip
// past the IMMUTABLE check and the EXECUTE checks. Its defaults are walked
// like the call's own arguments.
void note_default_arguments(Collector *c, Node *node) {
    Oid funcid;
    int nargs;
    if (IsA(node, FuncExpr)) {
        funcid = reinterpret_cast<FuncExpr *>(node)->funcid;
        nargs = list_length(reinterpret_cast<FuncExpr *>(node)->args);
    } else if (IsA(node, WindowFunc)) {
        funcid = reinterpret_cast<WindowFunc *>(node)->winfnoid;
        nargs = list_length(reinterpret_cast<WindowFunc *>(node)->args);
    } else {
        return;
    }
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for function %u", funcid);
    auto *proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    Node *defaults = nullptr;
    if (nargs < proc->pronargs && proc->pronargdefaults > 0) {
        bool isnull;
        Datum source = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_proargdefaults, &isnull);
        if (!isnull) defaults = static_cast<Node *>(stringToNode(TextDatumGetCString(source)));
    }
    ReleaseSysCache(tuple);
    if (defaults) collect_walker(defaults, c);
}

void refuse_clock_literals(const char *sql, List *locations);

// ---- What the key holds: settings, roles, and SQL functions read through ----

[[noreturn]] void refuse_setting(const char *name, const char *why, const char *hint) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("pg_memo cannot cache a query that reads the setting %s", name), errdetail("%s", why),
                    errhint("%s", hint)));
    pg_unreachable();
}

// current_setting(name [, missing_ok]): a custom setting (app.tenant_id,
// request.jwt.claims) named by a constant is keyed: its value at the call
// joins the key. A built-in setting's value may be shown through a hook
// that reads more than the setting; a name computed at run time cannot be
// keyed before the query runs.
void note_setting(Collector *c, const FuncExpr *expr) {
    const Node *arg = static_cast<const Node *>(linitial(expr->args));
    if (!IsA(arg, Const) || reinterpret_cast<const Const *>(arg)->constisnull)
        refuse_setting("named at run time", "The cache key holds the values of the settings a query reads, "
                                            "which must be known before it runs.",
                       "Name the setting with a constant: current_setting('app.tenant_id').");
    char *name = TextDatumGetCString(reinterpret_cast<const Const *>(arg)->constvalue);
    if (!strchr(name, '.'))
        refuse_setting(name, "pg_memo keys custom settings only, whose names have a dot (app.tenant_id).",
                       "Pass the value as a parameter, or read it through a custom setting.");
    c->settings = lappend(c->settings, name);
}

// The rows a SQL function's body returns, as queries rewritten for the
// role it runs as (the caller's, or its owner's when SECURITY DEFINER),
// with row level security applied; NIL when it is not one SELECT. *text:
// the body's source text, or nullptr for a body parsed when it was created
// (its constants were fixed then).
List *sql_body(FuncExpr *expr, HeapTuple tuple, const char **body_text) {
    *body_text = nullptr;
    bool isnull;
    Datum body = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosqlbody, &isnull);
    if (!isnull) {
        Node *n = static_cast<Node *>(stringToNode(TextDatumGetCString(body)));
        List *stored = IsA(n, List) ? linitial_node(List, castNode(List, n)) : list_make1(n);
        if (list_length(stored) != 1) return NIL;
        Query *q = linitial_node(Query, stored);
        AcquireRewriteLocks(q, true, false);
        return pg_rewrite_query(q);
    }
    Datum source = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);
    if (isnull) return NIL;
    char *src = TextDatumGetCString(source);
    List *raw = pg_parse_query(src);
    if (list_length(raw) != 1 || !IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt)) return NIL;
    SQLFunctionParseInfoPtr pinfo = prepare_sql_fn_parse_info(tuple, reinterpret_cast<Node *>(expr), expr->inputcollid);
    *body_text = src;
    return pg_analyze_and_rewrite_withcb(linitial_node(RawStmt, raw), src,
                                         reinterpret_cast<ParserSetupHook>(sql_fn_parser_setup), pinfo, nullptr);
}

// Bodies read inside bodies, at most: past it the function counts as what
// it is labelled (a recursive helper, say).
constexpr int kMaxBodyDepth = 4;

// A STABLE SQL function of the database's own that sets no setting: its
// body is read like the query's text (a policy's helper such as auth.uid()
// over current_setting, or a membership lookup), as the role it runs as.
// Whatever the body calls or reads is then checked, keyed or depended on
// as in the query. False when it cannot be read so (then it counts as
// what it is labelled). An IMMUTABLE one is taken at its label, as
// PostgreSQL takes it (it may fold the call when it plans), and what its
// statements read is learned (learned_reads.hpp); the built-in ones (age())
// are judged by their labels and stable_functions.hpp.
bool read_sql_body(Collector *c, FuncExpr *expr) {
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(expr->funcid));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for function %u", expr->funcid);
    auto *proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    bool has_config = !heap_attisnull(tuple, Anum_pg_proc_proconfig, nullptr);
    bool immutable = proc->provolatile == PROVOLATILE_IMMUTABLE;
    bool read = proc->provolatile == PROVOLATILE_STABLE || (immutable && c->in_policies);
    if (proc->prolang != SQLlanguageId || !read || has_config || proc->prokind != PROKIND_FUNCTION ||
        expr->funcid < FirstNormalObjectId || c->body_depth >= kMaxBodyDepth) {
        ReleaseSysCache(tuple);
        return false;
    }
    Oid runs_as = proc->prosecdef ? proc->proowner : c->acting_as;
    Oid saved_user;
    int saved_context;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    const char *body_text = nullptr;
    List *queries = NIL;
    // Rewritten as the role it runs as: that role's policies apply.
    if (OidIsValid(runs_as)) SetUserIdAndSecContext(runs_as, saved_context | SECURITY_LOCAL_USERID_CHANGE);
    PG_TRY();
    { queries = sql_body(expr, tuple, &body_text); }
    PG_FINALLY();
    { SetUserIdAndSecContext(saved_user, saved_context); }
    PG_END_TRY();
    ReleaseSysCache(tuple);
    if (list_length(queries) != 1) return false;

    Oid outer_as = c->acting_as;
    List *outer_clock = c->clock_literals;
    int settings_before = list_length(c->settings);
    bool session_user_before = c->reads_session_user;
    c->acting_as = runs_as;
    c->clock_literals = NIL;  // their locations are the body's
    c->body_depth++;
    collect_walker(static_cast<Node *>(linitial(queries)), c);
    c->body_depth--;
    if (immutable && (list_length(c->settings) > settings_before || c->reads_session_user != session_user_before))
        c->plan_folds_settings = true;
    if (body_text) refuse_clock_literals(body_text, c->clock_literals);
    c->clock_literals = outer_clock;
    c->acting_as = outer_as;
    return true;
}

// A call whose result the key settles, or whose body was read: the
// function itself does not make the query uncacheable. current_user is in
// the key; session_user joins it. (current_database() is not: a renamed
// database bumps no counter.)
bool keyed_call(Collector *c, FuncExpr *expr) {
    switch (expr->funcid) {
        case F_CURRENT_SETTING_TEXT:
        case F_CURRENT_SETTING_TEXT_BOOL: note_setting(c, expr); return true;
        case F_CURRENT_USER: c->reads_role_names = true; return true;
        case F_SESSION_USER: c->reads_session_user = c->reads_role_names = true; return true;
        default: return read_sql_body(c, expr);
    }
}

// CURRENT_USER and its kin, before PostgreSQL 16 made them calls: the key
// holds the role; the session user joins it. The clock's (CURRENT_DATE,
// ...), CURRENT_SCHEMA and CURRENT_CATALOG are not keyed.
bool keyed_value(Collector *c, const SQLValueFunction *svf) {
    switch (svf->op) {
        case SVFOP_CURRENT_ROLE:
        case SVFOP_CURRENT_USER:
        case SVFOP_USER: c->reads_role_names = true; return true;
        case SVFOP_SESSION_USER: c->reads_session_user = c->reads_role_names = true; return true;
        default: return false;
    }
}

void policy_context(void *arg) { errcontext("in the row level security policies of %s", static_cast<const char *>(arg)); }

// The CONTEXT line of a refusal decided after the walk, for what was met in
// a relation's policies (0: none).
int refused_in_policies_context(const char *policies) {
    return policies ? errcontext("in the row level security policies of %s", policies) : 0;
}

bool collect_walker(Node *node, void *context) {
    auto *c = static_cast<Collector *>(context);
    if (node == nullptr) return false;
    if (c->policy_quals && node == reinterpret_cast<const Node *>(c->policy_quals)) {
        // A relation's policies, next after its range table entry: an error
        // in them names them.
        ErrorContextCallback context{error_context_stack, policy_context, const_cast<char *>(c->policies_named)};
        error_context_stack = &context;
        c->policy_quals = nullptr;
        const char *outer = c->in_policies;
        c->in_policies = c->policies_named;
        bool stop = expression_tree_walker(node, as_tree_walker(collect_walker), c);
        c->in_policies = outer;
        error_context_stack = context.previous;
        return stop;
    }
    if (IsA(node, Query)) {
        Query *q = reinterpret_cast<Query *>(node);
        if (q->commandType != CMD_SELECT || q->utilityStmt) refuse("statements other than SELECT");
        if (q->hasModifyingCTE) refuse("a data-modifying statement in WITH");
        if (q->rowMarks != NIL || q->hasForUpdate)
            refuse("SELECT ... FOR UPDATE/SHARE", "Locking rows is a side effect a cached result would skip.");
        const Query *outer = c->query;
        c->query = q;
        bool stop = query_tree_walker(q, as_tree_walker(collect_walker), context, QTW_EXAMINE_RTES_BEFORE);
        c->query = outer;
        return stop;
    }
    if (IsA(node, RangeTblEntry)) {
        auto *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (compat_rte_names_relation(rte)) add_relation(c, rte);
        return false;
    }
    if (IsA(node, Var)) {
        // Row locks change xmax, VACUUM FREEZE xmin, VACUUM FULL ctid: no
        // trigger fires for any of them. tableoid never changes.
        AttrNumber attno = reinterpret_cast<Var *>(node)->varattno;
        if (attno < 0 && attno != TableOidAttributeNumber && c->system_column == 0) c->system_column = attno;
        note_row_type(c, node);
        return false;
    }
    if (IsA(node, Const)) {
        auto *con = reinterpret_cast<Const *>(node);
        note_value_type(c, con->consttype);
        // A date/time literal typed by the parser may have been 'now'.
        if (!con->constisnull && con->location >= 0 && type_holds(con->consttype, is_clock_type))
            c->clock_literals = lappend_int(c->clock_literals, con->location);
        note_row_type(c, node);
        return false;
    }
    if (IsA(node, Param)) note_value_type(c, reinterpret_cast<Param *>(node)->paramtype);
    note_row_type(c, node);
    note_default_arguments(c, node);
    Oid outer_seen = c->seen_through;
    c->seen_through = IsA(node, FuncExpr) && keyed_call(c, reinterpret_cast<FuncExpr *>(node))
                          ? reinterpret_cast<FuncExpr *>(node)->funcid
                          : InvalidOid;
    check_functions_in_node(node, note_function, context);
    c->seen_through = outer_seen;
    if ((IsA(node, SQLValueFunction) && !keyed_value(c, reinterpret_cast<SQLValueFunction *>(node))) ||
        IsA(node, NextValueExpr)) {
        if (!c->mutable_expression) c->refused_in_policies = c->in_policies;
        c->mutable_expression = true;
    }
    return expression_tree_walker(node, as_tree_walker(collect_walker), context);
}

// A string literal's text at one of the locations in context->locations.
struct ClockSearch {
    List *locations;
    const char *found;
};

bool find_clock_literal(Node *node, void *context) {
    auto *search = static_cast<ClockSearch *>(context);
    if (node == nullptr) return false;
    if (IsA(node, A_Const)) {
        auto *con = reinterpret_cast<A_Const *>(node);
        if (!con->isnull && IsA(&con->val, String) && list_member_int(search->locations, con->location) &&
            names_clock_time(strVal(&con->val))) {
            search->found = strVal(&con->val);
            return true;
        }
        return false;
    }
    return raw_expression_tree_walker(node, as_tree_walker(find_clock_literal), context);
}

// Refuses a date/time literal that stands for the clock ('now'::timestamp,
// date 'today'): the parser turned it into a fixed value, and the key holds
// only the text, so every later call would be served that moment again.
void refuse_clock_literals(const char *sql, List *locations) {
    if (locations == NIL) return;
    ClockSearch search{locations, nullptr};
    List *stmts = raw_parser(sql, RAW_PARSE_DEFAULT);
    ListCell *lc;
    foreach (lc, stmts) {
        if (search.found) break;
        find_clock_literal(lfirst_node(RawStmt, lc)->stmt, &search);
    }
    if (search.found)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query with the date/time literal '%s'", search.found),
                        errdetail("Its value follows the clock, which invalidates nothing."),
                        errhint("Pass the time itself as a parameter, for example now()::text.")));
}

const char *system_column_name(AttrNumber attno) {
    switch (attno) {
        case SelfItemPointerAttributeNumber: return "ctid";
        case MinTransactionIdAttributeNumber: return "xmin";
        case MinCommandIdAttributeNumber: return "cmin";
        case MaxTransactionIdAttributeNumber: return "xmax";
        case MaxCommandIdAttributeNumber: return "cmax";
        default: return "a system column";
    }
}

}  // namespace

void check_single_select(const char *query_text, char **statement) {
    List *stmts = raw_parser(query_text, RAW_PARSE_DEFAULT);
    if (list_length(stmts) != 1)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("pg_memo caches exactly one SELECT statement, got %d statements", list_length(stmts))));
    RawStmt *raw = linitial_node(RawStmt, stmts);
    Node *stmt = raw->stmt;
    if (!IsA(stmt, SelectStmt))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo caches only SELECT statements, not %s", CreateCommandName(stmt))));
    if (reinterpret_cast<SelectStmt *>(stmt)->intoClause) refuse("SELECT INTO", "It creates a table.");
    if (statement) {
        // stmt_len is 0 when the statement runs to the end of the text.
        int len = raw->stmt_len > 0 ? raw->stmt_len : int(strlen(query_text)) - raw->stmt_location;
        *statement = pnstrdup(query_text + raw->stmt_location, len);
    }
}
namespace {

int compare_names(const ListCell *a, const ListCell *b) {
    return strcmp(static_cast<const char *>(lfirst(a)), static_cast<const char *>(lfirst(b)));
}

// The settings the key must hold: sorted, without repeats, each ending in
// '\0'; session_user under a name no custom setting has (it has no dot).
void encode_settings(Collector *c, Analysis *out) {
    List *names = list_copy(c->settings);
    if (c->reads_session_user) names = lappend(names, const_cast<char *>(kSessionUserSetting));
    list_sort(names, compare_names);
    StringInfoData buf;
    initStringInfo(&buf);
    const char *previous = nullptr;
    ListCell *lc;
    foreach (lc, names) {
        auto *name = static_cast<const char *>(lfirst(lc));
        if (previous && strcmp(previous, name) == 0) continue;
        appendBinaryStringInfo(&buf, name, int(strlen(name)) + 1);
        previous = name;
    }
    out->settings = buf.len ? buf.data : nullptr;
    out->settings_len = uint32_t(buf.len);
}

void start_collecting(Collector *c) {
    *c = Collector{};
    c->capacity = 16;
    c->slots = static_cast<uint32_t *>(palloc(c->capacity * sizeof(uint32_t)));
    c->slot_flags = static_cast<uint32_t *>(palloc(c->capacity * sizeof(uint32_t)));
    c->uncacheable = Uncacheable::No;
}

}  // namespace

void check_learned_reads(const RelationPermission *learned, int nlearned) {
    Collector c;
    start_collecting(&c);
    add_learned(&c, learned, nlearned);
}

void analyze_query(Query *query, const char *sql, const Oid *search_path, int search_path_len,
                   const RelationPermission *learned, int nlearned, Analysis *out) {
    Collector c;
    start_collecting(&c);

    collect_walker(reinterpret_cast<Node *>(query), &c);
    add_learned(&c, learned, nlearned);

    if (OidIsValid(c.first_mutable_function) && c.first_mutable_labelled_immutable)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query whose row level security policies call %s",
                               format_procedure(c.first_mutable_function)),
                        errdetail("A policy decides who reads what: pg_memo does not take its functions' "
                                  "IMMUTABLE label on trust, and cannot read a body in this language."),
                        errhint("Write the function in SQL, whose body pg_memo reads, or read the setting in "
                                "the policy itself."),
                        refused_in_policies_context(c.refused_in_policies)));
    if (OidIsValid(c.first_mutable_function))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that calls %s, which is not IMMUTABLE",
                               format_procedure(c.first_mutable_function)),
                        errdetail("Its result could change without any write to a watched table."),
                        errhint("%s", mutable_function_hint(c.first_mutable_function)),
                        refused_in_policies_context(c.refused_in_policies)));
    if (c.mutable_expression)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that uses CURRENT_USER, CURRENT_DATE, "
                               "nextval() or a similar non-immutable expression"),
                        errhint("Pass such values as parameters instead."),
                        refused_in_policies_context(c.refused_in_policies)));
    if (c.system_column != 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that reads the system column %s",
                               system_column_name(c.system_column)),
                        errdetail("It changes without a write that fires a trigger (row locks, VACUUM)."),
                        errhint("Read tableoid or the table's own columns instead.")));
    refuse_clock_literals(sql, c.clock_literals);
    note_explicit_schemas(&c);

    // Name resolution: a table created, renamed or moved in a schema on the
    // search path can change which relation the same text means.
    for (int i = 0; i < search_path_len; i++)
        add_slot(&c, namespace_slot(search_path[i]));
    // Functions, operators and types resolve through the search path too,
    // and a new overload anywhere on it can be a better match than the one
    // a query used: every entry depends on the routines counter.
    add_slot(&c, routines_slot());
    // A reg* constant or parameter resolved a name to an OID when the text
    // was parsed or bound: anywhere, not only on the search path.
    if (c.resolves_names) add_slot(&c, names_slot());
    // Roles and memberships change what a name resolves to (regrole),
    // which privileges the caller holds inside function bodies, and which
    // policies apply to the caller (TO a role it is a member of).
    // The names current_user and session_user return change with a rename.
    if (c.resolves_names || c.runs_bodies || nlearned > 0 || c.applies_policies || c.reads_role_names)
        add_slot(&c, roles_slot());
    // On a standby: whether the replayed records covered every commit since
    // the result was computed.
    if (RecoveryInProgress()) add_slot(&c, standby_replay_slot());

    out->ndeps = c.nslots;
    out->deps = static_cast<DepStamp *>(palloc0(sizeof(DepStamp) * c.nslots));
    for (uint32_t i = 0; i < c.nslots; i++) {
        out->deps[i].slot = c.slots[i];
        out->deps[i].flags = c.slot_flags[i];
    }
    out->meta = encode_privilege_checks(c.permissions, c.privileges, &out->meta_len);
    out->uncacheable = c.uncacheable;
    out->nscopes = 0;  // per statement, by scope_reads.hpp
    encode_settings(&c, out);
    out->bodies_read_relations = c.bodies_read_relations;
    out->plan_folds_settings = c.plan_folds_settings;
    out->nrelids = uint32_t(list_length(c.relids));
    out->relids = static_cast<Oid *>(palloc(sizeof(Oid) * (out->nrelids ? out->nrelids : 1)));
    for (uint32_t i = 0; i < out->nrelids; i++) out->relids[i] = list_nth_oid(c.relids, int(i));
}
bool names_clock_time(const char *input) {
    static const char *const kWords[] = {"now", "today", "tomorrow", "yesterday"};
    for (const char *p = input; *p; p++) {
        if (!isalpha(static_cast<unsigned char>(*p)) ||
            (p > input && isalpha(static_cast<unsigned char>(p[-1]))))
            continue;  // not the start of a word
        for (const char *word : kWords) {
            size_t n = strlen(word);
            if (pg_strncasecmp(p, word, n) == 0 && !isalpha(static_cast<unsigned char>(p[n]))) return true;
        }
    }
    return false;
}

bool type_holds_clock_values(Oid type) { return type_holds(type, is_clock_type); }

}  // namespace pgmemo
