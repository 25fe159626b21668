// A computation's result: its rows received from the executor into a
// payload to store (or, past pg_memo.max_result_size, streamed into the
// caller's tuplestore), stored under its key, and handed back to a caller.
#pragma once

#include "compute/analysis.hpp"
#include "call.hpp"
#include "result_format.hpp"
#include "shared_state.hpp"

extern "C" {
#include "tcop/dest.h"
}

namespace pgmemo {

// A result ready to hand over: a payload in ResultReader format, or, for
// a list larger than pg_memo.max_result_size, its rows already in the
// caller's tuplestore (the call's RowSpill).
struct Result {
    char *payload;
    uint32_t len;
    bool spilled;
    uint64_t spilled_bytes;  // about what a spilled result would take stored
    bool present() const { return payload != nullptr || spilled; }
};

// Receives the executor's rows for call (a count's one row, or a list's
// rows); the payload lives in payload_context.
struct ResultReceiver;
ResultReceiver *new_receiver(const Call &call, MemoryContext payload_context);
DestReceiver *receiver_dest(ResultReceiver *rr);
Result received_result(ResultReceiver *rr);

// Puts the rows of a row result (a payload in ResultReader format) into the
// tuplestore the call returns (spill->store, begun on first use), converted
// to the caller's row type when their column types differ (42804 when they
// cannot be).
void put_rows_for_caller(const char *payload, uint32_t len, RowSpill *spill);

// Stores r under key with analysis's dependencies; counts a refusal.
bool store_result(Shared &sh, uint32_t stats_slot, const Encoded &key, const Analysis &a, const Result &r,
                  uint64_t *pinned);

// A flight leader's result computed as of a registered statement's
// snapshot that fell behind the present (not stored): pinned where only its
// waiters find it, for those whose snapshots see the same state
// (Store::insert_for_waiters). Nothing if it is too large or the snapshot
// has no print.
void hand_to_waiters(Shared &sh, uint32_t stats_slot, const Encoded &key, const Analysis &a, const Result &r,
                     uint64_t &pinned);

}  // namespace pgmemo
