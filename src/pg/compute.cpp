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
//      stale, never stale forever;
//   7. a result that deltas may keep is settled: marked exact at its stamp
//      when the commits its snapshot saw are known (delta_apply.hpp);
//   8. store the entry with the generations of 4 (or as settled).
#include "compute.hpp"

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

#include "analysis.hpp"
#include "catalog_changes.hpp"
#include "compat.hpp"
#include "delta_apply.hpp"
#include "invalidation.hpp"
#include "learned_reads.hpp"
#include "result_format.hpp"
#include "statement_cache.hpp"

namespace pgmemo {

namespace {

void read_generations(Analysis *analysis) {
    Generations &gens = shared_state().gens;
    for (uint32_t i = 0; i < analysis->ndeps; i++)
        analysis->deps[i].generation = gens.read(analysis->deps[i].slot);
}

struct VarParams {
    Oid *types;
    int count;
};

void setup_var_params(ParseState *pstate, void *arg) {
    auto *vp = static_cast<VarParams *>(arg);
    setup_parse_variable_parameters(pstate, &vp->types, &vp->count);
}

// 'now' as a timestamp parameter is read when the query runs: the key holds
// the text, whose value moves with the clock.
void refuse_clock_parameter(int index, Oid type, const char *input_text) {
    if (names_clock_time(input_text) && type_holds_clock_values(type))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("pg_memo cannot cache a query whose parameter $%d is '%s'", index + 1, input_text),
                 errdetail("Its value follows the clock, which invalidates nothing."),
                 errhint("Pass the time itself, for example now()::text.")));
}

ParamListInfo bind_parameters(const Call &call, const VarParams &vp) {
    if (vp.count != call.nparams)
        ereport(ERROR, (errcode(vp.count > call.nparams ? ERRCODE_UNDEFINED_PARAMETER
                                                        : ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("query uses %d parameter(s) but %d were given", vp.count, call.nparams)));
    ParamListInfo params = makeParamList(call.nparams);
    for (int i = 0; i < call.nparams; i++) {
        ParamExternData &p = params->params[i];
        if (i >= vp.count || !OidIsValid(vp.types[i]))
            ereport(ERROR, (errcode(ERRCODE_INDETERMINATE_DATATYPE),
                            errmsg("could not determine data type of parameter $%d", i + 1),
                            errhint("Use every parameter from $1 to $%d in the query.", call.nparams)));
        Oid type = vp.types[i] == UNKNOWNOID ? TEXTOID : vp.types[i];
        p.ptype = type;
        p.pflags = PARAM_FLAG_CONST;
        p.isnull = call.param_nulls[i];
        if (p.isnull) {
            p.value = (Datum)0;
        } else {
            char *input_text = TextDatumGetCString(call.param_values[i]);
            refuse_clock_parameter(i, type, input_text);
            Oid input, ioparam;
            getTypeInputInfo(type, &input, &ioparam);
            p.value = OidInputFunctionCall(input, input_text, ioparam, -1);
        }
    }
    return params;
}

void put_row_for_caller(RowSpill *spill, HeapTuple tuple) {
    if (!spill->map) return tuplestore_puttuple(spill->store, tuple);
    HeapTuple converted = execute_attr_map_tuple(tuple, spill->map);
    tuplestore_puttuple(spill->store, converted);
    heap_freetuple(converted);
}

// The executor's rows, received one by one (a DestReceiver): a count's one
// row, or a list's rows written into the payload to store, until the
// payload would outgrow pg_memo.max_result_size; from then on (it will not
// be stored) the rows go into the caller's tuplestore (Call::spill), the
// payload's rows first. So a result too large to store costs the backend
// what the query run plainly through a function costs: the executor's
// memory and work_mem, not a copy of every row (SPI's own tuple table
// would be one, and the payload a second).
struct ResultReceiver {
    DestReceiver pub;  // first: the executor sees a DestReceiver
    Kind kind;
    MemoryContext payload_context;
    RowSpill *spill;   // nullptr: everything goes into the payload
    uint64_t bound;    // payload bytes past which rows spill
    TupleDesc desc;
    char *payload;
    ResultWriter writer;
    int64 count;
};

constexpr size_t kFirstPayloadBytes = 8192;

bool receive_count(TupleTableSlot *slot, DestReceiver *self) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    bool isnull;
    Datum d = slot_getattr(slot, 1, &isnull);
    rr->count = isnull ? 0 : DatumGetInt64(d);
    return true;
}

// The payload's rows move to the caller's tuplestore, and the payload goes.
void start_spilling(ResultReceiver *rr) {
    put_rows_for_caller(rr->payload, uint32_t(rr->writer.size()), rr->spill);
    pfree(rr->payload);
    rr->payload = nullptr;
}

// Room for space more bytes in the payload: doubled (huge allocations).
void grow_payload(ResultReceiver *rr, size_t space) {
    size_t needed = rr->writer.size() + space;
    if (needed > MaxAllocHugeSize || needed > UINT32_MAX)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("query result is too large")));
    size_t grown = Max(rr->writer.capacity() * 2, needed);
    grown = Min(grown, size_t(Min(MaxAllocHugeSize, size_t(UINT32_MAX))));
    rr->payload = static_cast<char *>(repalloc_huge(rr->payload, grown));
    rr->writer.rebase(rr->payload, grown);
}

bool receive_row(TupleTableSlot *slot, DestReceiver *self) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    bool should_free;
    HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
    if (rr->spill && rr->spill->store) {
        put_row_for_caller(rr->spill, tuple);
    } else {
        // A stored row must carry its own bytes, not TOAST pointers.
        MemoryContext old = MemoryContextSwitchTo(rr->payload_context);
        HeapTuple flat = HeapTupleHasExternal(tuple) ? toast_flatten_tuple(tuple, rr->desc) : tuple;
        MemoryContextSwitchTo(old);
        size_t space = row_space(flat->t_len);
        if (rr->spill && rr->writer.size() + space > rr->bound) {
            start_spilling(rr);
            put_row_for_caller(rr->spill, flat);
        } else {
            if (space > rr->writer.capacity() - rr->writer.size()) grow_payload(rr, space);
            rr->writer.add_row(flat->t_data, flat->t_len);
        }
        if (flat != tuple) heap_freetuple(flat);
    }
    if (should_free) heap_freetuple(tuple);
    return true;
}

void receiver_startup(DestReceiver *self, int, TupleDesc desc) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    rr->desc = desc;
    if (rr->kind == Kind::Count) return;
    auto *cols = static_cast<ColumnType *>(palloc(sizeof(ColumnType) * (desc->natts ? desc->natts : 1)));
    for (int i = 0; i < desc->natts; i++)
        cols[i] = ColumnType{TupleDescAttr(desc, i)->atttypid, TupleDescAttr(desc, i)->atttypmod};
    size_t capacity = result_prefix_size(uint32_t(desc->natts)) + kFirstPayloadBytes;
    rr->payload = static_cast<char *>(MemoryContextAllocHuge(rr->payload_context, capacity));
    rr->writer = ResultWriter(rr->payload, capacity);
    rr->writer.begin_rows(cols, uint32_t(desc->natts));
}

void receiver_shutdown(DestReceiver *) {}
void receiver_destroy(DestReceiver *) {}

ResultReceiver *new_receiver(const Call &call, MemoryContext payload_context) {
    auto *rr = static_cast<ResultReceiver *>(palloc0(sizeof(ResultReceiver)));
    rr->pub.receiveSlot = call.kind == Kind::Count ? receive_count : receive_row;
    rr->pub.rStartup = receiver_startup;
    rr->pub.rShutdown = receiver_shutdown;
    rr->pub.rDestroy = receiver_destroy;
    rr->pub.mydest = DestTuplestore;  // anything but DestNone, for which SPI reports no SELECT
    rr->kind = call.kind;
    rr->payload_context = payload_context;
    rr->spill = call.kind == Kind::List ? call.spill : nullptr;
    rr->bound = uint64_t(guc_max_result_size_kb) * 1024;
    rr->writer = ResultWriter(nullptr, 0);
    return rr;
}

// What the receiver holds once the executor is done.
Result received_result(ResultReceiver *rr) {
    Result r{};
    if (rr->kind == Kind::Count) {
        r.len = sizeof(ResultHeader);
        r.payload = static_cast<char *>(MemoryContextAlloc(rr->payload_context, r.len));
        ResultWriter w(r.payload, r.len);
        w.write_count(rr->count);
        return r;
    }
    if (rr->spill && rr->spill->store) {
        r.spilled = true;
        return r;
    }
    r.payload = rr->payload;
    r.len = uint32_t(rr->writer.size());
    return r;
}

// Whether a result computed with this analysis may be stored.
bool storable(const Analysis &analysis, bool bypass) {
    return !bypass && analysis.uncacheable == Uncacheable::No &&
           !own_writes().intersects(analysis.deps, analysis.ndeps);
}

// The statement's analysis, copied into the caller's memory: the entry
// stores it, and its generations are filled in per call.
void copy_analysis(const Analysis &from, Analysis *to) {
    *to = from;
    to->deps = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * from.ndeps));
    memcpy(to->deps, from.deps, sizeof(DepStamp) * from.ndeps);
    to->meta = static_cast<char *>(palloc(from.meta_len ? from.meta_len : 1));
    memcpy(to->meta, from.meta, from.meta_len);
    to->relids = static_cast<Oid *>(palloc(sizeof(Oid) * (from.nrelids ? from.nrelids : 1)));
    memcpy(to->relids, from.relids, sizeof(Oid) * from.nrelids);
}

// The SQL text to prepare: the query, or the count of its rows. The text is
// wrapped only after it proved to be one SELECT, and without its semicolon
// and what follows it ("SELECT 1; -- note").
const char *statement_text(const Call &call) {
    char *statement = nullptr;  // wanted only to wrap a count
    const char *sql = text_to_cstring(call.query);
    check_single_select(sql, call.kind == Kind::Count ? &statement : nullptr);
    if (call.kind == Kind::Count) sql = psprintf("SELECT count(*) FROM (\n%s\n) AS pg_memo_count", statement);
    return sql;
}

// Parses the text inside the SPI connection, inferring the parameters'
// types into vp as an untyped PREPARE does, then once more with those types
// fixed. The plan cache re-parses a plan when the catalogs or the search
// path change, even one not kept, and an inferring parse would write into
// vp, which does not live that long; with fixed types a parameter whose
// type stays unknown is text, as bind_parameters reads it, in every
// transaction. Parallel plans are allowed, as for the same query run
// through SPI_execute or PL/pgSQL's EXECUTE: a miss must not be slower than
// the query itself.
SPIPlanPtr prepare_text(const char *sql, VarParams *vp) {
    SPIPlanPtr plan = SPI_prepare_params(sql, setup_var_params, vp, CURSOR_OPT_PARALLEL_OK);
    if (plan) {
        for (int i = 0; i < vp->count; i++)
            if (vp->types[i] == UNKNOWNOID) vp->types[i] = TEXTOID;
        SPI_freeplan(plan);
        plan = SPI_prepare_cursor(sql, vp->count, vp->types, CURSOR_OPT_PARALLEL_OK);
    }
    if (!plan) elog(ERROR, "pg_memo: preparing the query failed: %s", SPI_result_code_string(SPI_result));
    List *sources = SPI_plan_get_plan_sources(plan);
    if (list_length(sources) != 1) check_single_select(sql);  // raises the error
    auto *source = static_cast<CachedPlanSource *>(linitial(sources));
    // Defensive: PostgreSQL allows no rule that turns a SELECT into several
    // queries (an ON SELECT rule is a view's single _RETURN).
    if (list_length(source->query_list) != 1)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that rewrite rules expand into several")));
    return plan;
}

// Parses, analyzes and plans the text inside the SPI connection. The parser
// checks USAGE on the schemas of qualified names: noted for the hits to
// check again. learned: what the statement's functions were seen to read.
SPIPlanPtr parse_and_analyze(const Call &call, Analysis *analysis, VarParams *vp, MemoryContext caller_ctx,
                             const LearnedReads &learned) {
    const char *sql = statement_text(call);
    start_schema_lookups();
    SPIPlanPtr plan = prepare_text(sql, vp);
    stop_schema_lookups();
    auto *source = static_cast<CachedPlanSource *>(linitial(SPI_plan_get_plan_sources(plan)));
    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    Query *query = linitial_node(Query, source->query_list);
    analyze_query(query, sql, call.search_path, call.search_path_len, learned.checks, learned.n, analysis);
    // Deltas carry a selection of one table: a function reading another
    // would change the result without a record for it.
    analysis->delta_relid = learned.n > 0 ? InvalidOid : delta_relation(query, call.kind);
    MemoryContextSwitchTo(spi_ctx);
    if (learned.serial_plan) {
        // No parallel workers: the statements a function ran in one were
        // not observed here (learned_reads.hpp).
        SPI_freeplan(plan);
        plan = SPI_prepare_cursor(sql, vp->count, vp->types, 0);
        if (!plan) elog(ERROR, "pg_memo: preparing the query failed: %s", SPI_result_code_string(SPI_result));
    }
    return plan;
}

}  // namespace

// Connects to SPI and binds the call's parameters to its statement: the one
// this backend kept for the text, if no catalog change arrived since its
// analysis (invalidations_seen), or a new one, parsed, analyzed and planned.
// A transaction that ran DDL sees catalogs no other transaction sees, and a
// search path that moved since the call was keyed is not the key's: then
// the call neither uses nor keeps a statement.
PreparedQuery prepare_query(const Call &call, Analysis *analysis, uint64 invalidations_seen, bool path_moved) {
    MemoryContext caller_ctx = CurrentMemoryContext;
    Encoded statement_key = encode_statement(call);
    LearnedReads learned = learned_reads(statement_key);
    // A statement whose functions read tables is planned anew each time:
    // its plan may hold what such a function returned when it was planned
    // (an IMMUTABLE call folded into a constant).
    bool reuse = !transaction_changed_catalogs() && !path_moved && learned.n == 0 && !learned.serial_plan;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");

    PreparedStatement *kept = reuse ? find_statement(statement_key, invalidations_seen) : nullptr;
    if (kept) {
        MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
        copy_analysis(kept->analysis, analysis);
        MemoryContextSwitchTo(spi_ctx);
        return PreparedQuery{kept->plan, bind_parameters(call, VarParams{kept->param_types, kept->nparams}), kept,
                             statement_key};
    }
    // The parser grows this array with repalloc, which keeps it in our
    // context: SPI frees its own execution memory when prepare returns.
    VarParams vp{static_cast<Oid *>(MemoryContextAllocZero(caller_ctx, sizeof(Oid))), 0};
    SPIPlanPtr plan = parse_and_analyze(call, analysis, &vp, caller_ctx, learned);
    ParamListInfo params = bind_parameters(call, vp);
    if (reuse && analysis->uncacheable == Uncacheable::No)
        kept = keep_statement(statement_key, plan, vp.types, vp.count, *analysis, invalidations_seen);
    return PreparedQuery{plan, params, kept, statement_key};
}

// A commit in progress is about to become visible: it is flushing its WAL,
// or waiting for a synchronous standby. A result computed before it lands is
// stale at once, and every caller computes again. Waiting lets the
// generations read next, and the snapshot taken after them, include it.
void wait_for_commits_in_progress(const DepStamp *deps, uint32_t ndeps) {
    Generations &gens = shared_state().gens;
    if (guc_commit_wait_ms <= 0 || !gens.any_commit_pending(deps, ndeps)) return;
    const uint32 wait_event = compat_commit_wait_event();
    instr_time start;
    INSTR_TIME_SET_CURRENT(start);
    do {
        instr_time waited;
        INSTR_TIME_SET_CURRENT(waited);
        INSTR_TIME_SUBTRACT(waited, start);
        long remaining = guc_commit_wait_ms - long(INSTR_TIME_GET_MILLISEC(waited));
        if (remaining <= 0) return;
        // The committer signals no one (its bump must stay cheap): poll
        // every millisecond, interruptibly.
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Min(remaining, 1L),
                        wait_event);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    } while (gens.any_commit_pending(deps, ndeps));
}

Query *prepared_query_tree(SPIPlanPtr plan) {
    auto *source = static_cast<CachedPlanSource *>(linitial(SPI_plan_get_plan_sources(plan)));
    return linitial_node(Query, source->query_list);
}

namespace {

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

// After the execution: relations the plans it started read that the
// analysis does not list (the statements of a function labelled IMMUTABLE),
// or a memo call made inside it. Their generations were not read before
// the snapshot, so the result is not stored; the statement's next analysis
// depends on them (a refusal, an unwatched table say, is raised now, as the
// next call raises it).
void note_unnamed_reads(const PreparedQuery &q, const ObservedReads &reads, Analysis *analysis) {
    int n = 0;
    auto *unnamed = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (list_length(reads.checks) + 1)));
    ListCell *lc;
    foreach (lc, reads.checks) {
        auto *check = static_cast<RelationPermission *>(lfirst(lc));
        bool named = false;
        for (uint32_t i = 0; i < analysis->nrelids && !named; i++) named = analysis->relids[i] == check->relid;
        if (!named) unnamed[n++] = *check;
    }
    if (n == 0 && !reads.memo_call && !reads.worker_statements) return;
    analysis->uncacheable = Uncacheable::ReadsUnnamed;
    if (n == 0 && !reads.worker_statements) return;
    // Learned first: a refused relation is then refused by the next call's
    // analysis, before it executes anything.
    learn_reads(q.statement_key, unnamed, n, reads.worker_statements);
    check_learned_reads(unnamed, n);
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

        // A commit in progress would make the result stale as soon as it
        // lands: wait for it (on the first analysis only). What it changed
        // in the catalogs shows below, as invalidations.
        if (analyses == 1 && wait_for_commits && storable(*analysis, bypass))
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

        // A result deltas may keep must know its snapshot: which commits it
        // contains (delta_apply.cpp). The same new snapshot either way.
        // SPI takes its own snapshot after the plan's locks; so must this
        // one (the query reads that one table): a snapshot taken before
        // waiting out a TRUNCATE would read the new, empty file.
        bool keep_by_deltas = OidIsValid(analysis->delta_relid) && storable(*analysis, bypass);
        if (keep_by_deltas) LockRelationOid(analysis->delta_relid, AccessShareLock);
        Snapshot snapshot = keep_by_deltas ? RegisterSnapshot(GetTransactionSnapshot()) : InvalidSnapshot;
        ObservedReads reads;
        ResultReceiver *receiver = new_receiver(call, caller_ctx);
        int rc = execute_observed(q, snapshot, &receiver->pub, &reads);
        if (rc != SPI_OK_SELECT) elog(ERROR, "pg_memo: unexpected SPI result %s", SPI_result_code_string(rc));
        note_unnamed_reads(q, reads, analysis);

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

// A failed computation's error, stored under the key's error key
// (remembered_error_key) so that later callers get it without running the
// query (pg_memo.error_ttl). Only once the analysis is complete and its
// generations read: the entry is invalidated like a result.
void remember_error(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const ErrorData *e) {
    Result r{};
    r.len = uint32_t(error_result_size(strlen(e->message ? e->message : ""), strlen(e->detail ? e->detail : ""),
                                       strlen(e->hint ? e->hint : "")));
    r.payload = static_cast<char *>(palloc(r.len));
    ResultWriter w(r.payload, r.len);
    if (w.write_error(e->sqlerrcode, e->message, e->detail, e->hint))
        store_result(sh, slot, remembered_error_key(key), a, r, nullptr);
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
        if (error_is_remembered(e->sqlerrcode) && analysis->stamped_at != 0 && storable(*analysis, false))
            remember_error(shared_state(), slot, key, *analysis, e);
        ReThrowError(e);
    }
    PG_END_TRY();
    return r;
}

}  // namespace

TupleDesc stored_descriptor(const ResultReader &rd) {
    TupleDesc desc = CreateTemplateTupleDesc(int(rd.ncolumns()));
    for (uint32_t i = 0; i < rd.ncolumns(); i++)
        TupleDescInitEntry(desc, AttrNumber(i + 1), psprintf("column%u", i + 1), rd.columns()[i].type_oid,
                           rd.columns()[i].typmod, 0);
    return desc;
}

namespace {

// The stored rows have the query's own shape; they can be handed over as
// they are when the caller's row type has the same column types.
bool same_row_shape(const ResultReader &rd, TupleDesc expected) {
    if (uint32_t(expected->natts) != rd.ncolumns()) return false;
    for (int i = 0; i < expected->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(expected, i);
        if (att->attisdropped || att->atttypid != rd.columns()[i].type_oid) return false;
    }
    return true;
}

}  // namespace

void put_rows_for_caller(const char *payload, uint32_t len, RowSpill *spill) {
    ResultReader rd(payload, len);
    if (!rd.valid() || rd.kind() != ResultKind::Rows) elog(ERROR, "pg_memo: corrupt row result");
    if (!spill->store) {
        if (!same_row_shape(rd, spill->expected))
            spill->map = convert_tuples_by_position(stored_descriptor(rd), spill->expected,
                                                    "query result does not match the column definition list");
        // Under the caller's memory and resource owner: a miss path run in
        // a subtransaction (stale_on_error) must not take the store's
        // temporary files with it.
        MemoryContext old = MemoryContextSwitchTo(spill->context);
        ResourceOwner owner = CurrentResourceOwner;
        CurrentResourceOwner = spill->owner;
        spill->store = tuplestore_begin_heap(spill->random_access, false, work_mem);
        CurrentResourceOwner = owner;
        MemoryContextSwitchTo(old);
    }
    const char *data;
    uint32_t row_len;
    while (rd.next_row(&data, &row_len)) {
        HeapTupleData tuple;
        tuple.t_len = row_len;
        tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(data));
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        put_row_for_caller(spill, &tuple);
    }
}

bool error_belongs_to_query(int sqlerrcode) {
    switch (ERRCODE_TO_CATEGORY(sqlerrcode)) {
        case ERRCODE_OPERATOR_INTERVENTION:             // 57: cancel, timeout, shutdown
        case ERRCODE_CONNECTION_EXCEPTION:              // 08
        case ERRCODE_INSUFFICIENT_RESOURCES:            // 53
        case ERRCODE_PROGRAM_LIMIT_EXCEEDED:            // 54
        case ERRCODE_TRANSACTION_ROLLBACK:              // 40: serialization, deadlock
        case ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE:  // 55: lock_timeout
        case ERRCODE_SYSTEM_ERROR:                      // 58
        case ERRCODE_INTERNAL_ERROR:                    // XX
        case ERRCODE_INVALID_TRANSACTION_STATE:         // 25
            return false;
        default: return true;
    }
}

bool error_is_remembered(int sqlerrcode) {
    // A privilege error can end by a membership granted, which moves no
    // counter the entry depends on.
    return error_belongs_to_query(sqlerrcode) && sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE;
}

bool store_result(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const Result &r,
                  uint64_t *pinned) {
    if (r.spilled || r.len > uint64_t(guc_max_result_size_kb) * 1024) {
        sh.stats.add(slot, kTooLarge);
        return false;
    }
    EntryParts parts;
    parts.hash = key.hash;
    parts.key = key.key;
    parts.key_len = key.key_len;
    parts.deps = a.deps;
    parts.ndeps = a.ndeps;
    parts.meta = a.meta;
    parts.meta_len = a.meta_len;
    parts.payload = r.payload;
    parts.payload_len = r.len;
    parts.stats_slot = slot;
    parts.stamped_at = a.stamped_at;
    if (sh.store.insert(parts, ~uint64_t(0), pinned) == InsertStatus::Stored) return true;
    sh.stats.add(slot, kTooLarge);
    return false;
}

Result compute_and_store(const Call &call, const Encoded &key, uint32_t slot, bool bypass, uint64_t *pinned,
                         bool wait_for_commits) {
    Shared &sh = shared_state();
    if (pinned) *pinned = 0;
    Analysis analysis{};
    instr_time start, elapsed;
    sh.stats.add(slot, kComputations);  // counted even if the query then fails
    INSTR_TIME_SET_CURRENT(start);
    Result r = guc_error_ttl_ms > 0 && !bypass
                   ? compute_remembering_errors(call, key, slot, &analysis, wait_for_commits)
                   : compute(call, key, &analysis, bypass, wait_for_commits);
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    sh.stats.add(slot, kComputeNanos, uint64_t(INSTR_TIME_GET_DOUBLE(elapsed) * 1e9));

    if (!storable(analysis, bypass)) {
        sh.stats.add(slot, kBypasses);
    } else {
        sh.stats.add(slot, kMisses);
        store_result(sh, slot, key, analysis, r, pinned);
    }
    return r;
}

}  // namespace pgmemo
