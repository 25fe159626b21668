// The one hub of utility statements: pg_memo's ProcessUtility_hook, which
// passes each statement to the subsystems in the order its source file's
// header writes down.
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "tcop/utility.h"
}

namespace pgmemo {

// ProcessUtility_hook (installed by _PG_init), and the hook it replaced,
// which runs the statement (PostgreSQL's own when none).
extern ProcessUtility_hook_type utility_before_memo;
void process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
                     ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *query_env,
                     DestReceiver *dest, QueryCompletion *qc);

}  // namespace pgmemo
