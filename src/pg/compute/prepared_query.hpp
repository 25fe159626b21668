// A call's statement, ready to run: parsed, analyzed and planned (or the
// one this backend kept for its text), with its parameters bound.
#pragma once

#include "compute/analysis.hpp"
#include "call.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace pgmemo {

// The query parsed, analyzed and with its parameters bound, inside an SPI
// connection (the caller ends it with SPI_finish).
struct PreparedStatement;
struct PreparedQuery {
    SPIPlanPtr plan;
    ParamListInfo params;
    const PreparedStatement *kept;  // the backend's kept statement, or nullptr
    Encoded statement_key;          // encode_statement's key of the call
};

// Connects to SPI and prepares the call's statement: the one this backend
// kept for its text if no catalog change arrived since its analysis
// (invalidations_seen), or a new one. Fills analysis (generations not read).
PreparedQuery prepare_query(const Call &call, Analysis *analysis, uint64 invalidations_seen, bool path_moved);

// The analyzed query of a prepared statement (for a count, the wrapper
// around the caller's text).
Query *prepared_query_tree(SPIPlanPtr plan);

}  // namespace pgmemo
