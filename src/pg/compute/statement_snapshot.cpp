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

}  // namespace pgmemo
