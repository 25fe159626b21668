// This backend's plans of memo calls' statements: the text of a memo call
// parsed, analyzed and planned once, and reused by later misses of any key
// with the same text, settings and search path while no invalidation
// message has arrived since the analysis (docs/architecture.md, "The miss
// path"). Registered statements' plans are registered/statement_plans.hpp.
#pragma once

#include "compute/analysis.hpp"
#include "call.hpp"
#include "deltas/delta_evaluate.hpp"

extern "C" {
#include "executor/spi.h"
}

namespace pgmemo {

struct PreparedStatement {
    SPIPlanPtr plan;   // saved (SPI_keepplan); the plan cache revalidates it
    Oid *param_types;  // as the parser inferred them
    int nparams;
    Analysis analysis;        // dependency slots, privilege checks, uncacheable
    uint64 invalidations_at;  // SharedInvalidMessageCounter before the analysis
    MemoryContext context;    // lives as long as the statement
    // What deltas built to evaluate row versions against the query, in a
    // child context of context (deltas/delta_evaluate.hpp); nullptr until
    // then.
    mutable DeltaEvaluator *delta_evaluator;
};

// The statement kept for key, if no invalidation message arrived since its
// analysis (invalidations_now: SharedInvalidMessageCounter after receiving
// the pending ones), or nullptr. A statement found stays in place until the
// transaction ends: a nested memo call cannot free a plan in use.
PreparedStatement *find_statement(const Encoded &key, uint64 invalidations_now);

// The transaction ended (the transaction-event hub, transaction_events.cpp): no
// statement is in use any more, and any may be released.
void release_statements_in_use();

// The statement is not to be used again (its plan may hold a value that
// no invalidation message will replace): released once no longer in use.
void forget_statement(const PreparedStatement *statement);

// Keeps a statement just prepared and analyzed, inside the SPI connection
// that prepared plan (which it saves), in place of the least recently kept
// one not in use by this transaction. Keeps nothing when all are in use.
// Returns the statement kept, or nullptr.
PreparedStatement *keep_statement(const Encoded &key, SPIPlanPtr plan, const Oid *param_types, int nparams,
                                  const Analysis &analysis, uint64 invalidations_at);

}  // namespace pgmemo
