// The executions of observed statements (observed_executions.hpp).
#include "registered/observed_executions.hpp"

#include "registered/memo_scan.hpp"
#include "registered/registrations.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#include <cstring>

extern "C" {
#include "access/xlog.h"
#include "portability/instr_time.h"
#include "catalog/namespace.h"
#include "common/hashfn.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
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
    const char *text = source + (location > 0 ? location : 0);
    size_t n = len > 0 ? size_t(len) : strlen(text);
    return StatementName{hash_bytes_extended(reinterpret_cast<const unsigned char *>(text), int(n), 0), location,
                         int(n)};
}

struct ObservedPlan {
    StatementName name;
    ShapeSlot slot;
};
constexpr int kObservedPlans = 256;
ObservedPlan observed_plans[kObservedPlans];

ObservedPlan &place_of(const StatementName &name) { return observed_plans[name.hash % kObservedPlans]; }

// A top-level SELECT's execution begun and not yet ended: few at once
// (open cursors). slot: its shape's, when its statement is observed.
struct Running {
    QueryDesc *qd;
    ShapeSlot slot;
    double elapsed_ms;
};
constexpr int kRunning = 16;
Running running[kRunning];
int running_count = 0;

// How deep in ExecutorRun this backend is: only the outermost run is a
// client's statement (the statements of its functions run inside it).
int run_depth = 0;

Running *running_of(QueryDesc *qd) {
    for (int i = 0; i < running_count; i++)
        if (running[i].qd == qd) return &running[i];
    return nullptr;
}

// The slot of qd's statement's shape, if the planner hook observes it.
ShapeSlot observed_slot(QueryDesc *qd) {
    const PlannedStmt *stmt = qd->plannedstmt;
    if (!qd->sourceText) return ShapeSlot{};
    StatementName name = name_of(qd->sourceText, stmt->stmt_location, stmt->stmt_len);
    ObservedPlan &o = place_of(name);
    if (o.name.hash != name.hash || o.name.location != name.location || o.name.len != name.len) return ShapeSlot{};
    return o.slot;
}

// The execution qd begins: every top-level SELECT over a table is timed
// (one that takes long marks its tables for observation), and counted for
// its shape when it is observed.
Running *begin_running(QueryDesc *qd) {
    const PlannedStmt *stmt = qd->plannedstmt;
    if (!stmt || stmt->commandType != CMD_SELECT || stmt->utilityStmt || running_count == kRunning) return nullptr;
    running[running_count] = Running{qd, observed_slot(qd), 0};
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
    place_of(name) = ObservedPlan{name, slot};
}

void time_executor_run(QueryDesc *qd, FnRef<void()> run) {
    if (guc_admission == kAdmissionOff) {
        run();
        return;
    }
    Running *r = nullptr;
    if (run_depth == 0) {
        r = running_of(qd);
        if (!r) r = begin_running(qd);
    }
    instr_time start, elapsed;
    if (r) INSTR_TIME_SET_CURRENT(start);
    run_depth++;
    PG_TRY();
    { run(); }
    PG_FINALLY();
    { run_depth--; }
    PG_END_TRY();
    if (!r) return;
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    // (An ERROR skips this: the execution is forgotten at the
    // transaction's end.)
    if ((r = running_of(qd))) r->elapsed_ms += INSTR_TIME_GET_MILLISEC(elapsed);
}

void end_executor(QueryDesc *qd) {
    if (Running *r = running_of(qd)) {
        ShapeExecution e{};
        Served served;
        e.served = memo_scan_outcome(qd->planstate, &served);
        e.computed = e.served && served != Served::Hit && served != Served::Older;
        e.elapsed_ms = r->elapsed_ms;
        ShapeSlot slot = r->slot;
        *r = running[--running_count];
        if (!e.served && e.elapsed_ms >= guc_admission_min_cost_ms) note_slow_tables(qd->plannedstmt);
        if (slot.index != kNoShapeSlot && note_shape_execution(slot, e)) replan_after_admission_change();
    }
    if (executor_end_before_memo)
        executor_end_before_memo(qd);
    else
        standard_ExecutorEnd(qd);
}

void replan_after_admission_change() {
    // Every plan of a SELECT depends on memo.statements (plan_hook.cpp); a
    // standby sends no invalidations, and its kept plans follow the
    // admission version alone.
    Oid table = statements_table();
    if (OidIsValid(table) && !RecoveryInProgress()) CacheInvalidateRelcacheByRelid(table);
}

void forget_running_executions() { running_count = 0; }

}  // namespace pgmemo
