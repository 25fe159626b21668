// The text of the SELECT a top-level statement planned, cut from the
// source text the planner is given: the statement's own slice of a
// multi-statement string, past EXPLAIN, DECLARE ... CURSOR FOR or
// PREPARE ... AS when it is one of those.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// The slice of source that query was parsed from (palloc'd), and in
// *after_prefix whether an EXPLAIN, DECLARE or PREPARE prefix was cut
// (PostgreSQL gives the inner query no location of its own, so the cut is
// this file's reading of the text: the caller checks it parses back to the
// same statement).
char *statement_source(const char *source, const Query *query, bool *after_prefix);

// The query identifier the planner hook will see for a statement analyzed
// from text (not rewritten yet): PostgreSQL's, computed before rewriting,
// when something enabled it (compute_query_id, pg_stat_statements);
// otherwise pg_memo's jumble of the rewritten query the planner gets (a
// view expanded), which is what the hook computes then.
uint64 planned_query_id(Query *analyzed, const char *text);

// The shape the planner hook will see for a statement analyzed from text:
// that of the rewritten query the planner gets (a view expanded).
uint64 planned_shape(Query *analyzed, const char *text);

}  // namespace pgmemo
