// The "pg_memo" custom scan: the node a registered statement's plan gets
// on top (plan_hook.cpp). At its first row it serves the statement as a
// memo.list call would (serve_statement), then returns the rows; the plan
// PostgreSQL made is its child, shown by EXPLAIN and never run: a
// computation plans the text again through SPI.
//
// memo_scan_plan.cpp builds the node, memo_scan_exec.cpp runs it; this
// header is what they share: the private list's shape and the state's
// constructor.
#pragma once

#include "registered/registrations.hpp"

extern "C" {
#include "nodes/extensible.h"
}

namespace pgmemo {

// A CustomScan returning what plan returns, with plan as its child. text is
// the statement's own text, which the key holds and a miss runs.
Plan *memo_scan_over(Plan *plan, const Registration &registration, const char *text);

// The node's custom_private, member by member in this order: the plan side
// builds it by these names, the executor checks its length and each
// member's node type before it reads one.
enum MemoScanPrivate {
    kMemoScanText,          // String: the statement's own text
    kMemoScanCacheName,     // String: the registration's cache name
    kMemoScanMaxStaleness,  // Integer: StatementOptions::max_staleness_ms
    kMemoScanStaleOnError,  // Integer: StatementOptions::stale_on_error_ms
    kMemoScanErrorTtl,      // Integer: StatementOptions::error_ttl_ms
    kMemoScanAdmittedShape, // String: the shape automatic admission admitted, in decimal ("" for a registration)
    kMemoScanPrivateCount
};

// The node's plan methods, named "pg_memo": _PG_init registers them, so
// that a plan copied or read back finds them by name.
extern const CustomScanMethods memo_scan_methods;

// The node's execution state, made from its plan (memo_scan_exec.cpp; the
// plan methods' CreateCustomScanState). Raises an ERROR if custom_private
// is not of MemoScanPrivate's shape.
Node *create_memo_scan_state(CustomScan *plan);

// Whether state is a pg_memo node that served its statement, and how
// (observed_executions.cpp counts a served execution apart).
bool memo_scan_outcome(PlanState *state, Served *served);

}  // namespace pgmemo
