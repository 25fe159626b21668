// The one hub of the transaction's events: the transaction, subtransaction
// and resource-release callbacks, which call each subsystem in the order
// written in transaction_events.cpp.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registers the three callbacks; called from _PG_init.
void register_transaction_events();

}  // namespace pgmemo
