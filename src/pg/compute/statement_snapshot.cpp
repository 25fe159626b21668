// A registered statement's snapshot against the present (statement_snapshot.hpp).
//
// Two snapshots see the same rows when they have the same xmax and the
// same transactions in progress below it. A transaction that started
// later has an xid at or above the older snapshot's xmax, so while xmax
// has not moved the in-progress set can only shrink: equal xmax and equal
// counts make equal sets, and no transaction that the older snapshot
// treats as running has ended. A snapshot's own commit-count stamp
// (snapXactCompletionCount) would say the same more cheaply, but
// PostgreSQL clears it in the copies that portals keep.
#include "compute/statement_snapshot.hpp"

extern "C" {
#include "utils/snapmgr.h"
}

namespace pgmemo {

bool sees_what_now_sees(Snapshot then) {
    Snapshot now = GetLatestSnapshot();
    if (then->takenDuringRecovery != now->takenDuringRecovery || then->xmax != now->xmax ||
        then->xmin != now->xmin || then->xcnt != now->xcnt || then->suboverflowed != now->suboverflowed)
        return false;
    // Subtransactions count only where they are the list (a standby's
    // snapshot keeps every xid there) or complete (not overflowed).
    if (now->suboverflowed) return !now->takenDuringRecovery;
    return then->subxcnt == now->subxcnt;
}

}  // namespace pgmemo
