// Calls whose form depends on the PostgreSQL version, in one place, so that a
// port to another major version touches this file (PG_VERSION_NUM guards).
// Include after pg_memo.hpp (inside the glue, never from the core).
#pragma once

extern "C" {
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "utils/acl.h"
}

namespace pgmemo {

// USAGE on a schema, as the parser checks it for a qualified name.
inline bool compat_schema_usage_ok(Oid schema, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(NamespaceRelationId, schema, role, ACL_USAGE) == ACLCHECK_OK;
#else
    return pg_namespace_aclcheck(schema, role, ACL_USAGE) == ACLCHECK_OK;
#endif
}

// EXECUTE on a function, as the executor checks it.
inline bool compat_function_execute_ok(Oid function, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, role, ACL_EXECUTE) == ACLCHECK_OK;
#else
    return pg_proc_aclcheck(function, role, ACL_EXECUTE) == ACLCHECK_OK;
#endif
}

}  // namespace pgmemo
