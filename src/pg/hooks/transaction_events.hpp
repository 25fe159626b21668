// The one hub of the transaction's events: the transaction, subtransaction
// and resource-release callbacks, which call each subsystem in the order
// written in transaction_events.cpp.
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "utils/resowner.h"
}

namespace pgmemo {

// The three callbacks, registered by _PG_init.
void on_transaction_event(XactEvent event, void *arg);
void on_subtransaction_event(SubXactEvent event, SubTransactionId subid, SubTransactionId parent, void *arg);
void on_resource_release(ResourceReleasePhase phase, bool is_commit, bool is_top_level, void *arg);

}  // namespace pgmemo
