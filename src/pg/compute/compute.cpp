// The miss path, in one place. Its order is the consistency protocol
// (docs/consistency.md, "Readers" and "The commit window"):
//
//   1. receive pending invalidations and note how many were received;
//   2. parse and analyze the text: refusals, dependencies, privilege checks;
//   3. when the result is to be stored, wait (bounded) for commits in
//      progress on the dependencies, so that the result survives them;
//   4. read the dependencies' generations;
//   5. receive invalidations again: if any arrived since 1, the analysis may
//      be older than the generations (an ATTACH PARTITION counted in them but
//      missing from it): analyze again (at most kMaxAnalyses times, then
//      compute without storing);
//   6. execute with a NEW snapshot, taken after 4 (volatile SPI; never the
//      caller's), so that a commit between 4 and 6 leaves the entry born
//      stale, never stale forever; a registered statement with its own,
//      stored only if it still sees what a new one would
//      (statement_snapshot.hpp);
//   7. a result that deltas may keep is settled: marked exact at its stamp
//      when the commits its snapshot saw are known (compute/carry.hpp);
//   8. store the entry with the generations of 4 (or as settled).
//
// Locks: none held while the query runs. Generations are read as atomics;
// storing takes the store's LWLocks inside core calls, which raise no
// ERROR (architecture.md, "Locking protocol").
#include "compute/compute.hpp"
#include "compute/commit_wait.hpp"
#include "compute/prepared_query.hpp"
#include "query_errors.hpp"
#include "compute/statement_snapshot.hpp"
#include "compute/remembered_errors.hpp"

extern "C" {
#include "access/heaptoast.h"
#include "access/tupconvert.h"
#include "executor/tuptable.h"
#include "tcop/dest.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_param.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/sinval.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
}

#include "compute/analysis.hpp"
#include "invalidate/catalog_changes.hpp"
#include "compat.hpp"
#include "compute/carry.hpp"
#include "invalidate/write_set.hpp"
#include "compute/keyed_settings.hpp"
#include "compute/learned_reads.hpp"
#include "result_format.hpp"
#include "compute/call_plans.hpp"
#include "reason_log.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

namespace pgmemo {

namespace {

// Whether the last compute_and_store's key did not hold the settings its
// statement reads (keyed_settings.hpp): its error is not the others' with
// the same key. Set when it ends, from its own analysis: a memo call made
// inside its computation has its own.
bool last_settings_unkeyed = false;

void read_generations(Analysis *analysis) {
    Generations &gens = shared_state().gens;
    for (uint32_t i = 0; i < analysis->ndeps; i++)
        analysis->deps[i].generation = gens.read(analysis->deps[i].slot);
}

// Whether a result computed with this analysis may be stored.
bool storable(const Analysis &analysis, bool bypass) {
    return !bypass && analysis.uncacheable == Uncacheable::No &&
           !own_writes().intersects(analysis.deps, analysis.ndeps);
}

// Why a result computed without a bypass may not be stored.
Counter unstored_reason(const Analysis &analysis) {
    switch (analysis.uncacheable) {
        case Uncacheable::TriggersDisabled: return kBypassTriggersDisabled;
        case Uncacheable::CatalogsChanging: return kBypassCatalogsChanging;
        case Uncacheable::NotWatched: return kBypassNotWatched;
        case Uncacheable::ReadsUnnamed: return kBypassReadsUnnamed;
        case Uncacheable::StatementSnapshot: return kBypassStatementSnapshot;
        case Uncacheable::No: break;
    }
    return kBypassOwnWrites;
}

// Runs the plan with a new snapshot (volatile SPI: never the caller's), or
// with the one given (pushed as the active snapshot, which read-only SPI
// uses as it is), its rows going to dest.
int execute(const PreparedQuery &q, Snapshot snapshot, DestReceiver *dest) {
    SPIExecuteOptions options;
    memset(&options, 0, sizeof options);
    options.params = q.params;
    options.read_only = snapshot != InvalidSnapshot;
    options.dest = dest;
    if (snapshot == InvalidSnapshot) return SPI_execute_plan_extended(q.plan, &options);
    // Popped on success; after an error, the (sub)transaction's abort pops
    // what was pushed, as it does SPI's own.
    PushActiveSnapshot(snapshot);
    int rc = SPI_execute_plan_extended(q.plan, &options);
    PopActiveSnapshot();
    return rc;
}

// Runs the plan, observing what every plan it starts reads (learned_reads.hpp).
int execute_observed(const PreparedQuery &q, Snapshot snapshot, DestReceiver *dest, ObservedReads *reads) {
    int rc;
    begin_observing(reads);
    PG_TRY();
    { rc = execute(q, snapshot, dest); }
    PG_CATCH();
    {
        // Safe without a pg_memo LWLock: it writes only this backend's
        // stack and its own flag word (an atomic) in shared memory.
        end_observing(reads);
        PG_RE_THROW();
    }
    PG_END_TRY();
    end_observing(reads);
    return rc;
}

// After the execution: relations read beyond what the analysis covers (the
// statements of a function labelled IMMUTABLE), or a memo call made inside
// it. Their generations were not read before the snapshot, so the result
// is not stored; the statement's next analysis depends on them (a refusal,
// an unwatched table say, is raised now, as the next call raises it).
void note_unnamed_reads(const Call &call, const PreparedQuery &q, const ObservedReads &reads, Analysis *analysis) {
    // The relations whose reads the entry's dependencies may not cover:
    // those the analysis does not list (a function's statement read them,
    // or the text read them with ONLY, leaving their children's rows out),
    // and those it depends on in part (a scope, deltas). Each is learned
    // if something beside the text's own range table entries read it (a
    // function reading other scopes, say): the entry must depend on all
    // of it.
    int ncandidates = 0;
    auto *candidates = static_cast<Oid *>(palloc(sizeof(Oid) * (list_length(reads.checks) + Analysis::kMaxScopeRules + 1)));
    auto candidate = [&](Oid relid) {
        for (int i = 0; i < ncandidates; i++)
            if (candidates[i] == relid) return;
        candidates[ncandidates++] = relid;
    };
    ListCell *lc;
    foreach (lc, reads.checks) {
        auto *check = static_cast<RelationPermission *>(lfirst(lc));
        bool named = false;
        for (uint32_t i = 0; i < analysis->nrelids && !named; i++) named = analysis->relids[i] == check->relid;
        if (!named) candidate(check->relid);
    }
    for (int i = 0; i < analysis->nscopes; i++) candidate(analysis->scopes[i].relid);
    if (OidIsValid(analysis->delta_relid)) candidate(analysis->delta_relid);
    auto *unnamed = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (list_length(reads.checks) + 1)));
    int n = ncandidates == 0 ? 0
                             : reads_beyond_the_text(reads, prepared_query_tree(q.plan), candidates, ncandidates,
                                                     unnamed);
    if (n == 0 && !reads.memo_call && !reads.worker_statements) return;
    analysis->uncacheable = Uncacheable::ReadsUnnamed;
    if (n == 0 && !reads.worker_statements) return;
    // Learned first: a refused relation is then refused by the next call's
    // analysis, before it executes anything.
    learn_reads(q.statement_key, unnamed, n, reads.worker_statements);
    // A registered statement's rows are returned (not stored): it must
    // answer as without pg_memo (prepared_query.cpp, analyze_learned).
    if (!call.param_types) check_learned_reads(unnamed, n);
    if (q.kept) forget_statement(q.kept);  // its plan may hold such a function's folded result
}

// Analyses of one computation, at most, while catalog changes keep arriving.
constexpr int kMaxAnalyses = 3;

// Runs the query uncached: analysis, generations, then a fresh snapshot.
//
// The analysis (what the text means: its relations, their partitions, the
// functions it calls) must be no older than the generations, or a catalog
// change that is already counted in them could be missing from it, and the
// entry would never be invalidated for it (a new partition's writes, say).
// A commit publishes its bump only after its invalidations are sent
// (invalidation.cpp), so any such change shows as an invalidation received
// after the generations are read: then the query is analyzed again.
Result compute(const Call &call, const Encoded &key, Analysis *analysis, bool bypass, bool wait_for_commits) {
    MemoryContext caller_ctx = CurrentMemoryContext;
    for (int analyses = 1;; analyses++) {
        AcceptInvalidationMessages();
        uint64 invalidations_seen = SharedInvalidMessageCounter;
        // The key holds the path the arguments were read with.
        bool path_moved = !same_search_path(call);
        analysis->stamped_at = 0;  // not stamped yet: an error until then is not remembered
        PreparedQuery q = prepare_query(call, analysis, invalidations_seen, path_moved);
        if (path_moved) analysis->uncacheable = Uncacheable::CatalogsChanging;  // computed, not stored
        // Keyed with other settings than it reads (policies changed, or the
        // backend had not analyzed it): computed for this caller alone,
        // stored under the key that holds them (compute_and_store).
        analysis->settings_unkeyed = !key_holds_settings_of(key, *analysis);
        learn_settings(q.statement_key, *analysis);

        // A commit in progress would make the result stale as soon as it
        // lands: wait for it (on the first analysis only). What it changed
        // in the catalogs shows below, as invalidations. Not for a
        // registered statement: its snapshot, older than the wait's end,
        // could not be stored once the commit lands.
        if (analyses == 1 && wait_for_commits && call.as_of == InvalidSnapshot && storable(*analysis, bypass))
            wait_for_commits_in_progress(analysis->deps, analysis->ndeps);

        // The order is the protocol: generations first, snapshot second. A
        // commit in between leaves this entry born stale, never stale forever.
        // The clock before both: a commit the result misses became visible
        // after it.
        analysis->stamped_at = GetCurrentTimestamp();
        read_generations(analysis);
        AcceptInvalidationMessages();
        if (SharedInvalidMessageCounter != invalidations_seen && storable(*analysis, bypass)) {
            if (analyses < kMaxAnalyses) {
                SPI_finish();
                continue;
            }
            analysis->uncacheable = Uncacheable::CatalogsChanging;  // computed, not stored
        }

        // A registered statement is computed with its own snapshot, which
        // is as good as a new one (taken after the generations) only while
        // no transaction has ended since it was taken: otherwise the result
        // is its answer, and nobody else's.
        if (storable(*analysis, bypass) && !answers_as_of_now(call))
            analysis->uncacheable = Uncacheable::StatementSnapshot;

        // A result deltas may keep must know its snapshot: which commits it
        // contains (compute/carry.cpp). The same snapshot either way.
        // SPI takes its own snapshot after the plan's locks; so must this
        // one (the query reads that one table): a snapshot taken before
        // waiting out a TRUNCATE would read the new, empty file.
        bool keep_by_deltas = OidIsValid(analysis->delta_relid) && storable(*analysis, bypass);
        // Computed with the statement's snapshot: the result is as of the
        // state it names, for a later caller whose older snapshot sees the
        // same (not one deltas settle, whose rows may be brought past it),
        // and for a flight's waiters when that snapshot fell behind.
        bool as_of_statement = storable(*analysis, bypass) ||
                               analysis->uncacheable == Uncacheable::StatementSnapshot;
        analysis->snapshot_print =
            call.as_of && as_of_statement && !keep_by_deltas ? snapshot_print(call.as_of) : 0;
        if (keep_by_deltas) LockRelationOid(analysis->delta_relid, AccessShareLock);
        Snapshot snapshot = call.as_of;
        if (keep_by_deltas) snapshot = RegisterSnapshot(call.as_of ? call.as_of : GetTransactionSnapshot());
        ObservedReads reads;
        ResultReceiver *receiver = new_receiver(call, caller_ctx);
        int rc = execute_observed(q, snapshot, receiver_dest(receiver), &reads);
        if (rc != SPI_OK_SELECT) elog(ERROR, "pg_memo: unexpected SPI result %s", SPI_result_code_string(rc));
        note_unnamed_reads(call, q, reads, analysis);

        Result r = received_result(receiver);
        if (keep_by_deltas) {
            if (storable(*analysis, bypass) && !r.spilled)
                settle_with_deltas(analysis, q, key, call.kind, snapshot, &r, caller_ctx);
            UnregisterSnapshot(snapshot);
        }
        SPI_finish();
        return r;
    }
}

Result compute_remembering_errors(const Call &call, const Encoded &key, uint32_t slot, Analysis *analysis,
                                  bool wait_for_commits) {
    MemoryContext caller_ctx = CurrentMemoryContext;
    Result r{};
    PG_TRY();
    { r = compute(call, key, analysis, false, wait_for_commits); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_ctx);
        ErrorData *e = CopyErrorData();
        FlushErrorState();
        // Storing takes the store's LWLocks: safe, as they are held only
        // inside core calls, which raise no ERROR (a hit's copy allocates
        // with MCXT_ALLOC_NO_OOM), so none is held over from the error.
        if (error_is_remembered(e->sqlerrcode) && analysis->stamped_at != 0 && storable(*analysis, false) &&
            !analysis->settings_unkeyed)
            remember_error(shared_state(), slot, key, *analysis, e);
        ReThrowError(e);
    }
    PG_END_TRY();
    return r;
}

}  // namespace

bool computed_with_unkeyed_settings() { return last_settings_unkeyed; }

bool learn_statement_settings(const Call &call, uint32_t slot) {
    AcceptInvalidationMessages();
    uint64 invalidations_seen = SharedInvalidMessageCounter;
    Analysis analysis{};
    PG_TRY();
    {
        PreparedQuery q = prepare_query(call, &analysis, invalidations_seen, !same_search_path(call));
        learn_settings(q.statement_key, analysis);
        SPI_finish();
    }
    PG_CATCH();
    {
        // The refusal the computation would have met, counted as its.
        shared_state().stats.add(slot, kFailures);
        PG_RE_THROW();
    }
    PG_END_TRY();
    return analysis.settings_len > 0;
}

Result compute_and_store(const Call &call, const Encoded &key, uint32_t slot, Counter bypass_reason,
                         uint64_t *pinned, bool wait_for_commits, bool (*waited_on)()) {
    bool bypass = bypass_reason != kCounterCount;
    last_settings_unkeyed = false;
    Shared &sh = shared_state();
    if (pinned) *pinned = 0;
    Analysis analysis{};
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    Result r{};
    // A failed computation (a refusal too) counts apart: its time would
    // make mean_compute_ms say nothing of the computations that succeed.
    PG_TRY();
    {
        r = guc_error_ttl_ms > 0 && !bypass ? compute_remembering_errors(call, key, slot, &analysis, wait_for_commits)
                                            : compute(call, key, &analysis, bypass, wait_for_commits);
    }
    PG_CATCH();
    {
        last_settings_unkeyed = analysis.settings_unkeyed;
        sh.stats.add(slot, kFailures);
        PG_RE_THROW();
    }
    PG_END_TRY();
    last_settings_unkeyed = analysis.settings_unkeyed;
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    sh.stats.add(slot, kComputations);
    sh.stats.add(slot, kComputeNanos, uint64_t(INSTR_TIME_GET_DOUBLE(elapsed) * 1e9));

    if (!storable(analysis, bypass)) {
        Counter reason = bypass ? bypass_reason : unstored_reason(analysis);
        sh.stats.add(slot, kBypasses);
        sh.stats.add(slot, reason);
        log_reason(call.cache_name, "computed, not stored", reason);
        // A leader's: its waiters joined with snapshots that saw the
        // present, and may still see what this one saw. (No copy, which
        // may evict entries, for a flight no one waits on.)
        if (pinned && waited_on && !bypass && analysis.uncacheable == Uncacheable::StatementSnapshot &&
            waited_on() && !analysis.settings_unkeyed)
            hand_to_waiters(sh, slot, key, analysis, r, *pinned);
    } else if (analysis.settings_unkeyed) {
        // The result is the caller's, under the settings it has now: stored
        // under the key that holds them, never handed to a flight's waiters
        // (their settings may differ).
        sh.stats.add(slot, kMisses);
        store_result(sh, slot, encode_call(call, analysis.settings, analysis.settings_len), analysis, r, nullptr);
    } else {
        sh.stats.add(slot, kMisses);
        store_result(sh, slot, key, analysis, r, pinned);
    }
    return r;
}

}  // namespace pgmemo
