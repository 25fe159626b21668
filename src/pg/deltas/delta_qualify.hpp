// Which entries deltas may keep (docs/consistency.md, "Which entries
// qualify"): a selection over one plain table watched with deltas, whose
// expressions call only built-in functions.
#pragma once

#include "pg_memo.hpp"
#include "call.hpp"

namespace pgmemo {

// What deltas are checked against: the selections' WHEREs (one per UNION ALL
// branch; a NULL element for a selection without one) and, for a list
// ordered with LIMIT, the query that orders it.
struct Shape {
    Oid relid = InvalidOid;
    List *quals = NIL;    // each selection's WHERE (Node *, or nullptr)
    List *targets = NIL;  // each selection's target list
    Query *page = nullptr;
};

// The shape of an analyzed query (a count: compute.cpp's wrapper around
// it), or false when deltas cannot carry it.
bool shape_of(Query *query, Kind kind, Shape *s);

// The table whose deltas can keep an entry of this query, or InvalidOid:
// a selection over one plain table watched with deltas (a WHERE of
// immutable expressions and parameters, any projection; for a list, ORDER
// BY ... LIMIT ... OFFSET; for a count, also UNION ALL of such selections
// of the same table). query is the analyzed statement (a count's wrapper).
Oid delta_relation(Query *query, Kind kind);

}  // namespace pgmemo
