// A registered statement's execution served as a memo.list call
// (registered/memo_scan_exec.cpp): the same hit, miss, flight, deltas and older
// answers, with the registration's options in place of the session's.
#pragma once

#include "call.hpp"

namespace pgmemo {

// A registration's relaxations (docs/reference.md, "Registered
// statements"): what the session's pg_memo.max_staleness, stale_on_error
// and error_ttl are for memo.list, in milliseconds, 0 for off. A session's
// SET does not reach them: a transaction pooler shares sessions.
struct StatementOptions {
    int max_staleness_ms;
    int stale_on_error_ms;
    int error_ttl_ms;
};

// How a call was answered, for EXPLAIN ANALYZE.
enum class Served : char {
    Hit,       // a current entry (or one carried forward by deltas)
    Older,     // an older answer within the registration's bound
    Computed,  // computed here or by the flight this call waited for
    Bypassed,  // computed and not stored (a transaction that may not use the cache, ...)
};

// The rows of the call's statement into call.spill's tuplestore.
Served serve_statement(const Call &call, const StatementOptions &options);

}  // namespace pgmemo
