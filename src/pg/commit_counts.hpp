// Commits that bumped generation counters on this server, and how many
// counters they bumped (memo.info: writing_commits, counters_bumped): with
// memo.stats' invalidations and carries, how many entries a write makes
// stale. Counted where each kind of commit bumps: a primary's commit, a
// COMMIT PREPARED, a standby's replay. Atomics in shared memory, no lock.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// A commit bumped nslots counters.
void count_commit_bumps(uint32_t nslots);

struct CommitCounts {
    uint64_t commits;
    uint64_t bumps;
};
CommitCounts commit_counts();

// Its part of the shared region (module.cpp).
size_t commit_counts_shared_size();
void commit_counts_attach(char *mem, bool created);

}  // namespace pgmemo
