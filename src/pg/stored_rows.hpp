// A stored row result read as PostgreSQL reads rows: its descriptor. Used
// where rows are handed to a caller (compute/results.cpp) and where deltas
// compare a new row version with a stored page's last row
// (deltas/delta_evaluate.cpp).
#pragma once

#include "pg_memo.hpp"
#include "result_format.hpp"

namespace pgmemo {

// The column types of a stored row result, as a descriptor.
TupleDesc stored_descriptor(const ResultReader &rd);

}  // namespace pgmemo
