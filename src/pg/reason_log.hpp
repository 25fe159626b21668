// pg_memo.log_reasons: why a call computes instead of hitting, logged at
// the chosen level (off by default). The same reasons memo.stats counts.
#pragma once

#include "pg_memo.hpp"
#include "stats.hpp"

namespace pgmemo {

// Logs that a call of cache_name (what it found) is computed for reason
// (a recompute or bypass reason counter), when pg_memo.log_reasons is on.
void log_reason(const text *cache_name, const char *what, Counter reason);
void log_reason(const char *cache_name, int name_len, const char *what, Counter reason);

}  // namespace pgmemo
