// STABLE built-in functions a cached query may call after all, and what to
// say about the rest.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Whether a STABLE function's result depends only on its arguments and on
// settings the key holds (TimeZone, DateStyle, IntervalStyle, lc_monetary):
// timestamptz + interval, date_trunc and extract on a timestamptz, the
// casts between dates and timestamps, the output functions of date/time
// types. Two sessions with one key get the same result from it, and no
// write changes it.
bool depends_only_on_keyed_settings(Oid funcid);

// The hint of the refusal of a query that calls funcid, not IMMUTABLE.
const char *mutable_function_hint(Oid funcid);

}  // namespace pgmemo
