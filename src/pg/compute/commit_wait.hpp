// A miss that would be stale at once waits for the commits in progress on
// what it reads (docs/consistency.md, "The commit window").
#pragma once

#include "pg_memo.hpp"
#include "generations.hpp"

namespace pgmemo {

// Waits (interruptibly, at most pg_memo.commit_wait_timeout) while a commit
// is announced on any of deps' counters.
void wait_for_commits_in_progress(const DepStamp *deps, uint32_t ndeps);

}  // namespace pgmemo
