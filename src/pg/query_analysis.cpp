// Query analysis: is this query cacheable, what does its result depend on,
// and which privilege checks must a hit repeat?
//
// Runs on the miss path only, on the rewritten query tree (views expanded,
// so their base tables are found too).
#include "pg_memo.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_inherits.h"
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
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/acl.h"
#include "catalog/pg_type.h"
}

#include "compat.hpp"

namespace pgmemo {

namespace {

constexpr const char *kTriggerName = "pg_memo_invalidate";

// memo.invalidation_trigger(): the extension is not relocatable, so its
// schema is always memo.
Oid trigger_function() {
    List *name = list_make2(makeString(pstrdup("memo")), makeString(pstrdup("invalidation_trigger")));
    return LookupFuncName(name, 0, nullptr, true);
}

// One SELECT privilege check of the executor, as stored for hits.
struct PermItem {
    Oid relid;
    Oid check_as_user;
    uint32_t required_perms;
    int32_t nwords;  // words of selectedCols that follow
};

// PostgreSQL's tree walkers take an untyped function pointer.
using TreeWalker = bool (*)();
TreeWalker as_tree_walker(bool (*walker)(Node *, void *)) {
    return reinterpret_cast<TreeWalker>(reinterpret_cast<void (*)()>(walker));
}

// Object privileges a hit re-checks besides the executor's relation checks:
// those the parser and executor check as the current user, where PUBLIC
// does not hold them (a change to PUBLIC's grants bumps the routines counter
// at commit, so an entry never relies on a grant that is gone).
enum class PrivilegeKind : uint32_t { SchemaUsage = 1, FunctionExecute = 2 };
struct PrivilegeItem {
    PrivilegeKind kind;
    Oid oid;
};

struct Collector {
    uint32_t *slots;
    uint32_t nslots, capacity;
    List *perm_rtes;
    List *privileges;  // of PrivilegeItem *
    List *clock_literals;  // locations of constants of date/time types
    Oid first_mutable_function;
    bool mutable_expression;  // e.g. CURRENT_USER, nextval
    bool resolves_names;      // a reg* constant or parameter (regclass, regrole, ...)
    AttrNumber system_column;  // a system column other than tableoid, or 0
    Uncacheable uncacheable;
};

void add_slot(Collector *c, uint32_t slot) {
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i] == slot) return;
    if (c->nslots == c->capacity) {
        c->capacity *= 2;
        c->slots = static_cast<uint32_t *>(repalloc(c->slots, c->capacity * sizeof(uint32_t)));
    }
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
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("table %s is not watched by pg_memo", name),
                        errhint("Run SELECT memo.watch('%s'); as its owner, so that writes to it "
                                "invalidate cached results.",
                                name)));
    }
    if (state == WatchState::Disabled) c->uncacheable = Uncacheable::TriggersDisabled;
    add_slot(c, relation_slot(relid));
}

void add_relation(Collector *c, RangeTblEntry *rte) {
    Oid relid = rte->relid;
    const char *name = get_rel_name(relid);
    if (IsCatalogRelationOid(relid))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache queries over system catalog %s", name),
                        errdetail("Catalog changes fire no triggers.")));
    if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache queries over temporary table %s", name),
                        errdetail("A temporary table is private to one session.")));
    if (rte->tablesample) refuse("TABLESAMPLE", "Sampling returns different rows each time.");

    switch (rte->relkind) {
        case RELKIND_RELATION:
        case RELKIND_PARTITIONED_TABLE:
            if (check_enable_rls(relid, rte->checkAsUser, false) == RLS_ENABLED)
                ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                                errmsg("pg_memo cannot cache queries over table %s: row level "
                                       "security applies to it",
                                       name),
                                errdetail("Its policies may depend on more than the role.")));
            add_table(c, relid);
            // A write fires only the triggers of the table it names: rows of
            // a partition or child change through its ancestors too, and a
            // parent's rows through every descendant.
            if (has_superclass(relid)) {
                List *parents = ancestors_of(relid);
                ListCell *lc;
                foreach (lc, parents)
                    add_table(c, lfirst_oid(lc));
            }
            if (rte->inh && has_subclass(relid)) {
                List *children = find_all_inheritors(relid, AccessShareLock, nullptr);
                ListCell *lc;
                foreach (lc, children) {
                    Oid child = lfirst_oid(lc);
                    if (child == relid) continue;
                    add_table(c, child);
                    // An inheritance child can have other parents, and a
                    // write through one of them changes this parent's rows
                    // too. A partition has only the one parent.
                    if (!get_rel_relispartition(child)) {
                        List *parents = ancestors_of(child);
                        ListCell *lp;
                        foreach (lp, parents)
                            add_table(c, lfirst_oid(lp));
                    }
                }
            }
            break;
        case RELKIND_VIEW:
            // No rows of its own; its definition changes reach us through
            // relcache invalidation. Base tables are found in its expansion.
            add_slot(c, relation_slot(relid));
            break;
        case RELKIND_MATVIEW:
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("pg_memo cannot cache queries over materialized view %s", name),
                            errhint("Cache the materialized view's query over its base tables instead.")));
            break;
        case RELKIND_FOREIGN_TABLE:
            refuse_foreign_table(relid);
        default:
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("pg_memo cannot cache queries over relation %s", name)));
    }
    if (rte->requiredPerms != 0) c->perm_rtes = lappend(c->perm_rtes, rte);
}

// Whether an object's ACL grants mode to PUBLIC. A NULL ACL is the kind's
// default: functions grant EXECUTE to PUBLIC, schemas grant nothing.
bool public_holds(Datum acl_datum, bool acl_is_null, bool default_holds, AclMode mode) {
    if (acl_is_null) return default_holds;
    Acl *acl = DatumGetAclP(acl_datum);
    const AclItem *items = ACL_DAT(acl);
    for (int i = 0; i < ACL_NUM(acl); i++)
        if (items[i].ai_grantee == ACL_ID_PUBLIC && (ACLITEM_GET_PRIVS(items[i]) & mode)) return true;
    return false;
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
    if (proc->provolatile != PROVOLATILE_IMMUTABLE && !OidIsValid(c->first_mutable_function))
        c->first_mutable_function = funcid;
    // The executor checks EXECUTE as the current user, in views too.
    bool acl_is_null;
    Datum acl = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_proacl, &acl_is_null);
    if (!public_holds(acl, acl_is_null, true, ACL_EXECUTE)) add_privilege(c, PrivilegeKind::FunctionExecute, funcid);
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
        case REGCLASSOID: case REGTYPEOID: case REGPROCOID: case REGPROCEDUREOID: case REGOPEROID:
        case REGOPERATOROID: case REGCONFIGOID: case REGDICTIONARYOID: case REGNAMESPACEOID:
        case REGROLEOID: case REGCOLLATIONOID:
            return true;
        default:
            return false;
    }
}

// Types whose input accepts 'now', 'today', 'tomorrow' and 'yesterday'.
bool is_clock_type(Oid type) {
    return type == DATEOID || type == TIMEOID || type == TIMETZOID || type == TIMESTAMPOID || type == TIMESTAMPTZOID;
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

// An expression of a composite type (ROW(n, n + 1)::pair) depends on the
// type's attributes, which only its own relation's invalidations report
// (ALTER TYPE ... ADD ATTRIBUTE, SET SCHEMA): the entry depends on it.
void note_row_type(Collector *c, Node *node) {
    switch (nodeTag(node)) {
        case T_Const: case T_Param: case T_RowExpr: case T_FuncExpr: case T_CoerceViaIO: case T_RelabelType:
        case T_ConvertRowtypeExpr: case T_CoerceToDomain: case T_FieldSelect: case T_ArrayCoerceExpr:
            break;
        default:
            return;
    }
    Oid type = exprType(node);
    if (type < FirstNormalObjectId) return;  // built-in types are never composites of a relation we track
    Oid relid = get_typ_typrelid(getBaseType(type));
    if (OidIsValid(relid)) add_slot(c, relation_slot(relid));
}

bool collect_walker(Node *node, void *context) {
    auto *c = static_cast<Collector *>(context);
    if (node == nullptr) return false;
    if (IsA(node, Query)) {
        Query *q = reinterpret_cast<Query *>(node);
        if (q->commandType != CMD_SELECT || q->utilityStmt)
            refuse("statements other than SELECT");
        if (q->hasModifyingCTE) refuse("a data-modifying statement in WITH");
        if (q->rowMarks != NIL || q->hasForUpdate)
            refuse("SELECT ... FOR UPDATE/SHARE", "Locking rows is a side effect a cached result would skip.");
        return query_tree_walker(q, as_tree_walker(collect_walker), context,
                                 QTW_EXAMINE_RTES_BEFORE);
    }
    if (IsA(node, RangeTblEntry)) {
        auto *rte = reinterpret_cast<RangeTblEntry *>(node);
        if (rte->rtekind == RTE_RELATION) add_relation(c, rte);
        return false;
    }
    if (IsA(node, Var)) {
        // Row locks change xmax, VACUUM FREEZE xmin, VACUUM FULL ctid: no
        // trigger fires for any of them. tableoid never changes.
        AttrNumber attno = reinterpret_cast<Var *>(node)->varattno;
        if (attno < 0 && attno != TableOidAttributeNumber && c->system_column == 0) c->system_column = attno;
        return false;
    }
    if (IsA(node, Const)) {
        auto *con = reinterpret_cast<Const *>(node);
        note_value_type(c, con->consttype);
        // A date/time literal typed by the parser may have been 'now'.
        if (!con->constisnull && con->location >= 0 && type_holds(con->consttype, is_clock_type))
            c->clock_literals = lappend_int(c->clock_literals, con->location);
        return false;
    }
    if (IsA(node, Param)) note_value_type(c, reinterpret_cast<Param *>(node)->paramtype);
    note_row_type(c, node);
    check_functions_in_node(node, note_function, context);
    if (IsA(node, SQLValueFunction) || IsA(node, NextValueExpr)) c->mutable_expression = true;
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

void append_bytes(StringInfo buf, const void *data, size_t len) {
    appendBinaryStringInfo(buf, static_cast<const char *>(data), int(len));
}

// The executor's relation checks, then the object privileges.
char *encode_permissions(List *rtes, List *privileges, uint32_t *len) {
    StringInfoData buf;
    initStringInfo(&buf);
    uint32_t n = uint32_t(list_length(rtes));
    append_bytes(&buf, &n, sizeof n);
    ListCell *lc;
    foreach (lc, rtes) {
        auto *rte = static_cast<RangeTblEntry *>(lfirst(lc));
        PermItem item{rte->relid, rte->checkAsUser, rte->requiredPerms,
                      rte->selectedCols ? rte->selectedCols->nwords : 0};
        append_bytes(&buf, &item, sizeof item);
        if (item.nwords) append_bytes(&buf, rte->selectedCols->words, sizeof(bitmapword) * item.nwords);
    }
    n = uint32_t(list_length(privileges));
    append_bytes(&buf, &n, sizeof n);
    foreach (lc, privileges) append_bytes(&buf, lfirst(lc), sizeof(PrivilegeItem));
    *len = uint32_t(buf.len);
    return buf.data;
}

// Whether the current user still holds a stored object privilege. A schema
// or function that is gone fails the check (the computation then raises).
bool object_privilege_holds(const PrivilegeItem &item) {
    if (item.kind == PrivilegeKind::SchemaUsage)
        return SearchSysCacheExists1(NAMESPACEOID, ObjectIdGetDatum(item.oid)) &&
               compat_schema_usage_ok(item.oid, GetUserId());
    return SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(item.oid)) &&
           compat_function_execute_ok(item.oid, GetUserId());
}

}  // namespace

void check_single_select(const char *query_text, char **statement) {
    List *stmts = raw_parser(query_text, RAW_PARSE_DEFAULT);
    if (list_length(stmts) != 1)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo caches exactly one SELECT statement, got %d statements",
                               list_length(stmts))));
    RawStmt *raw = linitial_node(RawStmt, stmts);
    Node *stmt = raw->stmt;
    if (!IsA(stmt, SelectStmt))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo caches only SELECT statements, not %s",
                               CreateCommandName(stmt))));
    if (reinterpret_cast<SelectStmt *>(stmt)->intoClause)
        refuse("SELECT INTO", "It creates a table.");
    if (statement) {
        // stmt_len is 0 when the statement runs to the end of the text.
        int len = raw->stmt_len > 0 ? raw->stmt_len : int(strlen(query_text)) - raw->stmt_location;
        *statement = pnstrdup(query_text + raw->stmt_location, len);
    }
}

namespace {

// The one trigger memo.watch creates: BEFORE INSERT OR UPDATE OR DELETE OR
// TRUNCATE, FOR EACH STATEMENT, calling memo.invalidation_trigger(), with no
// WHEN, no column list, no arguments, no transition tables, and not a
// constraint trigger. Anything else that bears the name may skip writes (a
// WHEN (false) planted by a role with only the TRIGGER privilege).
constexpr int16 kWatchTriggerType =
    TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE;

// The fields of a trigger that decide whether it is pg_memo's, read from the
// relcache (Trigger) or from pg_trigger.
struct TriggerShape {
    const char *name;
    Oid function;
    int16 type;
    int16 nargs;
    int nattr;
    bool has_when;
    bool has_transition_tables;
    Oid constraint;
};

bool is_watch_trigger_shape(const TriggerShape &t) {
    return strcmp(t.name, kTriggerName) == 0 && t.function == trigger_function() && t.type == kWatchTriggerType &&
           t.nargs == 0 && t.nattr == 0 && !t.has_when && !t.has_transition_tables && !OidIsValid(t.constraint);
}

// The pg_trigger row of a trigger, copied; nullptr if there is none.
HeapTuple trigger_tuple(Oid trigger_oid) {
    Relation triggers = table_open(TriggerRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(trigger_oid));
    SysScanDesc scan = systable_beginscan(triggers, TriggerOidIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    if (tuple) tuple = heap_copytuple(tuple);
    systable_endscan(scan);
    table_close(triggers, AccessShareLock);
    return tuple;
}

}  // namespace

bool is_pg_memo_trigger(Oid trigger_oid) {
    HeapTuple tuple = trigger_tuple(trigger_oid);
    if (!tuple) return false;
    auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tuple));
    bool ours = t->tgfoid == trigger_function() && strcmp(NameStr(t->tgname), kTriggerName) == 0;
    heap_freetuple(tuple);
    return ours;
}

bool is_watch_trigger(Oid trigger_oid) {
    HeapTuple tuple = trigger_tuple(trigger_oid);
    if (!tuple) return false;
    auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tuple));
    TriggerShape shape{NameStr(t->tgname),
                       t->tgfoid,
                       t->tgtype,
                       t->tgnargs,
                       t->tgattr.dim1,
                       !heap_attisnull(tuple, Anum_pg_trigger_tgqual, nullptr),
                       !heap_attisnull(tuple, Anum_pg_trigger_tgoldtable, nullptr) ||
                           !heap_attisnull(tuple, Anum_pg_trigger_tgnewtable, nullptr),
                       t->tgconstraint};
    bool ours = is_watch_trigger_shape(shape);
    heap_freetuple(tuple);
    return ours;
}

Oid trigger_relation(Oid trigger_oid) {
    HeapTuple tuple = trigger_tuple(trigger_oid);
    if (!tuple) return InvalidOid;
    Oid relid = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tuple))->tgrelid;
    heap_freetuple(tuple);
    return relid;
}

WatchState relation_watch_state(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td) return WatchState::NotWatched;
    for (int i = 0; i < td->numtriggers; i++) {
        const Trigger &t = td->triggers[i];
        if (strcmp(t.tgname, kTriggerName) != 0) continue;  // names are unique per table
        TriggerShape shape{t.tgname,     t.tgfoid,        t.tgtype,
                           t.tgnargs,    t.tgnattr,       t.tgqual != nullptr,
                           t.tgoldtable != nullptr || t.tgnewtable != nullptr, t.tgconstraint};
        if (!is_watch_trigger_shape(shape)) return WatchState::NotWatched;
        // (Logical replication apply fires no statement triggers; apply
        // workers mark their subscription's tables at commit, see
        // invalidation.cpp.)
        return t.tgenabled == TRIGGER_FIRES_ALWAYS ? WatchState::Watched : WatchState::Disabled;
    }
    return WatchState::NotWatched;
}

void analyze_query(Query *query, const char *sql, const Oid *search_path, int search_path_len, Analysis *out) {
    Collector c{};
    c.capacity = 16;
    c.slots = static_cast<uint32_t *>(palloc(c.capacity * sizeof(uint32_t)));
    c.uncacheable = Uncacheable::No;

    collect_walker(reinterpret_cast<Node *>(query), &c);

    if (OidIsValid(c.first_mutable_function))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that calls %s, which is not IMMUTABLE",
                               format_procedure(c.first_mutable_function)),
                        errdetail("Its result could change without any write to a watched table."),
                        errhint("Pass such values (for example now()) as parameters instead.")));
    if (c.mutable_expression)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that uses CURRENT_USER, CURRENT_DATE, "
                               "nextval() or a similar non-immutable expression"),
                        errhint("Pass such values as parameters instead.")));
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
        add_slot(&c, Generations::slot_of(MyDatabaseId, GenerationKind::Namespace, search_path[i]));
    // Functions, operators and types resolve through the search path too,
    // and a new overload anywhere on it can be a better match than the one
    // a query used: every entry depends on the routines counter.
    add_slot(&c, Generations::slot_of(MyDatabaseId, GenerationKind::Routines, 0));
    // A reg* constant or parameter resolved a name to an OID when the text
    // was parsed or bound: anywhere, not only on the search path.
    if (c.resolves_names) {
        add_slot(&c, Generations::slot_of(MyDatabaseId, GenerationKind::Names, 0));
        add_slot(&c, Generations::slot_of(InvalidOid, GenerationKind::Roles, 0));
    }

    out->ndeps = c.nslots;
    out->deps = static_cast<DepStamp *>(palloc0(sizeof(DepStamp) * c.nslots));
    for (uint32_t i = 0; i < c.nslots; i++) out->deps[i].slot = c.slots[i];
    out->meta = encode_permissions(c.perm_rtes, c.privileges, &out->meta_len);
    out->uncacheable = c.uncacheable;
}

// A commit in progress is about to become visible: it is flushing its WAL,
// or waiting for a synchronous standby. A result computed before it lands is
// stale at once, and every caller computes again. Waiting lets the
// generations read next, and the snapshot taken after them, include it.
void wait_for_commits_in_progress(const Analysis &analysis) {
    Generations &gens = shared_state().gens;
    if (guc_commit_wait_ms <= 0 || !gens.any_commit_pending(analysis.deps, analysis.ndeps)) return;
    instr_time start;
    INSTR_TIME_SET_CURRENT(start);
    do {
        instr_time waited;
        INSTR_TIME_SET_CURRENT(waited);
        INSTR_TIME_SUBTRACT(waited, start);
        long remaining = guc_commit_wait_ms - long(INSTR_TIME_GET_MILLISEC(waited));
        if (remaining <= 0) return;
        // The committer signals no one (its bump must stay cheap): poll
        // every millisecond, interruptibly.
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Min(remaining, 1L),
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    } while (gens.any_commit_pending(analysis.deps, analysis.ndeps));
}

void read_generations(Analysis *analysis) {
    Generations &gens = shared_state().gens;
    for (uint32_t i = 0; i < analysis->ndeps; i++)
        analysis->deps[i].generation = gens.read(analysis->deps[i].slot);
}

bool privileges_still_hold(const char *meta, uint32_t meta_len) {
    uint32_t n;
    if (meta_len < sizeof n) return false;
    memcpy(&n, meta, sizeof n);
    const char *p = meta + sizeof n;
    const char *end = meta + meta_len;
    List *rtes = NIL;
    for (uint32_t i = 0; i < n; i++) {
        PermItem item;
        if (size_t(end - p) < sizeof item) return false;
        memcpy(&item, p, sizeof item);
        p += sizeof item;
        RangeTblEntry *rte = makeNode(RangeTblEntry);
        rte->rtekind = RTE_RELATION;
        rte->relid = item.relid;
        rte->checkAsUser = item.check_as_user;
        rte->requiredPerms = item.required_perms;
        if (item.nwords > 0) {
            size_t words = sizeof(bitmapword) * size_t(item.nwords);
            if (size_t(end - p) < words) return false;
            auto *cols = static_cast<Bitmapset *>(palloc(offsetof(Bitmapset, words) + words));
            cols->nwords = item.nwords;
            memcpy(cols->words, p, words);
            p += words;
            rte->selectedCols = cols;
        }
        rtes = lappend(rtes, rte);
        // Row level security can start to apply without any change to the
        // table (ALTER ROLE ... NOBYPASSRLS): the computation would refuse.
        if (check_enable_rls(item.relid, item.check_as_user, true) == RLS_ENABLED) return false;
    }
    if (!ExecCheckRTPerms(rtes, false)) return false;

    uint32_t nprivileges;
    if (size_t(end - p) < sizeof nprivileges) return false;
    memcpy(&nprivileges, p, sizeof nprivileges);
    p += sizeof nprivileges;
    for (uint32_t i = 0; i < nprivileges; i++) {
        PrivilegeItem item;
        if (size_t(end - p) < sizeof item) return false;
        memcpy(&item, p, sizeof item);
        p += sizeof item;
        if (!object_privilege_holds(item)) return false;
    }
    return true;
}

bool names_clock_time(const char *input) {
    static const char *const kWords[] = {"now", "today", "tomorrow", "yesterday"};
    for (const char *p = input; *p; p++) {
        if (!isalpha(static_cast<unsigned char>(*p)) || (p > input && isalpha(static_cast<unsigned char>(p[-1]))))
            continue;  // not the start of a word
        for (const char *word : kWords) {
            size_t n = strlen(word);
            if (pg_strncasecmp(p, word, n) == 0 && !isalpha(static_cast<unsigned char>(p[n]))) return true;
        }
    }
    return false;
}

}  // namespace pgmemo

namespace pgmemo {

bool type_holds_clock_values(Oid type) { return type_holds(type, is_clock_type); }

}  // namespace pgmemo
