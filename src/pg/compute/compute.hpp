// The miss path: a call computed from the tables, and stored when allowed.
#pragma once

#include "call.hpp"
#include "compute/results.hpp"

namespace pgmemo {

// Analyzes the call's statement (kept for the computation that may follow,
// as prepare_query keeps it) to learn which settings it reads
// (keyed_settings.hpp); true if it reads some. Raises what the
// computation would raise of the analysis (counted in stats_slot's
// failures, as the computation's would be).
bool learn_statement_settings(const Call &call, uint32_t stats_slot);

// Whether the last compute_and_store's key did not hold the settings its
// statement reads (keyed_settings.hpp): its result and its error are this
// caller's alone, not those of others with the same key.
bool computed_with_unkeyed_settings();

// Computes the call uncached, counts it, and stores the result unless
// bypass_reason is a bypass counter (kCounterCount: none; counted with
// kBypasses once the computation succeeded) or the result may not be
// cached. With pinned, a stored
// entry stays pinned for a flight's waiters (*pinned = 0 when not stored).
// Without wait_for_commits it does not wait for commits in progress (the
// call has already waited for them, through the flights it joined).
// waited_on (a flight's leader): whether others wait for this result now;
// one that could not be stored because the statement's snapshot fell
// behind is then handed to them (results.hpp, hand_to_waiters).
// The order that makes the stored entry correct is stated and kept in
// compute.cpp.
Result compute_and_store(const Call &call, const Encoded &key, uint32_t stats_slot, Counter bypass_reason,
                         uint64_t *pinned, bool wait_for_commits = true, bool (*waited_on)() = nullptr);

}  // namespace pgmemo
