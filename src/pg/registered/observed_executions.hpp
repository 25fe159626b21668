// The executions automatic admission measures (admission/shapes_table.hpp):
// under pg_memo.admission, every top-level SELECT's execution is timed
// (ExecutorRun, each run of a cursor's fetches summed); one that took at
// least pg_memo.admission_min_cost unserved marks its tables, and the
// planner hook observes statements over marked tables only. The planner
// hook names each plan it made or kept for an observed shape; the
// executions of those plans are counted for their shape at ExecutorEnd,
// served (the plan's top is the pg_memo node, which says whether it
// computed) or not.
//
// Backend-local. A plan is named by its statement's text, in a
// direct-mapped table: a statement pushed out by another is no longer
// observed until it is planned again (at once under the simple protocol; a
// prepared statement's at its next planning). Only the run of the portal
// PostgreSQL is running is timed: statements a function runs are part of
// its caller's time; but a cursor a function loops over (an SPI portal,
// which PostgreSQL runs as the active one) is timed too, and a slow one
// marks its tables, though it is never counted for a shape.
#pragma once

#include "pg_memo.hpp"
#include "admission/shapes_table.hpp"
#include "compat.hpp"
#include "function_ref.hpp"

extern "C" {
#include "executor/execdesc.h"
#include "nodes/plannodes.h"
}

namespace pgmemo {

// The planner hook: the executions of stmt, planned from source, are
// those of slot's shape.
void observe_plan(const PlannedStmt *stmt, const char *source, ShapeSlot slot);

// The executor hooks (hooks/module.cpp installs them): ExecutorRun timed,
// ExecutorEnd counted, each calling the hook it replaced.
void time_executor_run(QueryDesc *qd, uint64 count, FnRef<void()> run);
using ExecutionTimer = CompatExecutorRunHook<time_executor_run>;
extern ExecutorEnd_hook_type executor_end_before_memo;
void end_executor(QueryDesc *qd);

// A decision changed whether a shape is served: plans kept for its
// statements are made again (every backend's, at once).
void replan_after_admission_change();

// At the end of every transaction (from_level 1) and subtransaction (its
// nesting level): the executions begun inside it and not ended (an ERROR)
// are forgotten.
void forget_running_executions(int from_level);

}  // namespace pgmemo
