// Keeping entries by deltas, the miss path's side (carry.hpp;
// docs/consistency.md, "Deltas"). An entry qualifies when its query is a
// selection over one plain table watched with deltas (delta_relation). Its
// stamp on the table's counter carries kDeltaStamp once settle_with_deltas
// proved that the result is exactly the table's committed rows as of that
// stamp. From then on a reader that finds it stale walks the delta log from
// the stamp to the counter's current value (carry_forward): every value on
// the way must have a record, or nothing can be said; what the records
// make of the entry is deltas/delta_evaluate.hpp's.
//
// Locks: reads the counters under the delta log's LWLock (shared), held
// over no call that can raise; the store's own locks inside store calls.
#include "compute/carry.hpp"

extern "C" {
#include "executor/spi.h"
#include "storage/sinval.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
}

#include "compute/call_plans.hpp"
#include "compute/commit_wait.hpp"
#include "counter_slots.hpp"
#include "deltas/delta_evaluate.hpp"
#include "deltas/delta_qualify.hpp"
#include "invalidate/write_set.hpp"
#include "reason_log.hpp"
#include "result_format.hpp"
#include "shared_state.hpp"

namespace pgmemo {

namespace {

constexpr int kMaxCarryAnalyses = 3;
// Carries of one entry in one call, at most, while commits keep landing.
constexpr int kMaxCarries = 16;

// Where the call's kept statement keeps its delta evaluator, if it is kept.
KeptEvaluator kept_evaluator(const PreparedQuery &q) {
    if (!q.kept) return KeptEvaluator{nullptr, nullptr};
    return KeptEvaluator{&q.kept->delta_evaluator, q.kept->context};
}

uint32_t dep_index(const Analysis &a, uint32_t slot) {
    for (uint32_t i = 0; i < a.ndeps; i++)
        if (a.deps[i].slot == slot) return i;
    return a.ndeps;
}

Result count_result(int64 count, MemoryContext ctx) {
    Result r{static_cast<char *>(MemoryContextAlloc(ctx, sizeof(ResultHeader))), uint32_t(sizeof(ResultHeader))};
    ResultWriter w(r.payload, r.len);
    w.write_count(count);
    return r;
}

}  // namespace

void settle_with_deltas(Analysis *analysis, const PreparedQuery &q, const Encoded &key, Kind kind,
                        Snapshot snapshot, Result *result, MemoryContext result_ctx) {
    Shared &sh = shared_state();
    uint32_t slot = relation_slot(analysis->delta_relid);
    uint32_t at = dep_index(*analysis, slot);
    if (at == analysis->ndeps) return;
    DepStamp *dep = &analysis->deps[at];

    // A commit the snapshot saw but that had not bumped the counter when
    // the stamp was read is still announced now, or bumped by now: wait
    // for the announcement to end, then read both.
    DepStamp waited_on = *dep;
    waited_on.flags = 0;  // a scoped entry's carry position too
    wait_for_commits_in_progress(&waited_on, 1);
    LWLockAcquire(delta_lock(), LW_SHARED);
    bool pending = sh.gens.commit_pending(slot);
    uint64 current = sh.gens.read(slot);
    LWLockRelease(delta_lock());
    if (pending) return;  // cannot tell which commits the result holds
    if (current == dep->generation) {
        dep->flags |= kDeltaStamp;  // nothing committed since the stamp
        return;
    }

    // Commits bumped since the stamp: those the snapshot saw are in the
    // result already; the others are applied to it.
    List *records = NIL;
    uint64 now;
    if (!collect_records(dep, 1, analysis->delta_relid, &now, &records) || now != current) return;
    Shape s;
    if (!shape_of(prepared_query_tree(q.plan), kind, &s)) return;
    DeltaVerdict verdict;
    int64 correction = 0;
    bool told = evaluate_records(s, kind, q.params, kept_evaluator(q), records, snapshot, result->payload,
                                 result->len, &verdict, &correction);
    if (!told || verdict == DeltaVerdict::Invalid) return;
    if (kind == Kind::Count && correction != 0) {
        ResultReader rd(result->payload, result->len);
        *result = count_result(rd.count() + correction, result_ctx);
    }
    dep->generation = current;
    dep->flags |= kDeltaStamp;
}

namespace {

// Retry: catalogs changed meanwhile; OtherPath: the search path is not the
// key's (compute, and do not store).
// CannotTell*: the entry must be computed again, a delta fallback, by what
// was missing (memo.recompute_reasons).
enum class CarryOutcome {
    Retry,
    OtherPath,
    Unmoved,
    Kept,
    Corrected,
    Invalid,
    CannotTellRecords,     // a write on the way left no record
    CannotTellQuery,       // the query means something else now
    CannotTellEvaluation,  // the records could not be evaluated over it
};

// The counters' current values for a carry, and the records between the
// entry's stamps and them.
struct CarryStamps {
    DepStamp *current;    // the entry's stamps, advanced to the current values
    List *records;
    bool complete;        // every value on the way has its record
    bool busy;            // a commit in progress on the carry position
    bool moved;           // some counter moved since the stamp
    TimestampTz carried_at;
};

CarryStamps read_carry_stamps(const CopyOutSink &stale, Oid relid) {
    Shared &sh = shared_state();
    CarryStamps c{};
    c.current = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * stale.ndeps));
    uint64 *values = static_cast<uint64 *>(palloc0(sizeof(uint64) * stale.ndeps));
    // The carried entry's stamp time: a commit it misses bumps after the
    // values below are read; it became visible after this moment unless
    // it was already announced, and then the entry keeps its old time.
    c.carried_at = GetCurrentTimestamp();
    if (sh.gens.any_commit_pending(stale.deps, stale.ndeps)) c.carried_at = stale.stamped_at;
    c.complete = collect_records(stale.deps, stale.ndeps, relid, values, &c.records, &c.busy);
    for (uint32_t i = 0; i < stale.ndeps; i++) {
        c.current[i] = stale.deps[i];
        c.current[i].generation = values[i];
        c.moved |= values[i] != stale.deps[i].generation;
    }
    return c;
}

// Waits (bounded) for the commits in progress on every stamp of the entry,
// its carry position too: a carry reads records only past a quiet one.
void wait_for_all_commits(const CopyOutSink &stale) {
    DepStamp *all = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * stale.ndeps));
    for (uint32_t i = 0; i < stale.ndeps; i++) {
        all[i] = stale.deps[i];
        all[i].flags &= ~kCarryPosition;
    }
    wait_for_commits_in_progress(all, stale.ndeps);
    pfree(all);
}

// Evaluates the records over the entry and stores what they make of it:
// the same payload with advanced stamps, or a corrected count.
CarryOutcome apply_carry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                         const PreparedQuery &q, const Shape &s, Analysis *a, const CarryStamps &c,
                         MemoryContext caller_ctx) {
    Shared &sh = shared_state();
    DeltaVerdict verdict;
    int64 correction = 0;
    if (!evaluate_records(s, call.kind, q.params, kept_evaluator(q), c.records, nullptr, stale.payload,
                          stale.payload_len, &verdict, &correction))
        return CarryOutcome::CannotTellEvaluation;
    if (verdict == DeltaVerdict::Invalid) return CarryOutcome::Invalid;
    if (correction == 0) {
        // Same payload: advance the stamps in place, or store anew if the
        // entry is pinned.
        if (!sh.store.revise_stamps(key.hash, key.key, key.key_len, stale.deps, stale.ndeps, c.current,
                                    c.carried_at)) {
            memcpy(a->deps, c.current, sizeof(DepStamp) * a->ndeps);
            a->stamped_at = c.carried_at;
            store_result(sh, stats_slot, key, *a, Result{stale.payload, stale.payload_len}, nullptr);
        }
        return CarryOutcome::Kept;
    }
    ResultReader rd(stale.payload, stale.payload_len);
    memcpy(a->deps, c.current, sizeof(DepStamp) * a->ndeps);
    a->stamped_at = c.carried_at;
    store_result(sh, stats_slot, key, *a, count_result(rd.count() + correction, caller_ctx), nullptr);
    return CarryOutcome::Corrected;
}

// One attempt: the statement analyzed again, the records read and applied.
CarryOutcome try_carry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                       MemoryContext caller_ctx) {
    AcceptInvalidationMessages();
    uint64 invalidations_seen = SharedInvalidMessageCounter;
    if (!same_search_path(call)) return CarryOutcome::OtherPath;
    Analysis a{};
    PreparedQuery q = prepare_query(call, &a, invalidations_seen, false);
    bool same_deps = a.ndeps == stale.ndeps;
    for (uint32_t i = 0; same_deps && i < a.ndeps; i++) same_deps = a.deps[i].slot == stale.deps[i].slot;
    Shape s;
    if (!OidIsValid(a.delta_relid) || a.uncacheable != Uncacheable::No || !same_deps ||
        !shape_of(prepared_query_tree(q.plan), call.kind, &s)) {
        SPI_finish();
        return CarryOutcome::CannotTellQuery;
    }
    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    CarryStamps c = read_carry_stamps(stale, a.delta_relid);
    AcceptInvalidationMessages();
    CarryOutcome outcome = CarryOutcome::Retry;
    if (c.busy)
        wait_for_all_commits(stale);  // then try again
    else if (!c.complete)
        outcome = CarryOutcome::CannotTellRecords;
    else if (!c.moved)
        outcome = CarryOutcome::Unmoved;  // the commit it waited for aborted
    else if (SharedInvalidMessageCounter == invalidations_seen)
        outcome = apply_carry(call, key, stats_slot, stale, q, s, &a, c, caller_ctx);
    MemoryContextSwitchTo(spi_ctx);
    SPI_finish();
    return outcome;
}

}  // namespace

namespace {

// An entry kept by deltas that can never be carried: removed for good, so
// that the readers arriving now miss and share one computation instead of
// each trying to carry it. reason: what made it stale (an invalidation by
// writes or catalogs), or the delta fallback's reason.
void drop_kept_entry(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale,
                     Counter reason) {
    Shared &sh = shared_state();
    log_reason(call.cache_name, "entry kept by deltas computed again", reason);
    sh.store.revise_stamps(key.hash, key.key, key.key_len, stale.deps, stale.ndeps, nullptr);
    sh.stats.add(stats_slot, kInvalidations);
    sh.stats.add(stats_slot, reason);
    bool fallback = reason != kInvalidatedByWrites && reason != kInvalidatedByCatalogs;
    if (fallback) sh.stats.add(stats_slot, kDeltaFallbacks);
}

}  // namespace

bool carry_forward(const Call &call, const Encoded &key, uint32_t stats_slot, const CopyOutSink &stale) {
    Shared &sh = shared_state();
    MemoryContext caller_ctx = CurrentMemoryContext;
    // A commit in progress on a dependency: wait for it (bounded, as a miss
    // would) and carry the entry past it, rather than recompute.
    wait_for_all_commits(stale);
    CarryOutcome outcome = CarryOutcome::Retry;
    // As on a miss (compute.cpp): the analysis must be no older than the
    // generations read, or the evaluation could be of another query. A
    // catalog change received after them means: analyze again.
    for (int analyses = 1; analyses <= kMaxCarryAnalyses && outcome == CarryOutcome::Retry; analyses++)
        outcome = try_carry(call, key, stats_slot, stale, caller_ctx);

    switch (outcome) {
        case CarryOutcome::Unmoved: return true;
        case CarryOutcome::Kept: sh.stats.add(stats_slot, kDeltaKept); return true;
        case CarryOutcome::Corrected: sh.stats.add(stats_slot, kDeltaCorrected); return true;
        case CarryOutcome::Retry: return false;  // catalogs kept changing: compute this time
        case CarryOutcome::OtherPath: return false;
        case CarryOutcome::Invalid: drop_kept_entry(call, key, stats_slot, stale, kInvalidatedByWrites); return false;
        case CarryOutcome::CannotTellRecords: drop_kept_entry(call, key, stats_slot, stale, kFallbackRecordsMissing); return false;
        case CarryOutcome::CannotTellQuery: drop_kept_entry(call, key, stats_slot, stale, kFallbackQueryChanged); return false;
        case CarryOutcome::CannotTellEvaluation:
            drop_kept_entry(call, key, stats_slot, stale, kFallbackNotEvaluable);
            return false;
    }
    return false;
}

LookupStatus carry_and_look_up(const Call &call, const Encoded &key, uint32_t stats_slot, CopyOutSink &sink,
                               uint64_t *pinned) {
    Shared &sh = shared_state();
    // DDL, a function or privilege change since: no record can carry it,
    // and the delta log is not to blame.
    if (!sink.stale.data_only) {
        drop_kept_entry(call, key, stats_slot, sink, kInvalidatedByCatalogs);
        return LookupStatus::Stale;
    }
    LookupStatus status = LookupStatus::StaleKept;
    for (int carries = 0; status == LookupStatus::StaleKept; carries++) {
        if (carries == kMaxCarries || !carry_forward(call, key, stats_slot, sink)) return LookupStatus::Stale;
        status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink, pinned);
    }
    return status;
}

}  // namespace pgmemo
