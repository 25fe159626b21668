// Keeping entries by deltas (docs/consistency.md, "Deltas").
//
// An entry qualifies when its query is a selection over one plain table
// watched with deltas (delta_relation). Its stamp on the table's counter
// carries kDeltaStamp once settle_with_deltas proved that the result is
// exactly the table's committed rows as of that stamp. From then on a
// reader that finds it stale walks the delta log from the stamp to the
// counter's current value (carry_forward): every value on the way must have
// a record, or nothing can be said. For each committed row version in them
// that satisfies a selection's WHERE:
//   - a count adds one for a new version and subtracts one for an old one
//     (old and new versions of an updated row cancel out when both match);
//   - a list ordered with LIMIT stays when it was a full page and the
//     version sorts after its last row by the query's own ordering;
//   - any other list is invalid.
// The WHERE and the sort keys are the analyzed query's own expressions,
// planned as expressions and evaluated over the stored rows with the call's
// parameters. An error while evaluating (a cast that fails on a new row)
// means "cannot tell": the entry is recomputed.
#include "deltas/delta_apply.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "parser/parsetree.h"
#include "storage/sinval.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
}

#include "compat.hpp"
#include "invalidate/write_set.hpp"
#include "compute/statement_cache.hpp"
#include "compute/commit_wait.hpp"
#include "deltas/delta_qualify.hpp"
#include "result_format.hpp"
#include "invalidate/watch.hpp"
#include "reason_log.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

namespace pgmemo {

namespace {

// ---- evaluating row versions ---------------------------------------------

// The query's expressions, ready to evaluate row versions. Two kinds:
//   - generic: the call's parameters are bound at each use (start_use).
//     Kept with the statement (statement_cache.hpp) for the next carry of
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

struct Evaluator {
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

Datum evaluate(Evaluator &ev, ExprState *state, bool *isnull) {
    return ExecEvalExprSwitchContext(state, ev.econtext, isnull);
}

// params: folded in (nullptr: generic).
Evaluator *build_evaluator(const Shape &s, Kind kind, ParamListInfo params, MemoryContext parent) {
    MemoryContext context = AllocSetContextCreate(parent, "pg_memo delta evaluator", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(context);
    auto *ev = static_cast<Evaluator *>(palloc0(sizeof(Evaluator)));
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
Evaluator *evaluator_for(const PreparedQuery &q, const Shape &s, Kind kind, uint64_t nrows) {
    if (nrows >= kFoldAtRows) return build_evaluator(s, kind, q.params, CurrentMemoryContext);
    if (q.kept && q.kept->delta_evaluator) return static_cast<Evaluator *>(q.kept->delta_evaluator);
    bool keep = q.kept != nullptr;  // built-in functions only (delta_relation): nothing to outlive
    Evaluator *ev = build_evaluator(s, kind, nullptr, keep ? q.kept->context : CurrentMemoryContext);
    if (keep) q.kept->delta_evaluator = ev;
    return ev;
}

// Done with ev: freed unless the statement keeps it (or, after an error,
// freed anyway: its state is not to be trusted).
void done_with(const PreparedQuery &q, Evaluator *ev, bool failed) {
    bool kept = q.kept && q.kept->delta_evaluator == ev;
    if (kept && !failed) return;
    if (kept) q.kept->delta_evaluator = nullptr;
    MemoryContextDelete(ev->context);
}

// Binds the call's parameters; reads the limit.
void start_use(Evaluator &ev, ParamListInfo params) {
    ev.econtext->ecxt_param_list_info = params;
    ev.page = false;
    if (!ev.limit) return;
    bool isnull;
    Datum limit = evaluate(ev, ev.limit, &isnull);
    ev.page = !isnull;  // LIMIT NULL: the whole ordered list
    ev.limit_value = isnull ? 0 : DatumGetInt64(limit);
}

void store_row(Evaluator &ev, const char *row, uint32_t len, HeapTupleData *tuple) {
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
bool satisfies(Evaluator &ev, const Selection &sel, bool is_new) {
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
int matches(Evaluator &ev, bool is_new) {
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

PageEnd page_end(Evaluator &ev, const char *payload, uint32_t len) {
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
bool sorts_into_page(Evaluator &ev, const PageEnd &end) {
    for (int i = 0; i < ev.nkeys; i++) {
        bool isnull;
        Datum key = evaluate(ev, ev.keys[i], &isnull);
        int cmp = ApplySortComparator(key, isnull, end.values[i], end.nulls[i], &ev.sort[i]);
        if (cmp != 0) return cmp < 0;
    }
    return true;  // ties with the last row: it could take its place
}

enum class Verdict { Kept, Invalid };

// Applies the records (copies, newest first) to a stored result. seen: the
// snapshot the result was computed with, whose commits it already holds
// (settle), or nullptr (carry: the stamp says what it holds).
Verdict apply_records(Evaluator &ev, List *records, Snapshot seen, const char *payload, uint32_t len,
                      int64 *correction) {
    *correction = 0;
    PageEnd end{};
    if (ev.page) end = page_end(ev, payload, len);
    if (ev.kind == Kind::List && ev.page && ev.limit_value <= 0) return Verdict::Kept;  // LIMIT 0: always empty
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
            if (!full_page || sorts_into_page(ev, end)) return Verdict::Invalid;
        }
    }
    return Verdict::Kept;
}

// Evaluates the records against q's query (apply_records) inside a
// subtransaction: an error of the expressions (a cast that fails on a new
// row) means "cannot tell". Cancels and shutdowns are raised again.
bool evaluate_records(const PreparedQuery &q, const Shape &shape, Kind kind, List *records,
                      Snapshot seen, const char *payload, uint32_t len, Verdict *verdict, int64 *correction) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    Evaluator *volatile ev = nullptr;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    bool ok = true;
    PG_TRY();
    {
        uint64_t nrows = 0;
        ListCell *lc;
        foreach (lc, records) {
            auto *r = static_cast<const DeltaRecord *>(lfirst(lc));
            nrows += r->nold + r->nnew;
        }
        ev = evaluator_for(q, shape, kind, nrows);
        start_use(*ev, q.params);
        *verdict = apply_records(*ev, records, seen, payload, len, correction);
        ReleaseCurrentSubTransaction();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(context);
        ErrorData *error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(context);
        CurrentResourceOwner = owner;
        if (ev) done_with(q, ev, true);
        if (error->sqlerrcode == ERRCODE_QUERY_CANCELED || error->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
            ReThrowError(error);
        ok = false;
    }
    PG_END_TRY();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
    if (ok) done_with(q, ev, false);
    return ok;
}

// ---- the log -------------------------------------------------------------

constexpr uint32_t kMaxRecords = 4096;
constexpr int kMaxCarryAnalyses = 3;
// Carries of one entry in one call, at most, while commits keep landing.
constexpr int kMaxCarries = 16;

// Copies, from the delta log, the records of relid on the counters of deps
// that moved since their stamps, and each counter's current value. False:
// some value has no record (a write that was not captured, DDL), or there
// are more than kMaxRecords, or *busy: a commit is in progress on a carry
// position. A scope's counter has no records: the writes that moved it have
// theirs on the carry position, read last and only once no commit is in
// progress on it, so that every scope bump read here is matched by its
// commit's record there, in whichever order the commit bumped them
// (docs/consistency.md, "Scopes").
bool collect_records(const DepStamp *deps, uint32_t ndeps, Oid relid, uint64 *current, List **records,
                     bool *busy = nullptr) {
    Shared &sh = shared_state();
    auto **found = static_cast<const DeltaRecord **>(palloc(sizeof(DeltaRecord *) * kMaxRecords));
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
            for (uint32_t j = 0; j < n; j++) {
                const DeltaRecord *r = found[j];
                // Another table's rows on the same counter change nothing here.
                if (r->relid != relid || r->dbid != MyDatabaseId) continue;
                auto *copy = static_cast<DeltaRecord *>(palloc(r->length));
                memcpy(copy, r, r->length);
                *records = lappend(*records, copy);
            }
        }
    }
    LWLockRelease(delta_lock());
    return complete;
}

uint32_t dep_index(const Analysis &a, uint32_t slot) {
    for (uint32_t i = 0; i < a.ndeps; i++)
        if (a.deps[i].slot == slot) return i;
    return a.ndeps;
}

Result count_result(int64 count, MemoryContext ctx) {
    Result r{static_cast<char *>(MemoryContextAlloc(ctx, sizeof(ResultHeader))), uint32_t(sizeof(ResultHeader))};
    ResultWriter w(r.payload, r.len);
    w.write_count(count);
    return r;
}

}  // namespace

void settle_with_deltas(Analysis *analysis, const PreparedQuery &q, const Encoded &key, Kind kind,
                        Snapshot snapshot, Result *result, MemoryContext result_ctx) {
    Shared &sh = shared_state();
    uint32_t slot = relation_slot(analysis->delta_relid);
    uint32_t at = dep_index(*analysis, slot);
    if (at == analysis->ndeps) return;
    DepStamp *dep = &analysis->deps[at];

    // A commit the snapshot saw but that had not bumped the counter when
    // the stamp was read is still announced now, or bumped by now: wait
    // for the announcement to end, then read both.
    DepStamp waited_on = *dep;
    waited_on.flags = 0;  // a scoped entry's carry position too
    wait_for_commits_in_progress(&waited_on, 1);
    LWLockAcquire(delta_lock(), LW_SHARED);
    bool pending = sh.gens.commit_pending(slot);
    uint64 current = sh.gens.read(slot);
    LWLockRelease(delta_lock());
    if (pending) return;  // cannot tell which commits the result holds
    if (current == dep->generation) {
        dep->flags |= kDeltaStamp;  // nothing committed since the stamp
        return;
    }

    // Commits bumped since the stamp: those the snapshot saw are in the
    // result already; the others are applied to it.
    List *records = NIL;
    uint64 now;
    if (!collect_records(dep, 1, analysis->delta_relid, &now, &records) || now != current) return;
    Shape s;
    if (!shape_of(prepared_query_tree(q.plan), kind, &s)) return;
    Verdict verdict;
    int64 correction;
    bool told = evaluate_records(q, s, kind, records, snapshot, result->payload, result->len, &verdict,
                                 &correction);
    if (!told || verdict == Verdict::Invalid) return;
    if (kind == Kind::Count && correction != 0) {
        ResultReader rd(result->payload, result->len);
        *result = count_result(rd.count() + correction, result_ctx);
    }
    dep->generation = current;
    dep->flags |= kDeltaStamp;
}

namespace {

// Retry: catalogs changed meanwhile; OtherPath: the search path is not the
// key's (compute, and do not store).
// CannotTell*: the entry must be computed again, a delta fallback, by what
// was missing (memo.recompute_reasons).
enum class CarryOutcome {
    Retry,
    OtherPath,
    Unmoved,
    Kept,
    Corrected,
    Invalid,
    CannotTellRecords,     // a write on the way left no record
    CannotTellQuery,       // the query means something else now
    CannotTellEvaluation,  // the records could not be evaluated over it
};

// The counters' current values for a carry, and the records between the
// entry's stamps and them.
struct CarryStamps {
    DepStamp *current;    // the entry's stamps, advanced to the current values
    List *records;
    bool complete;        // every value on the way has its record
    bool busy;            // a commit in progress on the carry position
    bool moved;           // some counter moved since the stamp
    TimestampTz carried_at;
};

CarryStamps read_carry_stamps(const CopyOutSink &stale, Oid relid) {
    Shared &sh = shared_state();
    CarryStamps c{};
    c.current = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * stale.ndeps));
    uint64 *values = static_cast<uint64 *>(palloc0(sizeof(uint64) * stale.ndeps));
    // The carried entry's stamp time: a commit it misses bumps after the
    // values below are read; it became visible after this moment unless
    // it was already announced, and then the entry keeps its old time.
    c.carried_at = GetCurrentTimestamp();
    if (sh.gens.any_commit_pending(stale.deps, stale.ndeps)) c.carried_at = stale.stamped_at;
    c.complete = collect_records(stale.deps, stale.ndeps, relid, values, &c.records, &c.busy);
    for (uint32_t i = 0; i < stale.ndeps; i++) {
        c.current[i] = stale.deps[i];
        c.current[i].generation = values[i];
        c.moved |= values[i] != stale.deps[i].generation;
    }
    return c;
}

// Waits (bounded) for the commits in progress on every stamp of the entry,
// its carry position too: a carry reads records only past a quiet one.
void wait_for_all_commits(const CopyOutSink &stale) {
    DepStamp *all = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * stale.ndeps));
    for (uint32_t i = 0; i < stale.ndeps; i++) {
        all[i] = stale.deps[i];
        all[i].flags &= ~kCarryPosition;
    }
    wait_for_commits_in_progress(all, stale.ndeps);
    pfree(all);
}

// Evaluates the records over the entry and stores what they make of it:
// the same payload with advanced stamps, or a corrected count.
CarryOutcome apply_carry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                         const PreparedQuery &q, const Shape &s, Analysis *a, const CarryStamps &c,
                         MemoryContext caller_ctx) {
    Shared &sh = shared_state();
    Verdict verdict;
    int64 correction = 0;
    if (!evaluate_records(q, s, call.kind, c.records, nullptr, stale.payload, stale.payload_len, &verdict,
                          &correction))
        return CarryOutcome::CannotTellEvaluation;
    if (verdict == Verdict::Invalid) return CarryOutcome::Invalid;
    if (correction == 0) {
        // Same payload: advance the stamps in place, or store anew if the
        // entry is pinned.
        if (!sh.store.revise_stamps(key.hash, key.key, key.key_len, stale.deps, stale.ndeps, c.current,
                                    c.carried_at)) {
            memcpy(a->deps, c.current, sizeof(DepStamp) * a->ndeps);
            a->stamped_at = c.carried_at;
            store_result(sh, stats_slot, key, *a, Result{stale.payload, stale.payload_len}, nullptr);
        }
        return CarryOutcome::Kept;
    }
    ResultReader rd(stale.payload, stale.payload_len);
    memcpy(a->deps, c.current, sizeof(DepStamp) * a->ndeps);
    a->stamped_at = c.carried_at;
    store_result(sh, stats_slot, key, *a, count_result(rd.count() + correction, caller_ctx), nullptr);
    return CarryOutcome::Corrected;
}

// One attempt: the statement analyzed again, the records read and applied.
CarryOutcome try_carry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                       MemoryContext caller_ctx) {
    AcceptInvalidationMessages();
    uint64 invalidations_seen = SharedInvalidMessageCounter;
    if (!same_search_path(call)) return CarryOutcome::OtherPath;
    Analysis a{};
    PreparedQuery q = prepare_query(call, &a, invalidations_seen, false);
    bool same_deps = a.ndeps == stale.ndeps;
    for (uint32_t i = 0; same_deps && i < a.ndeps; i++) same_deps = a.deps[i].slot == stale.deps[i].slot;
    Shape s;
    if (!OidIsValid(a.delta_relid) || a.uncacheable != Uncacheable::No || !same_deps ||
        !shape_of(prepared_query_tree(q.plan), call.kind, &s)) {
        SPI_finish();
        return CarryOutcome::CannotTellQuery;
    }
    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    CarryStamps c = read_carry_stamps(stale, a.delta_relid);
    AcceptInvalidationMessages();
    CarryOutcome outcome = CarryOutcome::Retry;
    if (c.busy)
        wait_for_all_commits(stale);  // then try again
    else if (!c.complete)
        outcome = CarryOutcome::CannotTellRecords;
    else if (!c.moved)
        outcome = CarryOutcome::Unmoved;  // the commit it waited for aborted
    else if (SharedInvalidMessageCounter == invalidations_seen)
        outcome = apply_carry(call, key, stats_slot, stale, q, s, &a, c, caller_ctx);
    MemoryContextSwitchTo(spi_ctx);
    SPI_finish();
    return outcome;
}

}  // namespace

// An entry kept by deltas that can never be carried: removed for good, so
// that the readers arriving now miss and share one computation instead of
// each trying to carry it. reason: what made it stale (an invalidation by
// writes or catalogs), or the delta fallback's reason.
void drop_kept_entry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                     Counter reason) {
    Shared &sh = shared_state();
    log_reason(call.cache_name, "entry kept by deltas computed again", reason);
    sh.store.revise_stamps(key.hash, key.key, key.key_len, stale.deps, stale.ndeps, nullptr);
    sh.stats.add(stats_slot, kInvalidations);
    sh.stats.add(stats_slot, reason);
    bool fallback = reason != kInvalidatedByWrites && reason != kInvalidatedByCatalogs;
    if (fallback) sh.stats.add(stats_slot, kDeltaFallbacks);
}

bool carry_forward(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale) {
    Shared &sh = shared_state();
    MemoryContext caller_ctx = CurrentMemoryContext;
    // A commit in progress on a dependency: wait for it (bounded, as a miss
    // would) and carry the entry past it, rather than recompute.
    wait_for_all_commits(stale);
    CarryOutcome outcome = CarryOutcome::Retry;
    // As on a miss (compute.cpp): the analysis must be no older than the
    // generations read, or the evaluation could be of another query. A
    // catalog change received after them means: analyze again.
    for (int analyses = 1; analyses <= kMaxCarryAnalyses && outcome == CarryOutcome::Retry; analyses++)
        outcome = try_carry(call, key, stats_slot, stale, caller_ctx);

    switch (outcome) {
        case CarryOutcome::Unmoved: return true;
        case CarryOutcome::Kept: sh.stats.add(stats_slot, kDeltaKept); return true;
        case CarryOutcome::Corrected: sh.stats.add(stats_slot, kDeltaCorrected); return true;
        case CarryOutcome::Retry: return false;  // catalogs kept changing: compute this time
        case CarryOutcome::OtherPath: return false;
        case CarryOutcome::Invalid: drop_kept_entry(call, key, stats_slot, stale, kInvalidatedByWrites); return false;
        case CarryOutcome::CannotTellRecords: drop_kept_entry(call, key, stats_slot, stale, kFallbackRecordsMissing); return false;
        case CarryOutcome::CannotTellQuery: drop_kept_entry(call, key, stats_slot, stale, kFallbackQueryChanged); return false;
        case CarryOutcome::CannotTellEvaluation:
            drop_kept_entry(call, key, stats_slot, stale, kFallbackNotEvaluable);
            return false;
    }
    return false;
}

LookupStatus carry_and_look_up(const Call &call, const Encoded &key, uint32_t stats_slot, CopyOutSink &sink,
                               uint64_t *pinned) {
    Shared &sh = shared_state();
    // DDL, a function or privilege change since: no record can carry it,
    // and the delta log is not to blame.
    if (!sink.stale.data_only) {
        drop_kept_entry(call, key, stats_slot, sink, kInvalidatedByCatalogs);
        return LookupStatus::Stale;
    }
    LookupStatus status = LookupStatus::StaleKept;
    for (int carries = 0; status == LookupStatus::StaleKept; carries++) {
        if (carries == kMaxCarries || !carry_forward(call, key, stats_slot, sink)) return LookupStatus::Stale;
        status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink, pinned);
    }
    return status;
}

}  // namespace pgmemo
