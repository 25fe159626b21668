// The executions of observed statements (observed_executions.hpp).
#include "registered/observed_executions.hpp"

#include "registered/memo_scan.hpp"
#include "registered/registrations.hpp"
#include "hash.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#include <cstring>

extern "C" {
#include "portability/instr_time.h"
#include "catalog/namespace.h"
#include "utils/lsyscache.h"
#include "access/xact.h"
#include "tcop/pquery.h"
#include "utils/portal.h"
}

namespace pgmemo {
namespace {

// A plan is named by its statement's text (its slice of the source text)
// and the statement's place in it: PostgreSQL copies a plan it caches
// (prepared statements, the extended protocol), so its address names
// nothing, while the text the executor gets is the text it was planned
// from.
struct StatementName {
    uint64 hash;
    int location;
    int len;
};

StatementName name_of(const char *source, int location, int len) {
    // A location past the text (a plan's, kept for another text) names
    // the text's end, never memory past it.
    // (A bounded length, not the whole of a long batch's text.)
    size_t total = len > 0 ? strnlen(source, size_t(Max(location, 0)) + size_t(len)) : strlen(source);
    size_t from = location > 0 ? Min(size_t(location), total) : 0;
    size_t n = len > 0 ? Min(size_t(len), total - from) : total - from;
    return StatementName{hash_bytes(source + from, n), int(from), int(n)};
}

struct ObservedPlan {
    StatementName name;
    ShapeSlot slot;
};
constexpr int kObservedPlans = 256;
ObservedPlan observed_plans[kObservedPlans];

ObservedPlan &place_of(const StatementName &name) { return observed_plans[name.hash % kObservedPlans]; }

bool same_name(const StatementName &a, const StatementName &b) {
    return a.hash == b.hash && a.location == b.location && a.len == b.len;
}

// Whether this backend ever named a plan with a shape: until then no
// execution's text is hashed.
bool any_observed = false;

// A top-level SELECT's execution begun and not yet ended: few at once
// (open cursors). slot: its shape's, when its statement is observed;
// level: the transaction nesting level it began at (a subtransaction's
// abort forgets what began inside it); partial: a run fetched part of its
// rows (a cursor's FETCH), so that its time is not the statement's.
struct Running {
    QueryDesc *qd;
    ShapeSlot slot;
    double elapsed_ms;
    int level;
    bool partial;
};
constexpr int kRunning = 16;
Running running[kRunning];
int running_count = 0;

Running *running_of(QueryDesc *qd) {
    for (int i = 0; i < running_count; i++)
        if (running[i].qd == qd) return &running[i];
    return nullptr;
}

// The slot of qd's statement's shape, if the planner hook observes it.
ShapeSlot observed_slot(QueryDesc *qd) {
    const PlannedStmt *stmt = qd->plannedstmt;
    if (!any_observed || !qd->sourceText) return ShapeSlot{};
    StatementName name = name_of(qd->sourceText, stmt->stmt_location, stmt->stmt_len);
    ObservedPlan &o = place_of(name);
    return same_name(o.name, name) ? o.slot : ShapeSlot{};
}

// The execution qd begins: every SELECT a client's portal runs is timed
// (one that takes long marks its tables for observation), and counted for
// its shape when it is observed. Not: the statements functions, DO blocks,
// CALL and triggers run (not their portal's own), EXPLAIN ANALYZE (its
// portal runs EXPLAIN), a SELECT with a data-modifying WITH.
Running *begin_running(QueryDesc *qd) {
    const PlannedStmt *stmt = qd->plannedstmt;
    if (!stmt || stmt->commandType != CMD_SELECT || stmt->utilityStmt || stmt->hasModifyingCTE ||
        !ActivePortal || ActivePortal->queryDesc != qd || running_count == kRunning)
        return nullptr;
    running[running_count] = Running{qd, observed_slot(qd), 0, GetCurrentTransactionNestLevel(), false};
    return &running[running_count++];
}

// The tables of a SELECT that took at least pg_memo.admission_min_cost:
// statements over them are observed from now on. pg_memo's own tables
// (memo.statements, memo.blocked_shapes, read by its views) are not.
void note_slow_tables(const PlannedStmt *stmt) {
    Oid own_schema = InvalidOid;
    ListCell *lc;
    foreach (lc, stmt->rtable) {
        auto *rte = lfirst_node(RangeTblEntry, lc);
        if (!admission_table(rte) || relation_seen_slow(rte->relid)) continue;
        if (!OidIsValid(own_schema)) own_schema = get_namespace_oid(kExtensionSchema, true);
        if (get_rel_namespace(rte->relid) != own_schema) note_slow_relation(rte->relid);
    }
}

}  // namespace

ExecutorEnd_hook_type executor_end_before_memo = nullptr;

void observe_plan(const PlannedStmt *stmt, const char *source, ShapeSlot slot) {
    StatementName name = name_of(source, stmt->stmt_location, stmt->stmt_len);
    ObservedPlan &o = place_of(name);
    // No shape: only this text's own naming is forgotten, another's kept.
    if (slot.index == kNoShapeSlot && !same_name(o.name, name)) return;
    o = ObservedPlan{name, slot};
    if (slot.index != kNoShapeSlot) any_observed = true;
}

void time_executor_run(QueryDesc *qd, uint64 count, FnRef<void()> run) {
    Running *r = nullptr;
    if (guc_admission != kAdmissionOff) {
        r = running_of(qd);
        if (!r) r = begin_running(qd);
    }
    if (!r) {
        run();
        return;
    }
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    run();
    // (An ERROR skips this: the execution is forgotten at its
    // (sub)transaction's end.)
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    if (!(r = running_of(qd))) return;  // (the entries move as others end)
    r->elapsed_ms += INSTR_TIME_GET_MILLISEC(elapsed);
    // A run that stopped at the rows asked for (a cursor's FETCH, a
    // client's fetch size) may have left rows: its time is the client's
    // as much as the statement's.
    if (count != 0 && qd->estate && qd->estate->es_processed >= count) r->partial = true;
}

void end_executor(QueryDesc *qd) {
    // What the execution was is read before the executor frees it; what it
    // decides comes after PostgreSQL (and the hooks before pg_memo's) ended it.
    Running *r = running_of(qd);
    Running ended{};
    ShapeExecution e{};
    if (r) {
        ended = *r;
        *r = running[--running_count];
        Served served;
        e.served = memo_scan_outcome(qd->planstate, &served);
        e.computed = e.served && served != Served::Hit && served != Served::Older;
        e.elapsed_ms = ended.elapsed_ms;
        if (!ended.partial && !e.served && e.elapsed_ms >= guc_admission_min_cost_ms)
            note_slow_tables(qd->plannedstmt);
    }
    if (executor_end_before_memo)
        executor_end_before_memo(qd);
    else
        standard_ExecutorEnd(qd);
    if (r && !ended.partial && ended.slot.index != kNoShapeSlot && guc_admission != kAdmissionOff &&
        note_shape_execution(ended.slot, e))
        replan_after_admission_change();
}

void replan_after_admission_change() {
    // Every plan of a SELECT depends on memo.statements (plan_hook.cpp): a
    // relcache invalidation of it, sent at once and whatever this
    // transaction does (not at its commit), has every backend plan its
    // SELECTs again. The table as this backend last read the registrations:
    // no catalog access here.
    Oid table = statements_table_as_read();
    if (OidIsValid(table)) send_relcache_invalidation(table);
}

void forget_running_executions(int from_level) {
    int kept = 0;
    for (int i = 0; i < running_count; i++)
        if (running[i].level < from_level) running[kept++] = running[i];
    running_count = kept;
}

}  // namespace pgmemo
