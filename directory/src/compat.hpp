// pg_memo_directory's calls whose form depends on the PostgreSQL version:
// its PG_VERSION_NUM guards, all in this file. (The directory is an
// extension of its own: it includes no header of pg_memo's.)
#pragma once

extern "C" {
#include "postgres.h"
#include "catalog/pg_proc.h"
#include "utils/acl.h"
}

namespace directory {

// EXECUTE on a function, as the executor checks it.
inline bool compat_function_execute_ok(Oid function, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, role, ACL_EXECUTE) == ACLCHECK_OK;
#else
    return pg_proc_aclcheck(function, role, ACL_EXECUTE) == ACLCHECK_OK;
#endif
}

}  // namespace directory
