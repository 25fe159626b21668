// What the monitoring views share: who sees what, and the check that a
// view's SQL definition has the columns its C function fills.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Whether the current user sees every database's cache names, query texts
// and parameters: superusers and members of pg_read_all_stats.
bool reads_all_stats();

// Whether the current user is the one a key is for: a member of its role
// whose settings have the values the key holds (its tenant, where the
// statement's policies read settings), or a superuser. It alone sees the
// rows.
bool owns_key(const char *key, uint32_t key_len, Oid userid);

// Raises 55000 unless the caller's result type has expected columns (a
// library newer than the extension's SQL).
void check_result_columns(FunctionCallInfo fcinfo, int expected);

}  // namespace pgmemo
