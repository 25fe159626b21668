// The miss path: a call computed from the tables, and stored when allowed.
#pragma once

#include "analysis.hpp"
#include "call.hpp"
#include "result_format.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace pgmemo {

// A result ready to hand over: a payload in ResultReader format, or, for
// a list larger than pg_memo.max_result_size, its rows already in the
// caller's tuplestore (the call's RowSpill).
struct Result {
    char *payload;
    uint32_t len;
    bool spilled;
    bool present() const { return payload != nullptr || spilled; }
};

// Computes the call uncached, counts it, and stores the result unless
// bypass is set or the result may not be cached. With pinned, a stored
// entry stays pinned for a flight's waiters (*pinned = 0 when not stored).
// Without wait_for_commits it does not wait for commits in progress (the
// call has already waited for them, through the flights it joined).
// The order that makes the stored entry correct is stated and kept in
// compute.cpp.
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

// Waits (interruptibly, at most pg_memo.commit_wait_timeout) while a commit
// is announced on any of deps' counters.
void wait_for_commits_in_progress(const DepStamp *deps, uint32_t ndeps);

// The analyzed query of a prepared statement (for a count, the wrapper
// around the caller's text).
Query *prepared_query_tree(SPIPlanPtr plan);

// The column types of a stored row result, as a descriptor.
TupleDesc stored_descriptor(const ResultReader &rd);

// Puts the rows of a row result (a payload in ResultReader format) into the
// tuplestore the call returns (spill->store, begun on first use), converted
// to the caller's row type when their column types differ (42804 when they
// cannot be).
void put_rows_for_caller(const char *payload, uint32_t len, RowSpill *spill);

// Errors of the query itself, which every caller of the key would get
// too: shared with a flight's waiters. Not those of the caller's situation
// (cancels, timeouts, shortages, serialization): its waiters take over.
bool error_belongs_to_query(int sqlerrcode);

// Those of them stored under the key for pg_memo.error_ttl.
bool error_is_remembered(int sqlerrcode);

// Stores r under key with analysis's dependencies; counts a refusal.
bool store_result(Shared &sh, uint32_t stats_slot, const Encoded &key, const Analysis &a, const Result &r,
                  uint64_t *pinned);

Result compute_and_store(const Call &call, const Encoded &key, uint32_t stats_slot, bool bypass,
                         uint64_t *pinned, bool wait_for_commits = true);

}  // namespace pgmemo
