// Deltas, the reader's side (docs/consistency.md, "Deltas"): the records of
// commits since an entry's stamp collected from the delta log, and each
// committed row version evaluated over the query's own expressions. What
// the records make of a stored result:
//   - a count adds one for a new version and subtracts one for an old one
//     (old and new versions of an updated row cancel out when both match);
//   - a list ordered with LIMIT stays when it was a full page and the
//     version sorts after its last row by the query's own ordering;
//   - any other list is invalid.
// The WHERE and the sort keys are the analyzed query's own expressions
// (its Shape, delta_qualify.hpp), planned as expressions and evaluated over
// the stored rows with the call's parameters. Settling a fresh result and
// carrying a stale entry, which use these, are the miss path's
// (compute/carry.hpp).
#pragma once

#include "pg_memo.hpp"
#include "call.hpp"
#include "deltas/delta_qualify.hpp"
#include "generations.hpp"

extern "C" {
#include "utils/snapshot.h"
}

namespace pgmemo {

// The query's expressions, ready to evaluate row versions.
struct DeltaEvaluator;

// Where a statement kept by this backend keeps its generic evaluator
// between uses (compute/call_plans.hpp): the pointer, and the context it
// lives in. Both null when the statement is not kept.
struct KeptEvaluator {
    DeltaEvaluator **evaluator;
    MemoryContext context;
};

enum class DeltaVerdict { Kept, Invalid };

// Evaluates records (copies, newest first) over a stored result (payload)
// of a query of this shape and kind, with the call's params, inside a
// subtransaction. seen: the snapshot the result was computed with, whose
// commits it already holds (settling), or nullptr (carrying: the stamp
// says what it holds). A count's correction is added to *correction.
// False when the expressions raised an error (a cast that fails on a new
// row): "cannot tell". A cancel or a shutdown is raised again.
bool evaluate_records(const Shape &shape, Kind kind, ParamListInfo params, const KeptEvaluator &kept,
                      List *records, Snapshot seen, const char *payload, uint32_t len, DeltaVerdict *verdict,
                      int64 *correction);

// Copies, from the delta log, the records of relid on the counters of deps
// that moved since their stamps, and each counter's current value. False:
// some value has no record (a write that was not captured, DDL), or there
// are too many, or memory is short for their copies, or *busy: a commit
// is in progress on a carry position. A scope's counter has no records:
// the writes that moved it have theirs on the carry position, read last
// and only once no commit is in progress on it, so that every scope bump
// read here is matched by its commit's record there, in whichever order
// the commit bumped them (docs/consistency.md, "Scopes").
bool collect_records(const DepStamp *deps, uint32_t ndeps, Oid relid, uint64 *current, List **records,
                     bool *busy = nullptr);

}  // namespace pgmemo
