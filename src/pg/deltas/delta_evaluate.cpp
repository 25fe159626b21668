// Deltas, the reader's side (delta_evaluate.hpp): committed row versions
// evaluated over a query's own expressions, and the records collected from
// the delta log.
//
// Locks: collect_records holds the delta log's LWLock (shared) while it
// copies records and reads the counters, and calls nothing under it that
// can raise (the copies are allocated without raising), so that the lock
// is never held with another pg_memo lock. The evaluation holds none.
#include "deltas/delta_evaluate.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/sortsupport.h"
}

#include "compat.hpp"
#include "query_errors.hpp"
#include "result_format.hpp"
#include "stored_rows.hpp"
#include "shared_state.hpp"

namespace pgmemo {

namespace {

// ---- evaluating row versions ---------------------------------------------

// The query's expressions, ready to evaluate row versions. Two kinds:
//   - generic: the call's parameters are bound at each use (start_use).
//     Kept with the statement (compute/call_plans.hpp) for the next carry of
//     any of its keys (every function it calls is a built-in one:
//     delta_relation), or built for one use when the statement is not kept.
//   - folded: one call's parameters folded in as constants, as a custom
//     plan would (ARRAY[$1] becomes a constant instead of an array built
//     for every row). Built for one use, when the rows to evaluate are
//     many enough to repay building it (kFoldAtRows).
// Keeping one folded evaluator per key cost more than it saved when
// readers spread over many keys (a directory's thousand teams, each carry
// another key's: bench/directory_writes.sh).
//
// One selection of the query (a UNION ALL has several), as the direct plan
// evaluates it: its WHERE as the planner's list of conjuncts, and the
// outputs that can raise an error for some row (a division, a cast).
struct Selection {
    List *conjuncts;  // ExprState *; empty: every row
    // Whether a conjunct can raise an error for some row: then every
    // conjunct is evaluated for every new row version, because the plan may
    // evaluate them in another order (by cost) and stop at another one.
    bool conjuncts_can_fail;
    List *failing_outputs;  // ExprState * of the outputs that can fail
};

}  // namespace

struct DeltaEvaluator {
    MemoryContext context;  // everything below
    Oid relid;
    Kind kind;
    TupleTableSlot *slot;
    ExprContext *econtext;
    int nselections;
    Selection *selections;
    ExprState *limit;      // a list ordered with LIMIT: its limit; else nullptr
    int nkeys;
    ExprState **keys;
    SortSupportData *sort;
    AttrNumber *columns;  // each key's output column
    // Per use: set by start_use.
    bool page;  // a list ordered with a LIMIT that is not NULL
    int64 limit_value;
};

namespace {

// Plans expr as an expression: constants folded, and with params the
// parameters too; without, they are read from the expression context's
// parameter list when it runs.
Node *fold_expression(Node *expr, ParamListInfo params) {
    PlannerGlobal glob{};
    glob.type = T_PlannerGlobal;
    glob.boundParams = params;
    PlannerInfo root{};
    root.type = T_PlannerInfo;
    root.glob = &glob;
    Node *folded = eval_const_expressions(&root, static_cast<Node *>(copyObjectImpl(expr)));
    fix_opfuncids(folded);
    return folded;
}

ExprState *prepare_expression(Node *expr, ParamListInfo params) {
    return ExecInitExpr(reinterpret_cast<Expr *>(fold_expression(expr, params)), nullptr);
}

bool not_leakproof(Oid funcid, void *) { return !get_func_leakproof(funcid); }

// Whether evaluating expr can raise an error for some row: anything but
// columns, constants, parameters, boolean logic, CASE, COALESCE, NULL
// tests, arrays of them and leakproof functions (which by their definition
// raise nothing that depends on their arguments).
bool may_raise(Node *node, void *context) {
    if (node == nullptr) return false;
    switch (nodeTag(node)) {
        case T_Var:
        case T_Const:
        case T_Param:
        case T_RelabelType:
        case T_BoolExpr:
        case T_NullTest:
        case T_BooleanTest:
        case T_CaseExpr:
        case T_CaseWhen:
        case T_CaseTestExpr:
        case T_CoalesceExpr:
        case T_List: break;
        case T_ArrayExpr:  // an array of arrays fails when their dimensions differ
            if (reinterpret_cast<ArrayExpr *>(node)->multidims) return true;
            break;
        case T_FuncExpr:
        case T_OpExpr:
        case T_DistinctExpr:
        case T_NullIfExpr:
        case T_ScalarArrayOpExpr:
            if (check_functions_in_node(node, not_leakproof, context)) return true;
            break;
        default: return true;
    }
    return expression_tree_walker(node, as_tree_walker(may_raise), context);
}

// A selection's WHERE is split into conjuncts the way the planner prepares
// it (constants folded, AND/OR normalized, implicit AND list), and its
// outputs that can fail are kept to be evaluated over new row versions:
// the direct plan may compute them (a top-N sort computes every row's
// output), and its error is then the query's answer.
void prepare_selection(Node *where, List *targets, ParamListInfo params, Selection *out) {
    ListCell *lc;
    if (where) {
        Node *folded = fold_expression(where, params);
        List *conjuncts = make_ands_implicit(canonicalize_qual(reinterpret_cast<Expr *>(folded), false));
        foreach (lc, conjuncts) {
            Node *conjunct = static_cast<Node *>(lfirst(lc));
            out->conjuncts = lappend(out->conjuncts, ExecInitExpr(reinterpret_cast<Expr *>(conjunct), nullptr));
            out->conjuncts_can_fail |= may_raise(conjunct, nullptr);
        }
    }
    foreach (lc, targets) {
        Node *expr = reinterpret_cast<Node *>(lfirst_node(TargetEntry, lc)->expr);
        if (may_raise(expr, nullptr)) out->failing_outputs = lappend(out->failing_outputs, prepare_expression(expr, params));
    }
}

Datum evaluate(DeltaEvaluator &ev, ExprState *state, bool *isnull) {
    return ExecEvalExprSwitchContext(state, ev.econtext, isnull);
}

// params: folded in (nullptr: generic).
DeltaEvaluator *build_evaluator(const Shape &s, Kind kind, ParamListInfo params, MemoryContext parent) {
    MemoryContext context = AllocSetContextCreate(parent, "pg_memo delta evaluator", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(context);
    auto *ev = static_cast<DeltaEvaluator *>(palloc0(sizeof(DeltaEvaluator)));
    ev->context = context;
    ev->relid = s.relid;
    ev->kind = kind;
    Relation rel = table_open(s.relid, AccessShareLock);
    // With the descriptor's missing values: rows written before an ADD
    // COLUMN ... DEFAULT are short on disk, and read the default, not NULL.
    ev->slot = MakeSingleTupleTableSlot(CreateTupleDescCopyConstr(RelationGetDescr(rel)), &TTSOpsHeapTuple);
    table_close(rel, NoLock);
    ev->econtext = CreateStandaloneExprContext();
    ev->econtext->ecxt_scantuple = ev->slot;
    ev->nselections = list_length(s.quals);
    ev->selections = static_cast<Selection *>(palloc0(sizeof(Selection) * ev->nselections));
    ListCell *lc;
    for (int i = 0; i < ev->nselections; i++)
        prepare_selection(static_cast<Node *>(list_nth(s.quals, i)), static_cast<List *>(list_nth(s.targets, i)),
                          params, &ev->selections[i]);
    if (s.page) {
        ev->limit = prepare_expression(s.page->limitCount, params);
        ev->nkeys = list_length(s.page->sortClause);
        ev->keys = static_cast<ExprState **>(palloc(sizeof(ExprState *) * ev->nkeys));
        ev->sort = static_cast<SortSupportData *>(palloc0(sizeof(SortSupportData) * ev->nkeys));
        ev->columns = static_cast<AttrNumber *>(palloc(sizeof(AttrNumber) * ev->nkeys));
        int i = 0;
        foreach (lc, s.page->sortClause) {
            auto *clause = lfirst_node(SortGroupClause, lc);
            TargetEntry *tle = get_sortgroupclause_tle(clause, s.page->targetList);
            ev->keys[i] = prepare_expression(reinterpret_cast<Node *>(tle->expr), params);
            ev->columns[i] = tle->resno;
            SortSupport ssup = &ev->sort[i];
            ssup->ssup_cxt = context;
            ssup->ssup_collation = exprCollation(reinterpret_cast<Node *>(tle->expr));
            ssup->ssup_nulls_first = clause->nulls_first;
            PrepareSortSupportFromOrderingOp(clause->sortop, ssup);
            i++;
        }
    }
    MemoryContextSwitchTo(old);
    return ev;
}

// Row versions from which a folded evaluator repays its building.
constexpr uint64_t kFoldAtRows = 64;

// For nrows row versions: a folded evaluator built for this use, or the
// statement's generic one, built if needed and kept with it when allowed.
DeltaEvaluator *evaluator_for(const Shape &s, Kind kind, ParamListInfo params, const KeptEvaluator &kept,
                         uint64_t nrows) {
    if (nrows >= kFoldAtRows) return build_evaluator(s, kind, params, CurrentMemoryContext);
    if (kept.evaluator && *kept.evaluator) return *kept.evaluator;
    bool keep = kept.evaluator != nullptr;  // built-in functions only (delta_relation): nothing to outlive
    DeltaEvaluator *ev = build_evaluator(s, kind, nullptr, keep ? kept.context : CurrentMemoryContext);
    if (keep) *kept.evaluator = ev;
    return ev;
}

// Done with ev: freed unless the statement keeps it (or, after an error,
// freed anyway: its state is not to be trusted).
void done_with(const KeptEvaluator &kept, DeltaEvaluator *ev, bool failed) {
    bool is_kept = kept.evaluator && *kept.evaluator == ev;
    if (is_kept && !failed) return;
    if (is_kept) *kept.evaluator = nullptr;
    MemoryContextDelete(ev->context);
}

// Binds the call's parameters; reads the limit.
void start_use(DeltaEvaluator &ev, ParamListInfo params) {
    ev.econtext->ecxt_param_list_info = params;
    ev.page = false;
    if (!ev.limit) return;
    bool isnull;
    Datum limit = evaluate(ev, ev.limit, &isnull);
    ev.page = !isnull;  // LIMIT NULL: the whole ordered list
    ev.limit_value = isnull ? 0 : DatumGetInt64(limit);
}

void store_row(DeltaEvaluator &ev, const char *row, uint32_t len, HeapTupleData *tuple) {
    tuple->t_len = len;
    tuple->t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(row));
    tuple->t_tableOid = ev.relid;
    ItemPointerSetInvalid(&tuple->t_self);
    ResetExprContext(ev.econtext);
    ExecStoreHeapTuple(tuple, ev.slot, false);
}

// Whether the stored row satisfies the selection. A new row version is
// read by the direct plan, in whatever order it evaluates the conjuncts:
// if one can fail, each is evaluated (its error means "cannot tell"), and
// so are the outputs that can fail, of a version that matches.
bool satisfies(DeltaEvaluator &ev, const Selection &sel, bool is_new) {
    bool all = true;
    ListCell *lc;
    foreach (lc, sel.conjuncts) {
        bool isnull = false;
        Datum d = evaluate(ev, static_cast<ExprState *>(lfirst(lc)), &isnull);
        all = all && !isnull && DatumGetBool(d);
        if (!all && !(is_new && sel.conjuncts_can_fail)) return false;
    }
    if (!all) return false;
    if (is_new)
        foreach (lc, sel.failing_outputs) {
            bool isnull;
            (void)evaluate(ev, static_cast<ExprState *>(lfirst(lc)), &isnull);
        }
    return true;
}

// How many selections the stored row satisfies (UNION ALL counts each).
int matches(DeltaEvaluator &ev, bool is_new) {
    int n = 0;
    for (int i = 0; i < ev.nselections; i++) n += satisfies(ev, ev.selections[i], is_new);
    return n;
}

// The last row of a stored page, for its sort keys.
struct PageEnd {
    uint64 nrows;
    Datum *values;
    bool *nulls;
};

PageEnd page_end(DeltaEvaluator &ev, const char *payload, uint32_t len) {
    PageEnd end{0, static_cast<Datum *>(palloc(sizeof(Datum) * ev.nkeys)),
                static_cast<bool *>(palloc(sizeof(bool) * ev.nkeys))};
    ResultReader rd(payload, len);
    const char *row = nullptr, *data;
    uint32_t row_len = 0, n;
    while (rd.next_row(&data, &n)) {
        row = data;
        row_len = n;
        end.nrows++;
    }
    if (!row) return end;
    TupleDesc desc = stored_descriptor(rd);
    HeapTupleData tuple;
    tuple.t_len = row_len;
    tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(row));
    tuple.t_tableOid = InvalidOid;
    ItemPointerSetInvalid(&tuple.t_self);
    for (int i = 0; i < ev.nkeys; i++) end.values[i] = heap_getattr(&tuple, ev.columns[i], desc, &end.nulls[i]);
    return end;
}

// Whether the stored row sorts at or before the page's last row.
bool sorts_into_page(DeltaEvaluator &ev, const PageEnd &end) {
    for (int i = 0; i < ev.nkeys; i++) {
        bool isnull;
        Datum key = evaluate(ev, ev.keys[i], &isnull);
        int cmp = ApplySortComparator(key, isnull, end.values[i], end.nulls[i], &ev.sort[i]);
        if (cmp != 0) return cmp < 0;
    }
    return true;  // ties with the last row: it could take its place
}

// Applies the records (copies, newest first) to a stored result. seen: the
// snapshot the result was computed with, whose commits it already holds
// (settle), or nullptr (carry: the stamp says what it holds).
DeltaVerdict apply_records(DeltaEvaluator &ev, List *records, Snapshot seen, const char *payload, uint32_t len,
                      int64 *correction) {
    *correction = 0;
    PageEnd end{};
    if (ev.page) end = page_end(ev, payload, len);
    if (ev.kind == Kind::List && ev.page && ev.limit_value <= 0) return DeltaVerdict::Kept;  // LIMIT 0: always empty
    ListCell *lc;
    foreach (lc, records) {
        auto *r = static_cast<const DeltaRecord *>(lfirst(lc));
        TransactionId xid = r->xid;
        if (seen && TransactionIdIsValid(xid) && !XidInMVCCSnapshot(xid, seen)) continue;
        DeltaRowReader rows(*r);
        const char *row;
        uint32_t row_len;
        bool is_new;
        while (rows.next(&row, &row_len, &is_new)) {
            CHECK_FOR_INTERRUPTS();
            HeapTupleData tuple;
            store_row(ev, row, row_len, &tuple);
            int n = matches(ev, is_new);
            if (n == 0) continue;
            if (ev.kind == Kind::Count) {
                *correction += is_new ? n : -n;
                continue;
            }
            bool full_page = ev.page && end.nrows >= uint64(ev.limit_value);
            if (!full_page || sorts_into_page(ev, end)) return DeltaVerdict::Invalid;
        }
    }
    return DeltaVerdict::Kept;
}

}  // namespace

bool evaluate_records(const Shape &shape, Kind kind, ParamListInfo params, const KeptEvaluator &kept,
                      List *records, Snapshot seen, const char *payload, uint32_t len, DeltaVerdict *verdict,
                      int64 *correction) {
    DeltaEvaluator *ev = nullptr;
    ErrorData *error = error_of_subtransaction([&] {
        uint64_t nrows = 0;
        ListCell *lc;
        foreach (lc, records) {
            auto *r = static_cast<const DeltaRecord *>(lfirst(lc));
            nrows += r->nold + r->nnew;
        }
        ev = evaluator_for(shape, kind, params, kept, nrows);
        start_use(*ev, params);
        *verdict = apply_records(*ev, records, seen, payload, len, correction);
    });
    if (error) {
        if (ev) done_with(kept, ev, true);
        if (error_is_interrupt(error->sqlerrcode)) ReThrowError(error);
        return false;
    }
    done_with(kept, ev, false);
    return true;
}

// Records copied by one collect_records, at most.
constexpr uint32_t kMaxRecords = 4096;

bool collect_records(const DepStamp *deps, uint32_t ndeps, Oid relid, uint64 *current, List **records,
                     bool *busy) {
    Shared &sh = shared_state();
    auto **found = static_cast<const DeltaRecord **>(palloc(sizeof(DeltaRecord *) * kMaxRecords));
    // Copied under the lock without raising (an ERROR would take the flight
    // lock in a caller's cleanup while this one is held): a copy that
    // cannot be made, or more than kMaxRecords, means "cannot tell".
    auto **copies = static_cast<DeltaRecord **>(palloc(sizeof(DeltaRecord *) * kMaxRecords));
    uint32_t ncopies = 0;
    bool complete = true;
    LWLockAcquire(delta_lock(), LW_SHARED);
    for (int pass = 0; pass < 2 && complete; pass++) {
        for (uint32_t i = 0; i < ndeps && complete; i++) {
            if (guards(deps[i]) != (pass == 0)) continue;
            if (pass == 1 && sh.gens.commit_pending(deps[i].slot)) {
                if (busy) *busy = true;
                complete = false;
                break;
            }
            current[i] = sh.gens.read(deps[i].slot);
            if (current[i] == deps[i].generation || (deps[i].flags & kScopeStamp)) continue;
            uint32_t n = 0;
            if (current[i] < deps[i].generation ||
                sh.deltas.collect(deps[i].slot, deps[i].generation, current[i], found, kMaxRecords, &n) !=
                    Collected::Complete) {
                complete = false;
                break;
            }
            for (uint32_t j = 0; j < n && complete; j++) {
                const DeltaRecord *r = found[j];
                // Another table's rows on the same counter change nothing here.
                if (r->relid != relid || r->dbid != MyDatabaseId) continue;
                auto *copy = ncopies == kMaxRecords ? nullptr
                                                    : static_cast<DeltaRecord *>(palloc_extended(
                                                          r->length, MCXT_ALLOC_NO_OOM));
                if (!copy) {
                    complete = false;
                    break;
                }
                memcpy(copy, r, r->length);
                copies[ncopies++] = copy;
            }
        }
    }
    LWLockRelease(delta_lock());
    for (uint32_t i = 0; i < ncopies; i++) *records = lappend(*records, copies[i]);
    return complete;
}

}  // namespace pgmemo
