// Flights: concurrent misses on one key share one computation
// (docs/consistency.md, "Flights").
#pragma once

#include "call.hpp"
#include "compute/results.hpp"

namespace pgmemo {

// The miss path with singleflight: lead or join the key's flight.
Result memoize_in_flight(const Call &call, const Encoded &key, uint32_t stats_slot);

// Recomputes the key as the leader of a new flight, if no flight is running
// for it (true, *out the result); otherwise returns false at once, without
// waiting: the caller serves an older answer (pg_memo.max_staleness).
bool lead_refresh(const Call &call, const Encoded &key, uint32_t stats_slot, Result *out);

// Whether this backend may use a flight now (not while leading one).
bool flight_allowed(const Encoded &key);

// Releases whatever flight this backend still takes part in (abort, exit).
void flights_cleanup();

}  // namespace pgmemo
