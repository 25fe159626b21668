// A call's statement, ready to run (prepared_query.hpp).
#include "compute/prepared_query.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "parser/parse_param.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
}

#include "invalidate/catalog_changes.hpp"
#include "deltas/delta_qualify.hpp"
#include "compute/learned_reads.hpp"
#include "query_errors.hpp"
#include "compute/scope_reads.hpp"
#include "compute/call_plans.hpp"

namespace pgmemo {

namespace {

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
    to->scope_values = static_cast<List *>(copyObjectImpl(from.scope_values));
    to->settings = from.settings_len ? static_cast<char *>(palloc(from.settings_len)) : nullptr;
    if (from.settings_len) memcpy(to->settings, from.settings, from.settings_len);
}

constexpr char kCountPrefix[] = "SELECT count(*) FROM (\n";

// The SQL text to prepare: the query, or the count of its rows. The text is
// wrapped only after it proved to be one SELECT, and without its semicolon
// and what follows it ("SELECT 1; -- note"). *errors: where an error in it
// points (the statement is the text's first, so its positions are the
// text's).
const char *statement_text(const Call &call, TextErrors *errors) {
    char *statement = nullptr;  // wanted only to wrap a count
    const char *sql = text_to_cstring(call.query);
    *errors = TextErrors{sql, 0};
    ErrorContextCallback callback{error_context_stack, point_into_text, errors};
    error_context_stack = &callback;
    check_single_select(sql, call.kind == Kind::Count ? &statement : nullptr);
    error_context_stack = callback.previous;
    if (call.kind != Kind::Count) return sql;
    errors->skipped = int(strlen(kCountPrefix));
    return psprintf("%s%s\n) AS pg_memo_count", kCountPrefix, statement);
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
// A registered statement's parameters come typed by its client (vp holds
// those types already, fixed): parsed with them, as the client's was.
SPIPlanPtr prepare_text(const char *sql, VarParams *vp, bool types_fixed) {
    SPIPlanPtr plan = types_fixed ? SPI_prepare_cursor(sql, vp->count, vp->types, CURSOR_OPT_PARALLEL_OK)
                                  : SPI_prepare_params(sql, setup_var_params, vp, CURSOR_OPT_PARALLEL_OK);
    if (plan && !types_fixed) {
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

// A registered statement served to an unchanged client must return its rows
// where it would without pg_memo: a relation its functions were seen to
// read that a miss refuses (an unwatched table, say) makes it computed and
// not stored, instead of raising the refusal memo.list raises.
void analyze_learned(const Call &call, Query *query, const char *sql, const LearnedReads &learned,
                     Analysis *analysis) {
    auto analyze_with_learned = [&] {
        analyze_query(query, sql, call.search_path, call.search_path_len, learned.checks, learned.n, analysis);
    };
    if (!call.param_types || learned.n == 0) return analyze_with_learned();
    ErrorData *refusal = error_of_subtransaction(analyze_with_learned);
    if (!refusal) return;
    if (!error_explains_refusal(refusal->sqlerrcode)) ReThrowError(refusal);
    analyze_query(query, sql, call.search_path, call.search_path_len, nullptr, 0, analysis);
    analysis->uncacheable = Uncacheable::ReadsUnnamed;
}

// Parses, analyzes and plans the text inside the SPI connection. The parser
// checks USAGE on the schemas of qualified names: noted for the hits to
// check again. learned: what the statement's functions were seen to read.
SPIPlanPtr parse_and_analyze(const Call &call, Analysis *analysis, VarParams *vp, MemoryContext caller_ctx,
                             const LearnedReads &learned) {
    TextErrors text_errors;
    const char *sql = statement_text(call, &text_errors);
    ErrorContextCallback callback{error_context_stack, point_into_text, &text_errors};
    error_context_stack = &callback;
    start_schema_lookups();
    SPIPlanPtr plan = prepare_text(sql, vp, call.param_types != nullptr);
    stop_schema_lookups();
    error_context_stack = callback.previous;
    auto *source = static_cast<CachedPlanSource *>(linitial(SPI_plan_get_plan_sources(plan)));
    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    Query *query = linitial_node(Query, source->query_list);
    analyze_learned(call, query, sql, learned, analysis);
    // Deltas carry a selection of one table: a function reading another
    // would change the result without a record for it. They apply its WHERE
    // to the written rows, as the session that carries sees its settings:
    // not for a statement that reads settings (nor for one under policies,
    // delta_qualify.cpp).
    analysis->delta_relid =
        learned.n > 0 || analysis->settings_len > 0 ? InvalidOid : delta_relation(query, call.kind);
    // A scope too: a function reading the table would read other scopes,
    // and so may a SQL function whose body the analysis read (a policy's).
    analysis->nscopes = 0;
    analysis->scope_values = NIL;
    if (learned.n == 0 && !analysis->bodies_read_relations) find_scopes(query, analysis);
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
        ParamListInfo params = bind_parameters(call, VarParams{kept->param_types, kept->nparams});
        MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
        copy_analysis(kept->analysis, analysis);
        add_scope_stamps(analysis, params);
        MemoryContextSwitchTo(spi_ctx);
        return PreparedQuery{kept->plan, params, kept, statement_key};
    }
    // The parser grows this array with repalloc, which keeps it in our
    // context: SPI frees its own execution memory when prepare returns.
    VarParams vp{static_cast<Oid *>(MemoryContextAllocZero(caller_ctx, sizeof(Oid) * (call.nparams + 1))), 0};
    if (call.param_types) {
        memcpy(vp.types, call.param_types, sizeof(Oid) * call.nparams);
        vp.count = call.nparams;
    }
    SPIPlanPtr plan = parse_and_analyze(call, analysis, &vp, caller_ctx, learned);
    ParamListInfo params = bind_parameters(call, vp);
    if (reuse && analysis->uncacheable == Uncacheable::No && !analysis->plan_folds_settings)
        kept = keep_statement(statement_key, plan, vp.types, vp.count, *analysis, invalidations_seen);
    // Per call, after the statement kept its analysis: the values' scopes.
    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    add_scope_stamps(analysis, params);
    MemoryContextSwitchTo(spi_ctx);
    return PreparedQuery{plan, params, kept, statement_key};
}

Query *prepared_query_tree(SPIPlanPtr plan) {
    auto *source = static_cast<CachedPlanSource *>(linitial(SPI_plan_get_plan_sources(plan)));
    return linitial_node(Query, source->query_list);
}

}  // namespace pgmemo
