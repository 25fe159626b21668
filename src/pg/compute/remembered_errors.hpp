// Remembered errors (pg_memo.error_ttl; docs/consistency.md, "Older
// answers (opting out of exactness)"): a failed computation's error kept
// under the key's error key, invalidated like a result, and raised again to
// later callers of the key. Stored by the miss path (compute.cpp), raised
// by the memo functions and by a flight's leader (flights.cpp).
#pragma once

#include "call.hpp"
#include "compute/analysis.hpp"
#include "shared_state.hpp"

namespace pgmemo {

// Stores e under key's error key with a's generations: only an error the
// query itself raised (error_is_remembered), once the analysis is complete
// and its generations read.
void remember_error(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const ErrorData *e);

// Raises the error remembered for key again, counted in stats_slot, if
// one is stored, current, younger than the caller's error_ttl, and the
// caller passes the privilege checks of a hit; otherwise returns. One older than
// the caller's error_ttl is removed (memo.recompute_reasons: error_expired).
// A registered statement whose snapshot no longer sees the present gets
// none (compute/statement_snapshot.hpp).
void raise_if_remembered(const Call &call, const Encoded &key, uint32_t stats_slot);

}  // namespace pgmemo
