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
    text *count_sql;          // rows in scope and filters, plus a sentinel row for the scope root
    ArrayType *count_params;  // the scope, then the filter values
    text *page_sql;           // one page; its last parameter is the total
    text *cached_page_sql;    // the same without the total (0 in its place): a page's
                              // key must not change when only the total does
    Datum page_values[8];     // the page's parameters but the total: count_params' elements,
    int npage_values;         // page_size and offset (page_sql's caller appends the total)
};

// Reads the five list arguments from fcinfo (positions 0..4), raises 22023
// for anything invalid, and builds the queries. The parameters are palloc'd
// in the current memory context; the SQL texts are built once per backend
// and shared: read them, never change or free them.
void build_list_query(FunctionCallInfo fcinfo, ListQuery *out);

// A text[] of n text Datums, and an integer as a text Datum (parameters).
ArrayType *text_array(const Datum *values, int n);
Datum int64_text(int64 value);

}  // namespace directory
