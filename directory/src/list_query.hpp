// The list request: arguments checked once, and the two memoizable queries
// built from them. Shared by directory.build_list_query (which
// list_employees, the uncached truth, runs) and cached_list_employees, so
// the cached and the uncached path can never build different SQL.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/array.h"
}

namespace directory {

struct ListQuery {
    const char *count_sql;  // rows in scope and filters, plus a sentinel row for the scope root
    ArrayType *count_params;  // the scope, then the filter values
    const char *page_sql;   // one page; its last parameter is the total
    ArrayType *page_params;   // count_params, page_size, offset (the total is appended by the caller)
    Datum page_values[8];     // page_params' elements, for appending the total
    int npage_values;
};

// Reads the five list arguments from fcinfo (positions 0..4), raises 22023
// for anything invalid, and builds the queries. palloc'd in the current
// memory context.
void build_list_query(FunctionCallInfo fcinfo, ListQuery *out);

}  // namespace directory
