// A statement's shape: what stays the same however a client sends it
// (docs/reference.md, "Statements matched by shape"). Two analyzed
// statements have the same shape when they differ only in
//   - a value: its value, and whether it is a literal or a parameter;
//   - the type a driver gave a value, within a family where the comparison
//     means the same: the integer types (smallint, integer, bigint), and
//     text and varchar (an unknown literal is resolved by the parser);
//   - casts between those types and relabelings (binary-compatible casts);
//   - which operator of a B-tree operator family compares them (int84eq
//     and int8eq are the integer family's =).
// Matching by shape decides only whether pg_memo serves a statement; what
// it serves is keyed by the statement's own text, parameter types and
// values, and checked as a miss would check it.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// The shape of an analyzed statement (a hash of its normalized tree, as
// PostgreSQL hashes a query identifier); query is not changed.
uint64 statement_shape(Query *query, const char *text);

}  // namespace pgmemo
