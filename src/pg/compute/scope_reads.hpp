// The reader's side of scopes (docs/consistency.md, "Scopes"): which scope
// a statement's result depends on, and, per call, its counters in place of
// the table's Relation counter.
#pragma once

#include "pg_memo.hpp"
#include "compute/analysis.hpp"

extern "C" {
#include "nodes/params.h"
}

namespace pgmemo {

// Sets analysis->scopes for query (the analyzed statement, a count's
// wrapper), or leaves none: a table each of whose reads (at most
// Analysis::kMaxScopeRules) is in a selection whose WHERE pins a scope
// column (invalidate/scope_columns.hpp) to values of parameters or constants.
void find_scopes(Query *query, Analysis *analysis);

// For one call: the table's Relation stamp becomes the entry's carry
// position, and the stamps of its AnyScope counter and of the scopes of the
// call's values are added. Nothing changes when a value cannot be told (a
// null that every row must hold, an empty list, too many values).
void add_scope_stamps(Analysis *analysis, ParamListInfo params);

}  // namespace pgmemo
