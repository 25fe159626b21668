// The privilege checks a hit repeats: the executor's relation checks and
// the object privileges the parser and executor check as the current user
// (docs/consistency.md, "Security").
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/acl.h"
}

namespace pgmemo {

// Object privileges a hit re-checks besides the executor's relation checks:
// those the parser and executor check as the current user, where PUBLIC
// does not hold them (a change to PUBLIC's grants bumps the routines counter
// at commit, so an entry never relies on a grant that is gone).
enum class PrivilegeKind : uint32_t { SchemaUsage = 1, FunctionExecute = 2 };
struct PrivilegeItem {
    PrivilegeKind kind;
    Oid oid;
};

// Whether an object's ACL grants mode to PUBLIC. A NULL ACL is the kind's
// default: functions grant EXECUTE to PUBLIC, schemas grant nothing.
bool public_holds(Datum acl_datum, bool acl_is_null, bool default_holds, AclMode mode);

// The checks to store with an entry (palloc'd): the executor's relation
// checks (RelationPermission, compat.hpp), then the object privileges.
char *encode_privilege_checks(List *permissions, List *privileges, uint32_t *len);

// Re-runs the stored checks as the current user, and checks that row level
// security applies to each relation where it applied when the result was
// computed, and only there (the key holds what its policies read). False if any fails (the caller then
// computes, which raises PostgreSQL's own error or pg_memo's refusal).
bool privileges_still_hold(const char *meta, uint32_t meta_len);

// The relations the stored checks name, in order, at most max of them,
// into relids; returns how many there are in all (memo.entries). -1 if the
// bytes are not checks.
int checked_relations(const char *meta, uint32_t meta_len, Oid *relids, int max);

}  // namespace pgmemo
