// Commits that bumped counters, and the counters they bumped
// (commit_counts.hpp). Locking: none; relaxed atomics, read as a pair
// without a lock (a reader may see one commit's two halves apart).
#include "commit_counts.hpp"

#include <atomic>
#include <new>

namespace pgmemo {
namespace {

struct CommitCountsShared {
    std::atomic<uint64_t> commits;
    std::atomic<uint64_t> bumps;
};
CommitCountsShared *counts = nullptr;

}  // namespace

void count_commit_bumps(uint32_t nslots) {
    if (nslots == 0) return;
    counts->commits.fetch_add(1, std::memory_order_relaxed);
    counts->bumps.fetch_add(nslots, std::memory_order_relaxed);
}

CommitCounts commit_counts() {
    return CommitCounts{counts->commits.load(std::memory_order_relaxed), counts->bumps.load(std::memory_order_relaxed)};
}

size_t commit_counts_shared_size() { return sizeof(CommitCountsShared); }

void commit_counts_attach(char *mem, bool created) {
    counts = reinterpret_cast<CommitCountsShared *>(mem);
    if (created) new (mem) CommitCountsShared{{0}, {0}};
}

}  // namespace pgmemo
