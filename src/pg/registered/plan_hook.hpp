// The planner hook of registered statements: a top-level SELECT whose
// query identifier (or else shape) is registered, and which a miss would
// cache, gets the "pg_memo" node on top of the plan PostgreSQL makes for
// it (memo_scan.hpp). Anything else is planned exactly as without pg_memo.
#pragma once

#include "pg_memo.hpp"
#include "function_ref.hpp"

extern "C" {
#include "optimizer/planner.h"
#include "tcop/utility.h"
}

namespace pgmemo {

// planner_hook (installed by _PG_init), and the hook it replaced, which
// plans the statement.
extern planner_hook_type planner_before_memo;
PlannedStmt *plan_statement(Query *parse, const char *source, int cursor_options, ParamListInfo params);

// At every relcache invalidation (hooks/relcache_events.cpp): the shapes
// the planner hook keeps by query identifier are forgotten (a view
// replaced changes the shape of a statement over it, not its identifier).
void forget_known_shapes(Datum arg, Oid relid);

// From the utility hub (hooks/utility_events.cpp): runs a utility
// statement (run) with, for a top-level EXECUTE (or EXPLAIN EXECUTE), its
// prepared statement's source text as the text the planner hook sees
// planned.
void with_execute_source(Node *stmt, ProcessUtilityContext context, FnRef<void()> run);

}  // namespace pgmemo
