// The "pg_memo" custom scan (memo_scan.hpp).
#include "planner/memo_scan.hpp"

extern "C" {
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include "compat.hpp"

namespace pgmemo {
namespace {

// custom_private's members, in this order.
enum Private { kText, kCacheName, kMaxStaleness, kStaleOnError, kErrorTtl };

struct MemoScanState {
    CustomScanState css;
    const char *text;
    const char *cache_name;
    StatementOptions options;
    bool random_access;
    bool filled;
    Served served;
    Tuplestorestate *store;
    TupleTableSlot *slot;  // minimal tuples, as the tuplestore gives them
};

extern const CustomScanMethods plan_methods;
extern const CustomExecMethods exec_methods;

// The statement's parameters as its client bound them, as text that reads
// back to the same values in any session (portable_texts).
void read_parameters(ParamListInfo params, Call *call) {
    int n = params ? params->numParams : 0;
    auto *types = static_cast<Oid *>(palloc(sizeof(Oid) * (n + 1)));
    auto *values = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
    call->param_values = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
    call->param_nulls = static_cast<bool *>(palloc(sizeof(bool) * (n + 1)));
    call->nparams = n;
    call->param_types = types;
    for (int i = 0; i < n; i++) {
        ParamExternData workspace;
        ParamExternData *p = params->paramFetch ? params->paramFetch(params, i + 1, false, &workspace)
                                                : &params->params[i];
        // A parameter the statement never uses may come without a type.
        types[i] = OidIsValid(p->ptype) ? p->ptype : TEXTOID;
        call->param_nulls[i] = p->isnull || !OidIsValid(p->ptype);
        values[i] = p->value;
    }
    portable_texts(n, types, values, call->param_nulls, call->param_values);
}

void fill(MemoScanState *s) {
    EState *estate = s->css.ss.ps.state;
    Call call{};
    call.kind = Kind::List;
    call.cache_name = cstring_to_text(s->cache_name);
    call.query = cstring_to_text(s->text);
    read_parameters(estate->es_param_list_info, &call);
    call.search_path_len = effective_search_path(call.search_path);
    // The portal's snapshot, which may be older than this first row (a
    // cursor fetched later): the rows must be what it sees.
    call.as_of = estate->es_snapshot;
    RowSpill spill{estate->es_query_cxt, CurrentResourceOwner, s->slot->tts_tupleDescriptor,
                   DeclaredBy::Statement, s->random_access, nullptr, nullptr};
    call.spill = &spill;
    s->served = serve_statement(call, s->options);
    s->store = spill.store;
    s->filled = true;
}

Node *create_state(CustomScan *plan) {
    auto *s = static_cast<MemoScanState *>(palloc0(sizeof(MemoScanState)));
    NodeSetTag(s, T_CustomScanState);
    s->css.methods = &exec_methods;
    s->text = strVal(list_nth(plan->custom_private, kText));
    s->cache_name = strVal(list_nth(plan->custom_private, kCacheName));
    s->options.max_staleness_ms = intVal(list_nth(plan->custom_private, kMaxStaleness));
    s->options.stale_on_error_ms = intVal(list_nth(plan->custom_private, kStaleOnError));
    s->options.error_ttl_ms = intVal(list_nth(plan->custom_private, kErrorTtl));
    return reinterpret_cast<Node *>(s);
}

void begin(CustomScanState *node, EState *estate, int eflags) {
    auto *s = reinterpret_cast<MemoScanState *>(node);
    s->random_access = (eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK)) != 0;
    s->slot = ExecInitExtraTupleSlot(estate, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor, &TTSOpsMinimalTuple);
    // EXPLAIN shows the plan PostgreSQL made; it runs only in a computation.
    Plan *child = outerPlan(node->ss.ps.plan);
    if (child && ((eflags & EXEC_FLAG_EXPLAIN_ONLY) || estate->es_instrument))
        outerPlanState(node) = ExecInitNode(child, estate, eflags);
}

TupleTableSlot *exec(CustomScanState *node) {
    auto *s = reinterpret_cast<MemoScanState *>(node);
    CHECK_FOR_INTERRUPTS();
    if (!s->filled) fill(s);
    bool forward = ScanDirectionIsForward(node->ss.ps.state->es_direction);
    if (!tuplestore_gettupleslot(s->store, forward, false, s->slot)) return ExecClearTuple(s->slot);
    return s->slot;
}

void end(CustomScanState *node) {
    auto *s = reinterpret_cast<MemoScanState *>(node);
    if (outerPlanState(node)) ExecEndNode(outerPlanState(node));
    if (s->store) tuplestore_end(s->store);
    s->store = nullptr;
}

void rescan(CustomScanState *node) {
    auto *s = reinterpret_cast<MemoScanState *>(node);
    if (s->store) tuplestore_rescan(s->store);
}

const char *served_name(Served served) {
    switch (served) {
        case Served::Hit: return "hit";
        case Served::Older: return "older answer";
        case Served::Computed: return "computed";
        case Served::Bypassed: return "bypassed";
    }
    return "unknown";
}

void explain(CustomScanState *node, List *, ExplainState *es) {
    auto *s = reinterpret_cast<MemoScanState *>(node);
    ExplainPropertyText("Cache", s->cache_name, es);
    if (es->analyze) ExplainPropertyText("Served", s->filled ? served_name(s->served) : "not run", es);
}

const CustomScanMethods plan_methods = {"pg_memo", create_state};

const CustomExecMethods exec_methods = {
    "pg_memo", begin, exec, end, rescan, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, explain,
};

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

}  // namespace

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
    scan->methods = &plan_methods;
    set_columns(scan, plan);
    const StatementOptions &o = registration.options;
    scan->custom_private = list_make5(makeString(pstrdup(text)), makeString(pstrdup(registration.cache_name)),
                                      makeInteger(o.max_staleness_ms), makeInteger(o.stale_on_error_ms),
                                      makeInteger(o.error_ttl_ms));
    return &scan->scan.plan;
}

void register_memo_scan() { RegisterCustomScanMethods(&plan_methods); }

}  // namespace pgmemo
