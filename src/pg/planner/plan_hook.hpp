// The planner hook of transparent serving: a top-level SELECT whose query
// identifier is registered, and which a miss would cache, gets the
// "pg_memo" node on top of the plan PostgreSQL makes for it
// (memo_scan.hpp). Anything else is planned exactly as without pg_memo.
#pragma once

namespace pgmemo {

// Installs planner_hook and the ProcessUtility_hook that notes a top-level
// EXECUTE (from _PG_init).
void register_plan_hooks();

}  // namespace pgmemo
