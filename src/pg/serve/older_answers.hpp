// What a caller may opt into instead of an exact result, each bounded and
// off by default (docs/consistency.md, "Older answers (opting out of exactness)"):
//   - pg_memo.max_staleness: an older answer while one caller recomputes;
//   - pg_memo.stale_on_error: an older answer when the recomputation fails;
//   - pg_memo.error_ttl: the error of a failed computation, remembered
//     (compute/remembered_errors.hpp, which a flight's leader uses too).
// An "older answer" is a stored entry that is not current only because rows
// of its tables changed (no DDL, no name or privilege change), copied by
// the lookup with the earliest moment its first missed commit can have
// become visible (StaleInfo in src/core/store.hpp).
#pragma once

#include "call.hpp"
#include "copy_out_sink.hpp"
#include "compute/results.hpp"
#include "function_ref.hpp"

namespace pgmemo {

struct OlderAnswer {
    bool present;
    Result result;
    const char *meta;
    uint32_t meta_len;
    Micros stamped_at;         // when it was exact
    Micros invalidated_after;  // its first missed commit became visible after this
};

// Whether this call's lookup should copy older answers at all.
bool older_answers_wanted();

// The older answer a lookup copied into sink (status StaleKept or
// StaleCopied): rows moved and nothing else, a row or count result, and no
// table of it written by this transaction. Otherwise not present.
OlderAnswer older_answer(const CopyOutSink &sink, LookupStatus status);

// Whether it missed no commit older than bound_ms, now.
bool within_bound(const OlderAnswer &older, int bound_ms);

// Under max_staleness: whether it is old enough (nine tenths of the bound since it was
// exact) that a caller should recompute it, rather than all serving it.
bool refresh_due(const OlderAnswer &older);

// Serves it if the caller may read it (the privilege checks of a hit),
// counting counter; false if not.
bool serve_older(const OlderAnswer &older, uint32_t stats_slot, Counter counter, Result *out);

// Runs miss_path(); under stale_on_error, inside a subtransaction, and when
// it fails with an error of the query, a lock timeout or a statement
// timeout, serves older instead (WARNING) if it is still within the bound.
Result older_on_error(const OlderAnswer &older, uint32_t stats_slot, FnRef<Result()> miss_path);

}  // namespace pgmemo
