// The "pg_memo" custom scan: the node a registered statement's plan gets
// on top (plan_hook.cpp). At its first row it serves the statement as a
// memo.list call would (serve_statement), then returns the rows; the plan
// PostgreSQL made is its child, shown by EXPLAIN and never run: a
// computation plans the text again through SPI.
#pragma once

#include "planner/registry.hpp"

namespace pgmemo {

// A CustomScan returning what plan returns, with plan as its child. text is
// the statement's own text, which the key holds and a miss runs.
Plan *memo_scan_over(Plan *plan, const Registration &registration, const char *text);

// RegisterCustomScanMethods (from _PG_init).
void register_memo_scan();

}  // namespace pgmemo
