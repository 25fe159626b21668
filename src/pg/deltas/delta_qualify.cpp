// Which entries deltas may keep (delta_qualify.hpp).
#include "deltas/delta_qualify.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "compat.hpp"
#include "invalidate/watch.hpp"

namespace pgmemo {

namespace {


// q selects rows of one plain table, the same as the other branches': its
// WHERE is appended to quals.
bool plain_selection(Query *q, Shape *s) {
    if (q->commandType != CMD_SELECT || q->utilityStmt || q->hasAggs || q->hasWindowFuncs || q->hasTargetSRFs ||
        q->hasSubLinks || q->hasDistinctOn || q->hasRecursive || q->hasModifyingCTE || q->hasForUpdate ||
        q->hasRowSecurity || q->cteList || q->groupClause || q->groupingSets || q->havingQual ||
        q->distinctClause || q->setOperations || q->rowMarks || list_length(q->rtable) != 1)
        return false;
    auto *rte = linitial_node(RangeTblEntry, q->rtable);
    if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION || rte->tablesample) return false;
    if (list_length(q->jointree->fromlist) != 1 || !IsA(linitial(q->jointree->fromlist), RangeTblRef))
        return false;
    if (OidIsValid(s->relid) && s->relid != rte->relid) return false;
    s->relid = rte->relid;
    s->quals = lappend(s->quals, q->jointree->quals);
    s->targets = lappend(s->targets, q->targetList);
    return true;
}

// A branch of a UNION ALL is held to what the outer query is: its own
// ORDER BY, LIMIT or OFFSET would make its rows depend on rows it does not
// return, which a row-by-row correction cannot see.
bool union_all_branches(Query *top, Node *node, Shape *s) {
    if (IsA(node, RangeTblRef)) {
        RangeTblEntry *rte = rt_fetch(reinterpret_cast<RangeTblRef *>(node)->rtindex, top->rtable);
        if (rte->rtekind != RTE_SUBQUERY) return false;
        Query *branch = rte->subquery;
        if (branch->sortClause || branch->limitCount || branch->limitOffset) return false;
        return plain_selection(branch, s);
    }
    if (!IsA(node, SetOperationStmt)) return false;
    auto *op = reinterpret_cast<SetOperationStmt *>(node);
    return op->op == SETOP_UNION && op->all && union_all_branches(top, op->larg, s) &&
           union_all_branches(top, op->rarg, s);
}

// A UNION ALL of selections with nothing around it.
bool union_all(Query *q, Shape *s) {
    if (q->sortClause || q->limitCount || q->limitOffset || q->cteList || q->hasSubLinks || q->rowMarks)
        return false;
    return union_all_branches(q, q->setOperations, s);
}

// Whether every sort key is an output column: the stored rows hold the
// last row's keys only then.
bool sorts_by_output_columns(Query *q) {
    ListCell *lc;
    foreach (lc, q->sortClause) {
        TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), q->targetList);
        if (tle->resjunk) return false;
    }
    return true;
}

// Whether funcid is not a built-in function in C or internal.
bool not_builtin(Oid funcid, void *) {
    if (funcid >= FirstNormalObjectId) return true;
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple)) return true;
    Oid language = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->prolang;
    ReleaseSysCache(tuple);
    return language != INTERNALlanguageId && language != ClanguageId;
}

bool calls_other_than_builtins(Node *node, void *context) {
    if (node == nullptr) return false;
    if (check_functions_in_node(node, not_builtin, context)) return true;
    return expression_tree_walker(node, as_tree_walker(calls_other_than_builtins), context);
}

// Whether the expressions deltas evaluate over row versions call only
// built-in functions. A function of SQL or a procedural language could read
// a table while a carry evaluates it, unobserved (learned_reads.hpp watches
// computations only), and could keep state across calls (fn_extra) that
// must not outlive the transaction: such queries keep table-level
// invalidation.
bool calls_only_builtins(const Shape &s) {
    ListCell *lc;
    foreach (lc, s.quals)
        if (calls_other_than_builtins(static_cast<Node *>(lfirst(lc)), nullptr)) return false;
    foreach (lc, s.targets)
        if (calls_other_than_builtins(static_cast<Node *>(lfirst(lc)), nullptr)) return false;
    if (!s.page) return true;
    if (calls_other_than_builtins(s.page->limitCount, nullptr)) return false;
    foreach (lc, s.page->sortClause) {
        TargetEntry *tle = get_sortgroupclause_tle(lfirst_node(SortGroupClause, lc), s.page->targetList);
        if (calls_other_than_builtins(reinterpret_cast<Node *>(tle->expr), nullptr)) return false;
    }
    return true;
}

}  // namespace

bool shape_of(Query *query, Kind kind, Shape *s) {
    if (kind == Kind::Count) {
        // compute.cpp's wrapper: SELECT count(*) FROM (<text>) AS pg_memo_count
        if (list_length(query->rtable) != 1) return false;
        auto *rte = linitial_node(RangeTblEntry, query->rtable);
        if (rte->rtekind != RTE_SUBQUERY) return false;
        Query *inner = rte->subquery;
        if (inner->limitCount || inner->limitOffset) return false;  // counts a page
        return inner->setOperations ? union_all(inner, s) : plain_selection(inner, s);
    }
    if (query->setOperations) return union_all(query, s);
    if (!plain_selection(query, s)) return false;
    if (query->sortClause && query->limitCount && query->limitOption == LIMIT_OPTION_COUNT &&
        sorts_by_output_columns(query))
        s->page = query;
    return true;
}

Oid delta_relation(Query *query, Kind kind) {
    Shape s;
    if (!shape_of(query, kind, &s) || !calls_only_builtins(s)) return InvalidOid;
    // The parser holds a lock on it. A table with inheritance children or
    // parents is written through statements on other tables too.
    Relation rel = table_open(s.relid, NoLock);
    bool keeps = relation_keeps_deltas(rel) && !has_subclass(s.relid) && !has_superclass(s.relid);
    table_close(rel, NoLock);
    return keeps ? s.relid : InvalidOid;
}

}  // namespace pgmemo
