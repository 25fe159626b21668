// Keeping entries by deltas, the miss path's side: a result settled exact
// at its stamp, and an entry carried past the rows committed since then
// (docs/consistency.md, "Deltas"). Which queries qualify:
// deltas/delta_qualify.hpp; what the records make of a result:
// deltas/delta_evaluate.hpp.
#pragma once

#include "copy_out_sink.hpp"
#include "compute/prepared_query.hpp"
#include "compute/results.hpp"

extern "C" {
#include "utils/snapshot.h"
}

namespace pgmemo {

// After the computation, with the snapshot it ran with: marks the entry as
// kept by deltas (kDeltaStamp) when its stamp provably matches what the
// snapshot saw. Commits the snapshot saw that bumped the table's counter
// after the stamp was read are found in the log by their transaction ids;
// those it did not see are applied to the result. Otherwise the entry is
// stored as before, invalidated by any write.
void settle_with_deltas(Analysis *analysis, const PreparedQuery &q, const Encoded &key, Kind kind,
                        Snapshot snapshot, Result *result, MemoryContext result_ctx);

// A stale entry kept by deltas (copied into stale): carries it forward past
// the deltas committed since its stamp (stamps advanced in place, or the
// corrected count stored anew), counted in stats_slot. False if it cannot
// be (a write without a record, a change that reaches the page: then the
// entry is removed) or not now (catalogs changing): the caller recomputes.
bool carry_forward(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale);

// After a lookup that returned StaleKept into sink: carries the entry and
// looks it up again (pinning it with pinned), while commits keep landing, a
// few times at most. Returns the last lookup's status; Stale when the entry
// could not be carried (recompute).
LookupStatus carry_and_look_up(const Call &call, const Encoded &key, uint32_t stats_slot, CopyOutSink &sink,
                               uint64_t *pinned = nullptr);

}  // namespace pgmemo
