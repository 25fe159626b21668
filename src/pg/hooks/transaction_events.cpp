// The one hub of the transaction's events (as Citus keeps one): pg_memo
// registers one transaction callback, one subtransaction callback and one
// resource-release callback, all in this file, and each calls the
// subsystems in this order (the commit protocol's steps are
// invalidation.hpp's; docs/consistency.md, "Writers", argues the order):
//   PRE_COMMIT    catalog changes marked (catalog_changes.hpp), an apply
//                 worker's tables marked, the scopes of uncaptured writes
//                 marked and delta records reserved (delta_capture.hpp),
//                 the commit announced (WAL: BEGIN)
//   PRE_PREPARE   catalog changes marked, the scopes of uncaptured writes
//                 marked, the marks saved in the prepared
//                 transaction's state file (two_phase.hpp); an apply
//                 worker's PREPARED record
//   COMMIT        the bump is due (below); the PREPARE's gid forgotten;
//                 statements released (compute/call_plans.hpp); executions
//                 not ended forgotten (registered/observed_executions.hpp)
//   resource release, lock phase, top level, after a COMMIT: the bump
//                 (with the delta records), the announcement withdrawn,
//                 dropped tables' entries freed, the transaction forgotten
//   PREPARE       the gid forgotten, the transaction forgotten, statements
//                 released, executions not ended forgotten
//   ABORT         the announcement withdrawn, the state file of a failed
//                 PREPARE removed, the transaction forgotten, flights left
//                 (flights.hpp), statements released, executions not
//                 ended forgotten
//   ABORT_SUB     schema lookups stopped (catalog_changes.hpp), the rows
//                 captured inside the subtransaction dropped
//                 (delta_capture.hpp), executions not ended forgotten
#include "hooks/transaction_events.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
}

#include "compute/flights.hpp"
#include "compute/call_plans.hpp"
#include "invalidate/delta_capture.hpp"
#include "durability/two_phase.hpp"
#include "invalidate/catalog_changes.hpp"
#include "invalidate/invalidation.hpp"
#include "invalidate/write_set.hpp"
#include "registered/observed_executions.hpp"

namespace pgmemo {

void on_transaction_event(XactEvent event, void *) {
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
            commit_starts();
            purge_dropped_relations_after_commit(mark_catalog_changes());
            mark_subscription_relations();
            // The records are filled before the commit is announced: the
            // commit then only bumps and links them.
            mark_scopes_of_uncaptured_writes(coarse_writes());
            reserve_delta_records(coarse_writes());
            announce_commit();
            break;
        case XACT_EVENT_PRE_PREPARE:
            // Never refused: the marks wait in a state file for COMMIT
            // PREPARED, which announces and bumps them (two_phase.hpp).
            // Until then the prepared writes are invisible to others, and
            // entries stay valid. Captured rows are not kept: the bump
            // will be a plain one.
            mark_catalog_changes();
            mark_scopes_of_uncaptured_writes(coarse_writes());
            save_prepared_marks(GetTopTransactionIdIfAny(), own_writes().slots, own_writes().count);
            // An apply worker's (a two-phase subscription): no file, but a
            // record (wal_records.hpp).
            log_apply_worker_prepare();
            break;
        case XACT_EVENT_COMMIT:
            // Visible to new snapshots now; its invalidations go out next.
            commit_is_visible();
            forget_prepare_gid(true);  // a PREPARE outside a transaction block
            release_statements_in_use();
            forget_running_executions(1);
            break;
        case XACT_EVENT_PARALLEL_COMMIT:
            release_statements_in_use();
            break;
        case XACT_EVENT_PREPARE:
            forget_prepare_gid(true);
            forget_transaction();
            release_statements_in_use();
            forget_running_executions(1);
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            abandon_commit();
            forget_prepare_gid(false);
            forget_transaction();
            flights_cleanup();  // normally done already by the flight's own PG_CATCH
            release_statements_in_use();
            forget_running_executions(1);
            break;
        default: break;
    }
}

// A subtransaction's abort: what was captured or looked up inside it is gone.
void on_subtransaction_event(SubXactEvent event, SubTransactionId subid, SubTransactionId, void *) {
    if (event != SUBXACT_EVENT_ABORT_SUB) return;
    catalog_changes_subtransaction_aborted();
    forget_rows_captured_in(subid);
    forget_running_executions(GetCurrentTransactionNestLevel());
}

// The lock phase of a top-level commit's resource release comes after
// AtEOXact_Inval has sent the commit's invalidations: publish it there.
void on_resource_release(ResourceReleasePhase phase, bool is_commit, bool is_top_level, void *) {
    if (phase != RESOURCE_RELEASE_LOCKS || !is_commit || !is_top_level) return;
    publish_visible_commit();
}

}  // namespace pgmemo
