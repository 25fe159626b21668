// Plans of registered statements kept by this backend, by their text: a
// statement planned at every execution (the simple protocol, a driver's
// unnamed statements, a pooler's clients) is parsed by PostgreSQL as
// always, but neither checked nor planned again while nothing it depends on
// may have changed. What a kept plan holds is the pg_memo node alone
// (its child, PostgreSQL's plan, is shown by EXPLAIN, which never uses a
// kept plan), the range table the executor checks privileges on and locks,
// and what the plan depends on.
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "nodes/plannodes.h"
}

namespace pgmemo {

// What a kept plan is for: the text the client sent (the statement's own
// slice), its query identifier, the planner's cursor options, and (read here) the role, the
// search path and the registrations' version. Valid until an invalidation
// arrives (any catalog change, sent or received) and never in a
// transaction that changed catalogs.
struct KeptPlanKey {
    const char *text;
    uint64 query_id;  // holds the client's parameter types
    int cursor_options;
};

// What a kept plan is valid for: no invalidation received, the same
// registrations and the same shapes admitted as when it was taken. Taken before the statement is
// checked and planned, which may receive invalidations themselves.
struct KeptPlanEpoch {
    uint64 invalidations;  // SharedInvalidMessageCounter
    uint64 registrations;  // registry_version()
    uint64 admissions;     // admission_version() (admission/shapes_table.hpp)
};
KeptPlanEpoch kept_plan_epoch();

// Whether a plan or a refusal is kept for key: a copy of the plan in the
// current memory context in *plan, or nullptr for a refusal.
bool find_kept_plan(const KeptPlanKey &key, PlannedStmt **plan);

// Keeps a copy of stmt (a plan whose top is the pg_memo node) for key,
// valid while epoch holds.
void keep_plan(const KeptPlanKey &key, const PlannedStmt *stmt, const KeptPlanEpoch &epoch);

// Keeps that pg_memo refused the statement (planned as without pg_memo):
// safe to keep, since a refusal serves nothing.
void keep_refusal(const KeptPlanKey &key, const KeptPlanEpoch &epoch);

}  // namespace pgmemo
