// A writing transaction's commit protocol (docs/consistency.md, "Writers"):
// what it wrote (write_set.hpp) announced at pre-commit, bumped after its
// commit is visible and its invalidations are sent, forgotten at its end.
// Each step is called by the transaction-event hub (transaction_events.hpp),
// in the order written there.
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Pre-commit (or pre-prepare), before the commit can be visible: the
// earliest moment its changes can have become visible, carried by the bumps.
void commit_starts();
// Whether the transaction dropped relations (catalog_changes.hpp): their
// entries are freed after the bump.
void purge_dropped_relations_after_commit(bool dropped);
// In a logical replication apply worker: every table of its subscription
// is marked, since apply fires no statement triggers. A no-op elsewhere.
void mark_subscription_relations();
// Announces every marked counter as committing (and writes the BEGIN
// record for standbys); until the bump no entry depending on them is served.
void announce_commit();
// At PRE_PREPARE in an apply worker of a two-phase subscription: a PREPARED
// record, so that standbys announce its tables before COMMIT PREPARED.
void log_apply_worker_prepare();
// At COMMIT: visible to new snapshots; the bump is due once the commit's
// invalidations are out.
void commit_is_visible();
// The resource release after a top-level commit: the bump (with the delta
// records), the announcement withdrawn, dropped tables' entries freed, the
// transaction forgotten. Atomics only: must not fail.
void publish_visible_commit();
// At ABORT: a failure between pre-commit and commit withdraws the
// announcement without a bump.
void abandon_commit();
// The transaction's marks, captured rows and catalog changes forgotten.
void forget_transaction();

}  // namespace pgmemo
