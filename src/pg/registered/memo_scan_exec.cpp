// The "pg_memo" node's executor side (memo_scan.hpp): its state, made
// from the plan's private list once that list's shape is checked; at the
// first row the statement served as a memo.list call (serve_statement),
// its rows then returned from a tuplestore; EXPLAIN's lines.
#include "registered/memo_scan.hpp"

#include "compat.hpp"  // EXPLAIN's property functions (18 moved them to explain_format.h)

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "tcop/pquery.h"  // ActivePortal
#include "utils/portal.h"
#include "utils/tuplestore.h"
}

#include "admission/shapes_table.hpp"
#include "call.hpp"
#include "serve/serve_statement.hpp"

#include <cstdlib>

namespace pgmemo {
namespace {

struct MemoScanState {
    CustomScanState css;
    const char *text;
    const char *cache_name;
    StatementOptions options;
    uint64 admitted_shape;  // 0: a registration's
    bool random_access;
    bool filled;
    Served served;
    Tuplestorestate *store;
    TupleTableSlot *slot;  // minimal tuples, as the tuplestore gives them
};

// custom_private's members by name (MemoScanPrivate), each checked for the
// node type the plan side gives it: a plan is the executor's input, and a
// wrong one must raise an ERROR in a release build too, not read garbage.
Node *private_member(List *custom_private, MemoScanPrivate member, NodeTag tag, const char *type) {
    auto *node = static_cast<Node *>(list_nth(custom_private, member));
    if (!node || nodeTag(node) != tag)
        elog(ERROR, "pg_memo: member %d of the pg_memo node's private list is not %s "
                    "(a plan made by another version of pg_memo)",
             int(member), type);
    return node;
}

const char *private_text(List *custom_private, MemoScanPrivate member) {
    return strVal(private_member(custom_private, member, T_String, "a String"));
}

int private_int(List *custom_private, MemoScanPrivate member) {
    return intVal(private_member(custom_private, member, T_Integer, "an Integer"));
}

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

// The snapshot the rows must be as of (docs/consistency.md, "Which
// snapshot each path uses"). A portal of a simple Query message or of SQL
// EXECUTE (the only portals PostgreSQL hides from pg_cursors) is run
// as soon as it is started, in the same message, nothing of this backend's
// in between: under READ COMMITTED a snapshot taken at its first row is one
// PostgreSQL could have given it, so it answers as of now, as a memo call
// does, and shares a flight with every caller of the same key. A cursor, a
// Bind executed by a later message, or a transaction snapshot keep theirs.
Snapshot snapshot_to_answer_as_of(EState *estate) {
    Portal portal = ActivePortal;
    bool started_by_this_run = portal && !portal->visible && portal->queryDesc && portal->queryDesc->estate == estate;
    if (started_by_this_run && !IsolationUsesXactSnapshot()) return InvalidSnapshot;
    return estate->es_snapshot;
}

void fill(MemoScanState *s) {
    EState *estate = s->css.ss.ps.state;
    Call call{};
    call.kind = Kind::List;
    call.cache_name = cstring_to_text(s->cache_name);
    call.query = cstring_to_text(s->text);
    read_parameters(estate->es_param_list_info, &call);
    call.search_path_len = effective_search_path(call.search_path);
    call.as_of = snapshot_to_answer_as_of(estate);
    RowSpill spill{estate->es_query_cxt, CurrentResourceOwner, s->slot->tts_tupleDescriptor,
                   DeclaredBy::Statement, s->random_access, nullptr, nullptr};
    call.spill = &spill;
    // A plan made for an admitted shape that is no longer served (demoted,
    // blocked, forgotten, or pg_memo.admission not auto in this session):
    // the statement runs as pg_memo.enabled = off runs it, computed and
    // not stored, until it is planned again.
    call.uncached = s->admitted_shape != 0 && !admitted_shape_serves(s->admitted_shape);
    s->served = serve_statement(call, s->options);
    s->store = spill.store;
    s->filled = true;
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

// Filled by field name: a field a later PostgreSQL adds stays null. No
// mark/restore, no parallel methods: the node is never parallel safe.
constexpr CustomExecMethods make_exec_methods() {
    CustomExecMethods m{};
    m.CustomName = "pg_memo";
    m.BeginCustomScan = begin;
    m.ExecCustomScan = exec;
    m.EndCustomScan = end;
    m.ReScanCustomScan = rescan;
    m.ExplainCustomScan = explain;
    return m;
}

constexpr CustomExecMethods memo_scan_exec_methods = make_exec_methods();

}  // namespace

bool memo_scan_outcome(PlanState *state, Served *served) {
    if (!state || !IsA(state, CustomScanState)) return false;
    if (reinterpret_cast<CustomScanState *>(state)->methods != &memo_scan_exec_methods) return false;
    auto *s = reinterpret_cast<MemoScanState *>(state);
    if (!s->filled) return false;
    *served = s->served;
    return true;
}

Node *create_memo_scan_state(CustomScan *plan) {
    List *custom_private = plan->custom_private;
    if (list_length(custom_private) != kMemoScanPrivateCount)
        elog(ERROR, "pg_memo: the pg_memo node's private list has %d members, not %d "
                    "(a plan made by another version of pg_memo)",
             list_length(custom_private), int(kMemoScanPrivateCount));
    auto *s = static_cast<MemoScanState *>(palloc0(sizeof(MemoScanState)));
    NodeSetTag(s, T_CustomScanState);
    s->css.methods = &memo_scan_exec_methods;
    s->text = private_text(custom_private, kMemoScanText);
    s->cache_name = private_text(custom_private, kMemoScanCacheName);
    s->options.max_staleness_ms = private_int(custom_private, kMemoScanMaxStaleness);
    s->options.stale_on_error_ms = private_int(custom_private, kMemoScanStaleOnError);
    s->options.error_ttl_ms = private_int(custom_private, kMemoScanErrorTtl);
    const char *shape = private_text(custom_private, kMemoScanAdmittedShape);
    s->admitted_shape = *shape ? strtoull(shape, nullptr, 10) : 0;
    return reinterpret_cast<Node *>(s);
}

}  // namespace pgmemo
