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
}

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

struct Collector {
    uint32_t *slots;
    uint32_t nslots, capacity;
    List *perm_rtes;
    Oid first_mutable_function;
    bool mutable_expression;  // e.g. CURRENT_USER, nextval
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

bool note_function(Oid funcid, void *context) {
    auto *c = static_cast<Collector *>(context);
    if (func_volatile(funcid) != PROVOLATILE_IMMUTABLE && !OidIsValid(c->first_mutable_function))
        c->first_mutable_function = funcid;
    return false;  // keep walking
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
    check_functions_in_node(node, note_function, context);
    if (IsA(node, SQLValueFunction) || IsA(node, NextValueExpr)) c->mutable_expression = true;
    return expression_tree_walker(node, as_tree_walker(collect_walker), context);
}

void append_bytes(StringInfo buf, const void *data, size_t len) {
    appendBinaryStringInfo(buf, static_cast<const char *>(data), int(len));
}

char *encode_permissions(List *rtes, uint32_t *len) {
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
    *len = uint32_t(buf.len);
    return buf.data;
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

bool is_pg_memo_trigger(Oid trigger_oid) {
    Relation triggers = table_open(TriggerRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(trigger_oid));
    SysScanDesc scan = systable_beginscan(triggers, TriggerOidIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    bool ours = false;
    if (tuple) {
        auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tuple));
        ours = t->tgfoid == trigger_function() && strcmp(NameStr(t->tgname), kTriggerName) == 0;
    }
    systable_endscan(scan);
    table_close(triggers, AccessShareLock);
    return ours;
}

WatchState relation_watch_state(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td) return WatchState::NotWatched;
    bool statement_trigger = false;
    for (int i = 0; i < td->numtriggers && !statement_trigger; i++) {
        const Trigger &t = td->triggers[i];
        if (strcmp(t.tgname, kTriggerName) != 0) continue;
        bool ours = t.tgfoid == trigger_function() && TRIGGER_FOR_BEFORE(t.tgtype) &&
                    !TRIGGER_FOR_ROW(t.tgtype) && TRIGGER_FOR_INSERT(t.tgtype) &&
                    TRIGGER_FOR_UPDATE(t.tgtype) && TRIGGER_FOR_DELETE(t.tgtype) &&
                    TRIGGER_FOR_TRUNCATE(t.tgtype);
        if (!ours) return WatchState::NotWatched;
        if (t.tgenabled != TRIGGER_FIRES_ALWAYS) return WatchState::Disabled;
        statement_trigger = true;
    }
    // (Logical replication apply fires no statement triggers; apply workers
    // mark their subscription's tables at commit, see invalidation.cpp.)
    return statement_trigger ? WatchState::Watched : WatchState::NotWatched;
}

void analyze_query(Query *query, const Oid *search_path, int search_path_len, Analysis *out) {
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

    // Name resolution: a table created, renamed or moved in a schema on the
    // search path can change which relation the same text means.
    for (int i = 0; i < search_path_len; i++)
        add_slot(&c, Generations::slot_of(MyDatabaseId, GenerationKind::Namespace, search_path[i]));
    // Functions, operators and types resolve through the search path too,
    // and a new overload anywhere on it can be a better match than the one
    // a query used: every entry depends on the routines counter.
    add_slot(&c, Generations::slot_of(MyDatabaseId, GenerationKind::Routines, 0));

    out->ndeps = c.nslots;
    out->deps = static_cast<DepStamp *>(palloc0(sizeof(DepStamp) * c.nslots));
    for (uint32_t i = 0; i < c.nslots; i++) out->deps[i].slot = c.slots[i];
    out->meta = encode_permissions(c.perm_rtes, &out->meta_len);
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
    return ExecCheckRTPerms(rtes, false);
}

}  // namespace pgmemo
