// The relaxations (max_staleness, stale_on_error, error_ttl) given as
// intervals: a registration's columns, a memo call's named arguments.
#pragma once

#include "pg_memo.hpp"
#include "serve/serve_statement.hpp"

namespace pgmemo {

// The interval in the milliseconds its setting takes: capped at the
// setting's maximum, and 0 (off) for a negative one, which
// check_option_not_negative refuses where it is given.
int interval_option_ms(Datum interval);

// Raises 22023 if the interval (name is its argument's) is negative.
void check_option_not_negative(Datum interval, const char *name);

// A memo call's options, its arguments from first on (max_staleness,
// stale_on_error, error_ttl; 1.2's named arguments): a NULL one is the
// session's setting. Raises 22023 for a negative one.
StatementOptions call_options(FunctionCallInfo fcinfo, int first);

}  // namespace pgmemo
