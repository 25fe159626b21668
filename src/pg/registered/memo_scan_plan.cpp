// The "pg_memo" node's plan side (memo_scan.hpp): the CustomScan put on
// top of PostgreSQL's plan, its columns and private list, and the plan
// methods registered under the name "pg_memo". What it does when run is
// memo_scan_exec.cpp.
#include "registered/memo_scan.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
}

namespace pgmemo {
namespace {

// Filled by field name: a field a later PostgreSQL adds stays null.
constexpr CustomScanMethods make_scan_methods() {
    CustomScanMethods m{};
    m.CustomName = "pg_memo";
    m.CreateCustomScanState = create_memo_scan_state;
    return m;
}

// The scan's columns: the child's output columns, as Vars over its
// targetlist (the scan tuple), which EXPLAIN VERBOSE names through it.
void set_columns(CustomScan *scan, const Plan *child) {
    List *scan_tlist = NIL, *tlist = NIL;
    ListCell *lc;
    AttrNumber resno = 0;
    foreach (lc, child->targetlist) {
        auto *tle = lfirst_node(TargetEntry, lc);
        if (tle->resjunk) continue;
        Expr *expr = tle->expr;
        resno++;
        Var *outer = makeVar(OUTER_VAR, tle->resno, exprType(reinterpret_cast<Node *>(expr)),
                             exprTypmod(reinterpret_cast<Node *>(expr)), exprCollation(reinterpret_cast<Node *>(expr)), 0);
        scan_tlist = lappend(scan_tlist, makeTargetEntry(reinterpret_cast<Expr *>(outer), resno, tle->resname, false));
        Var *column = makeVar(INDEX_VAR, resno, outer->vartype, outer->vartypmod, outer->varcollid, 0);
        tlist = lappend(tlist, makeTargetEntry(reinterpret_cast<Expr *>(column), resno, tle->resname, false));
    }
    scan->custom_scan_tlist = scan_tlist;
    scan->scan.plan.targetlist = tlist;
}

// custom_private: each member set by its MemoScanPrivate name, then
// appended in the enum's order (one left unset would be a null member,
// which the executor refuses).
List *private_list(const Registration &registration, const char *text) {
    Node *members[kMemoScanPrivateCount] = {};
    const StatementOptions &o = registration.options;
    members[kMemoScanText] = reinterpret_cast<Node *>(makeString(pstrdup(text)));
    members[kMemoScanCacheName] = reinterpret_cast<Node *>(makeString(pstrdup(registration.cache_name)));
    members[kMemoScanMaxStaleness] = reinterpret_cast<Node *>(makeInteger(o.max_staleness_ms));
    members[kMemoScanStaleOnError] = reinterpret_cast<Node *>(makeInteger(o.stale_on_error_ms));
    members[kMemoScanErrorTtl] = reinterpret_cast<Node *>(makeInteger(o.error_ttl_ms));
    members[kMemoScanAdmittedShape] = reinterpret_cast<Node *>(makeString(
        registration.admitted_shape ? psprintf(UINT64_FORMAT, registration.admitted_shape) : pstrdup("")));
    List *list = NIL;
    for (Node *member : members) list = lappend(list, member);
    return list;
}

}  // namespace

const CustomScanMethods memo_scan_methods = make_scan_methods();

Plan *memo_scan_over(Plan *plan, const Registration &registration, const char *text) {
    CustomScan *scan = makeNode(CustomScan);
    // The cost of a hit, the same for every plan of the statement: a
    // prepared statement's plan cache then keeps its generic plan (a
    // custom plan's cost adds its planning), and the statement is not
    // planned again per execution. A miss plans its own (through SPI).
    scan->scan.plan.startup_cost = 0;
    scan->scan.plan.total_cost = cpu_tuple_cost;
    scan->scan.plan.plan_rows = plan->plan_rows;
    scan->scan.plan.plan_width = plan->plan_width;
    scan->scan.plan.parallel_safe = false;
    scan->scan.scanrelid = 0;
    outerPlan(&scan->scan.plan) = plan;
    scan->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN;
    scan->methods = &memo_scan_methods;
    set_columns(scan, plan);
    scan->custom_private = private_list(registration, text);
    return &scan->scan.plan;
}

}  // namespace pgmemo
