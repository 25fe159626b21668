// Waiting for commits in progress (commit_wait.hpp).
#include "compute/commit_wait.hpp"

extern "C" {
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
}

#include "compat.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

namespace pgmemo {

// A commit in progress is about to become visible: it is flushing its WAL,
// or waiting for a synchronous standby. A result computed before it lands is
// stale at once, and every caller computes again. Waiting lets the
// generations read next, and the snapshot taken after them, include it.
void wait_for_commits_in_progress(const DepStamp *deps, uint32_t ndeps) {
    Generations &gens = shared_state().gens;
    if (guc_commit_wait_ms <= 0 || !gens.any_commit_pending(deps, ndeps)) return;
    const uint32 wait_event = compat_commit_wait_event();
    instr_time start;
    INSTR_TIME_SET_CURRENT(start);
    do {
        instr_time waited;
        INSTR_TIME_SET_CURRENT(waited);
        INSTR_TIME_SUBTRACT(waited, start);
        long remaining = guc_commit_wait_ms - long(INSTR_TIME_GET_MILLISEC(waited));
        if (remaining <= 0) return;
        // The committer signals no one (its bump must stay cheap): poll
        // every millisecond, interruptibly.
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Min(remaining, 1L),
                        wait_event);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    } while (gens.any_commit_pending(deps, ndeps));
}

}  // namespace pgmemo
