// This backend's copy of its database's registrations (memo.statements):
// read once, and again only after a change to the table, which its
// trigger announces as a relcache invalidation (so the planner hook reads
// no catalog per statement, and a hot standby sees a registration when it
// replays the commit that made it).
#pragma once

#include "pg_memo.hpp"
#include "serve/serve_statement.hpp"

namespace pgmemo {

struct Registration {
    uint64 query_id;
    const char *cache_name;  // in the registry's memory
    StatementOptions options;
    uint64 admitted_shape;   // automatic admission's: the shape admitted (0 for a registration)
};

// The registration of this query identifier, or nullptr. Reads
// memo.statements first if it changed since it was read.
const Registration *find_registration(uint64 query_id);

// The registration of this shape (of several, the one with the lowest
// query identifier), or nullptr: a statement sent another way (a literal
// for a parameter, a bigint parameter for an integer one).
const Registration *find_registration_by_shape(uint64 shape_id);

// Whether any registration has a shape (memo.statements has 1.3's column).
bool any_registration_shapes();

// Whether a DBA blocked this shape from automatic admission
// (memo.blocked_shapes, 1.3).
bool shape_blocked(uint64 shape_id);

// Whether a registration reads relid: the planner hook's cheap test before
// it computes a statement's query identifier.
bool registration_reads(Oid relid);

// memo.statements as this backend last read the registrations, without
// reading them again (no catalog access): InvalidOid before the first read.
Oid statements_table_as_read();

// Whether the database has automatic admission's objects (1.3's SQL:
// memo.admission, memo.blocked_shapes): a database still on 1.2's is not
// observed, since its DBA could neither see nor block what is admitted.
bool admission_installed();

// Whether this database has registrations at all.
bool any_registrations();

// memo.statements in this database, or InvalidOid where pg_memo is not
// installed. Every plan of a SELECT depends on it, so that a registration
// reaches statements already prepared (planner hook).
Oid statements_table();

// Moves whenever the registrations may have changed (a plan kept for a
// statement holds its registration's name and options as of a version).
uint64 registry_version();

// At every relcache invalidation (hooks/relcache_events.cpp): one of
// memo.statements (its statement trigger sends it) marks the copy out of
// date.
void registrations_out_of_date(Datum arg, Oid relid);

}  // namespace pgmemo
