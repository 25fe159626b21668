// The transaction's events: what it wrote (write_set.hpp) announced at
// pre-commit and bumped after its commit (docs/consistency.md, "Writers").
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registers the transaction and resource-release callbacks; called from
// _PG_init.
void register_invalidation_callbacks();

}  // namespace pgmemo
