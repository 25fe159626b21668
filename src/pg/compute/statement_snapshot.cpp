// A registered statement's snapshot against the present (statement_snapshot.hpp).
//
// Two snapshots see the same rows when they have the same xmax and the
// same transactions in progress below it. A transaction that started
// later has an xid at or above the older snapshot's xmax, so while xmax
// has not moved no xid joins the in-progress list: equal lists mean no
// transaction that the older snapshot treats as running has ended. The
// lists are compared element by element, not by their lengths: while a
// transaction prepares, its xid is listed twice (its backend and its
// prepared transaction's entry) and could stand in for one that ended.
// The order is the process array's on a primary (which keeps the order of
// the backends it holds) and sorted on a standby, so a list that did not
// change compares equal; one that only moved compares unequal, which only
// costs a computation. A snapshot's own commit-count stamp
// (snapXactCompletionCount) would say the same more cheaply, but
// PostgreSQL clears it in the copies that portals keep.
#include "compute/statement_snapshot.hpp"

#include <cstring>

extern "C" {
#include "access/transam.h"
#include "access/xact.h"
#include "utils/snapmgr.h"
}

namespace pgmemo {

bool sees_what_now_sees(Snapshot then) {
    Snapshot now = GetLatestSnapshot();
    if (then->takenDuringRecovery != now->takenDuringRecovery || then->xmax != now->xmax ||
        then->xmin != now->xmin || then->xcnt != now->xcnt || then->suboverflowed != now->suboverflowed)
        return false;
    if (then->xcnt > 0 && memcmp(then->xip, now->xip, sizeof(TransactionId) * then->xcnt) != 0) return false;
    // Subtransactions count only where they are the list (a standby's
    // snapshot keeps every xid there) or complete (not overflowed; a
    // portal's copy keeps them then).
    if (now->suboverflowed) return !now->takenDuringRecovery;
    return then->subxcnt == now->subxcnt &&
           (then->subxcnt == 0 || memcmp(then->subxip, now->subxip, sizeof(TransactionId) * then->subxcnt) == 0);
}

// With no transaction in progress below its xmax, a snapshot sees every
// transaction below xmax as ended and none at or above it: xmax alone
// names what it sees, and two such snapshots with the same xmax see the
// same rows. Made 64 bits wide with the epoch, so that an entry that
// outlives 2^32 transactions cannot match a later snapshot. A snapshot
// with transactions in progress (their order in the list is the process
// array's), or a standby's, gets none; nor does one of a transaction with
// an xid, which its own list leaves out.
uint64_t snapshot_print(Snapshot snapshot) {
    if (snapshot->snapshot_type != SNAPSHOT_MVCC || snapshot->takenDuringRecovery || snapshot->xcnt != 0 ||
        snapshot->subxcnt != 0 || snapshot->suboverflowed || !TransactionIdIsNormal(snapshot->xmax) ||
        TransactionIdIsValid(GetTopTransactionIdIfAny()))
        return 0;
    FullTransactionId next = ReadNextFullTransactionId();
    uint64_t epoch = EpochFromFullTransactionId(next);
    // xmax is never past the next xid; numerically above it, it is from
    // before the last wraparound.
    if (snapshot->xmax > XidFromFullTransactionId(next)) epoch--;
    return (epoch << 32) | snapshot->xmax;
}

bool entry_answers_call(const Call &call, LookupStatus status, const CopyOutSink &sink) {
    if (status != LookupStatus::Hit && status != LookupStatus::AsOfSnapshot) return false;
    if (answers_as_of_now(call)) return status == LookupStatus::Hit;
    uint64_t print = sink.as_of_print ? sink.as_of_print : as_of_print(call);
    return print != 0 && sink.snapshot_print == print;
}

}  // namespace pgmemo
