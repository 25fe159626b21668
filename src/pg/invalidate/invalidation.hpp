// The transaction's events: what it wrote (write_set.hpp) announced at
// pre-commit and bumped after its commit (docs/consistency.md, "Writers");
// the one place that receives the transaction, subtransaction and
// resource-release callbacks and calls the subsystems in a written order
// (invalidation.cpp).
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registers the transaction, subtransaction and resource-release
// callbacks; called from _PG_init.
void register_transaction_events();

}  // namespace pgmemo
