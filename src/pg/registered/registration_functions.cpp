// Registered statements (issue 30): memo.cache_statement
// and memo.uncache_statement keep memo.statements, one row per statement by
// PostgreSQL's query identifier. A statement is registered only if a miss
// would cache it (one SELECT over watched tables, nothing refused) and by a
// superuser or the owner of every relation it reads; registering changes no
// privilege. The planner's side is registered/README.md.
#include "admission/statement_shape.hpp"
#include "call.hpp"
#include "shared_state.hpp"
#include "compat.hpp"
#include "compute/analysis.hpp"
#include "query_errors.hpp"
#include "invalidate/catalog_changes.hpp"
#include "invalidate/watch.hpp"
#include "registered/statement_text.hpp"
#include "serve/call_options.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "rewrite/rewriteHandler.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(pg_memo_cache_statement);
PG_FUNCTION_INFO_V1(pg_memo_cache_statement_by_id);
PG_FUNCTION_INFO_V1(pg_memo_uncache_statement);
PG_FUNCTION_INFO_V1(pg_memo_uncache_statement_by_id);
PG_FUNCTION_INFO_V1(pg_memo_explain_cache);
PG_FUNCTION_INFO_V1(pg_memo_statement_shape);
Datum pg_memo_cache_statement(PG_FUNCTION_ARGS);
Datum pg_memo_cache_statement_by_id(PG_FUNCTION_ARGS);
Datum pg_memo_uncache_statement(PG_FUNCTION_ARGS);
Datum pg_memo_uncache_statement_by_id(PG_FUNCTION_ARGS);
Datum pg_memo_explain_cache(PG_FUNCTION_ARGS);
Datum pg_memo_statement_shape(PG_FUNCTION_ARGS);
}

namespace pgmemo {
namespace {

// What a statement is, once checked as a miss would analyze it.
struct CheckedStatement {
    const char *text;  // the one SELECT, without a semicolon and what follows
    uint64 query_id;   // PostgreSQL's identifier of it
    uint64 shape_id;   // its shape (admission/statement_shape.hpp)
    Analysis analysis;
};

// Parses and analyzes the text as PostgreSQL parses a client's statement
// whose parameters' types the client left to the server.
Query *analyze_text(const char *text) {
    List *raw = pg_parse_query(text);
    Oid *param_types = nullptr;
    int nparams = 0;
    start_schema_lookups();
    Query *query = parse_analyze_varparams(linitial_node(RawStmt, raw), text, &param_types, &nparams, nullptr);
    stop_schema_lookups();
    return query;
}

// Every table the statement reads is watched: checked for the tables it
// names before the analysis (whose error speaks of running uncached), and
// after it for all (with pg_memo.unwatched_tables = compute the analysis
// lets an unwatched one through, which a registration must not).
void check_watched(const Oid *relids, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        Oid relid = relids[i];
        refuse_system_catalog(relid);  // never "watch pg_catalog.pg_type"
        char kind = get_rel_relkind(relid);
        if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE) continue;
        Relation rel = table_open(relid, AccessShareLock);
        WatchState state = relation_watch_state(rel);
        table_close(rel, NoLock);
        if (state != WatchState::NotWatched) continue;
        char *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("cannot register a statement over table %s: it is not watched by pg_memo", name),
                        errhint("Run SELECT memo.watch('%s'); as its owner first.", name)));
    }
}

// A superuser, or the owner of every relation the statement reads.
void check_may_register(const Analysis &analysis, const char *what) {
    if (superuser()) return;
    for (uint32_t i = 0; i < analysis.nrelids; i++) {
        Oid relid = analysis.relids[i];
        if (compat_relation_owner_ok(relid, GetUserId())) continue;
        char *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to %s a statement over %s", what, name),
                        errdetail("Only a superuser or the owner of every relation a statement reads may %s it.",
                                  what)));
    }
}

// The tables the statement names in its own range table.
void check_named_tables_watched(const Query *query) {
    ListCell *lc;
    foreach (lc, query->rtable) {
        auto *rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_RELATION) check_watched(&rte->relid, 1);
    }
}

// The one SELECT of query_text without its semicolon, and its analysis.
Query *parse_registered(const char *query_text, char **statement) {
    // An error in the registered text points into it, not into the
    // statement that called memo.cache_statement.
    TextErrors text_errors{query_text, 0};
    ErrorContextCallback callback{error_context_stack, point_into_text, &text_errors};
    error_context_stack = &callback;
    check_single_select(query_text, statement);
    Query *query = analyze_text(*statement);
    error_context_stack = callback.previous;
    return query;
}

CheckedStatement check_statement(const char *query_text, const char *what) {
    CheckedStatement s{};
    char *statement = nullptr;
    Query *query = parse_registered(query_text, &statement);
    s.text = statement;
    check_named_tables_watched(query);
    Oid path[kMaxSearchPath];
    int path_len = effective_search_path(path);
    // Analyzed rewritten, as a miss analyzes it: a view's base tables (a
    // catalog behind information_schema, an unwatched table) are checked.
    List *rewritten = QueryRewrite(static_cast<Query *>(copyObjectImpl(query)));
    Query *planned = list_length(rewritten) == 1 ? linitial_node(Query, rewritten) : query;
    analyze_query(planned, statement, path, path_len, nullptr, 0, &s.analysis);
    check_watched(s.analysis.relids, s.analysis.nrelids);
    check_may_register(s.analysis, what);
    s.query_id = planned_query_id(query, statement);
    s.shape_id = statement_shape(planned, statement);  // the rewritten query the planner hook sees
    return s;
}

// Whether memo.statements has 1.3's shape_id column.
bool statements_have_shapes() {
    Oid table = get_relname_relid("statements", get_namespace_oid(kExtensionSchema, false));
    return get_attnum(table, "shape_id") != InvalidAttrNumber;
}

void check_not_negative(FunctionCallInfo fcinfo, int arg, const char *name) {
    if (!PG_ARGISNULL(arg)) check_option_not_negative(PG_GETARG_DATUM(arg), name);
}

// Runs one statement of memo.statements' keeping as the table's owner (the
// caller was checked; the table is not the caller's to write), inside the
// caller's transaction. An ERROR restores the user with the transaction.
int run_as_owner(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls) {
    Oid table = get_relname_relid("statements", get_namespace_oid(kExtensionSchema, false));
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "pg_memo: memo.statements is missing");
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    Oid saved_user;
    int saved_context;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_memo: SPI_connect failed");
    int ret = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
    if (ret < 0) elog(ERROR, "pg_memo: keeping memo.statements failed: %s", SPI_result_code_string(ret));
    int processed = int(SPI_processed);
    SPI_finish();
    SetUserIdAndSecContext(saved_user, saved_context);
    return processed;
}

// Arguments from 1 on: cache_name, max_staleness, stale_on_error, error_ttl.
Datum register_statement(FunctionCallInfo fcinfo, const CheckedStatement &s) {
    check_not_negative(fcinfo, 2, "max_staleness");
    check_not_negative(fcinfo, 3, "stale_on_error");
    check_not_negative(fcinfo, 4, "error_ttl");
    text *cache_name = PG_ARGISNULL(1) ? cstring_to_text(psprintf("statement.%lld", (long long)int64(s.query_id)))
                                       : PG_GETARG_TEXT_PP(1);
    (void)stats_slot_for(VARDATA_ANY(cache_name), VARSIZE_ANY_EXHDR(cache_name));  // 22023 unless 1 to 63 bytes
    Datum *relids = static_cast<Datum *>(palloc(sizeof(Datum) * (s.analysis.nrelids + 1)));
    for (uint32_t i = 0; i < s.analysis.nrelids; i++) relids[i] = ObjectIdGetDatum(s.analysis.relids[i]);
    ArrayType *relations = construct_array(relids, int(s.analysis.nrelids), REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT);
    Oid types[] = {INT8OID,           TEXTOID,          TEXTOID,    INTERVALOID, INTERVALOID,
                   INTERVALOID,       REGCLASSARRAYOID, REGROLEOID, INT8OID};
    Datum values[] = {Int64GetDatum(int64(s.query_id)), PointerGetDatum(cache_name),
                      CStringGetTextDatum(s.text),      PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2),
                      PG_ARGISNULL(3) ? 0 : PG_GETARG_DATUM(3), PG_ARGISNULL(4) ? 0 : PG_GETARG_DATUM(4),
                      PointerGetDatum(relations),       ObjectIdGetDatum(GetUserId()),
                      Int64GetDatum(int64(s.shape_id))};
    char nulls[] = {' ', ' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ', PG_ARGISNULL(3) ? 'n' : ' ',
                    PG_ARGISNULL(4) ? 'n' : ' ', ' ', ' ', ' ', '\0'};
    // 1.3's SQL keeps the shape too; 1.2's has no column for it.
    bool shapes = statements_have_shapes();
    char *sql = psprintf("INSERT INTO memo.statements AS s (query_id, cache_name, query, max_staleness, "
                         "stale_on_error, error_ttl, relations, registered_by%s) "
                         "VALUES ($1, $2, $3, $4, $5, $6, $7, $8%s) "
                         "ON CONFLICT (query_id) DO UPDATE SET cache_name = excluded.cache_name, "
                         "query = excluded.query, max_staleness = excluded.max_staleness, "
                         "stale_on_error = excluded.stale_on_error, error_ttl = excluded.error_ttl, "
                         "relations = excluded.relations, registered_by = excluded.registered_by, "
                         "registered_at = now()%s",
                         shapes ? ", shape_id" : "", shapes ? ", $9" : "",
                         shapes ? ", shape_id = excluded.shape_id" : "");
    run_as_owner(sql, shapes ? 9 : 8, types, values, nulls);
    PG_RETURN_INT64(int64(s.query_id));
}

// The text pg_stat_statements keeps for a query identifier in this
// database (constants replaced by $n), or nullptr.
char *text_of_query_id(int64 query_id) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_memo: SPI_connect failed");
    int ret = SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_stat_statements'", true, 1);
    if (ret != SPI_OK_SELECT || SPI_processed == 0) {
        SPI_finish();
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("cannot register a statement by its query identifier without pg_stat_statements"),
                        errhint("Register it by its text: SELECT memo.cache_statement('SELECT ...');")));
    }
    Oid types[] = {INT8OID, OIDOID};
    Datum values[] = {Int64GetDatum(query_id), ObjectIdGetDatum(MyDatabaseId)};
    ret = SPI_execute_with_args("SELECT query FROM pg_stat_statements WHERE queryid = $1 AND dbid = $2 "
                                "AND query IS NOT NULL LIMIT 1",
                                2, types, values, nullptr, true, 1);
    char *text = nullptr;
    if (ret == SPI_OK_SELECT && SPI_processed == 1) {
        char *found = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        if (found) text = MemoryContextStrdup(CurTransactionContext, found);
    }
    SPI_finish();
    return text;
}

}  // namespace
}  // namespace pgmemo

// memo.cache_statement(query text, cache_name, max_staleness, stale_on_error,
// error_ttl): registers the statement; returns its query identifier.
Datum pg_memo_cache_statement(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("query must not be NULL")));
    pgmemo::CheckedStatement s = pgmemo::check_statement(text_to_cstring(PG_GETARG_TEXT_PP(0)), "register");
    return pgmemo::register_statement(fcinfo, s);
}

// memo.cache_statement(query_id bigint, ...): the statement pg_stat_statements
// shows under that identifier, checked as its text; registered under the
// identifier given, which is the one its clients' statements have.
Datum pg_memo_cache_statement_by_id(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("query_id must not be NULL")));
    int64 query_id = PG_GETARG_INT64(0);
    char *text = pgmemo::text_of_query_id(query_id);
    if (!text)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("pg_stat_statements has no statement with query identifier %lld in this database",
                               (long long)query_id),
                        errhint("Look it up in pg_stat_statements (queryid), as a role that may read its text.")));
    pgmemo::CheckedStatement s = pgmemo::check_statement(text, "register");
    s.query_id = uint64(query_id);
    return pgmemo::register_statement(fcinfo, s);
}

namespace pgmemo {
namespace {

// Removes the registration of query_id when the caller may (a superuser,
// the role that registered it, or the owner of every relation it reads);
// false if there is none the caller may remove.
bool unregister(int64 query_id) {
    Oid types[] = {INT8OID, OIDOID, BOOLOID};
    Datum values[] = {Int64GetDatum(query_id), ObjectIdGetDatum(GetUserId()), BoolGetDatum(superuser())};
    int removed = run_as_owner(
        "DELETE FROM memo.statements WHERE query_id = $1 AND ($3 OR registered_by = $2 OR "
        "(SELECT bool_and(pg_catalog.pg_has_role($2, c.relowner, 'USAGE')) FROM pg_catalog.unnest(relations) r "
        "JOIN pg_catalog.pg_class c ON c.oid = r))",
        3, types, values, nullptr);
    return removed > 0;
}

}  // namespace
}  // namespace pgmemo

Datum pg_memo_uncache_statement(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("query must not be NULL")));
    // Only its identifier: the statement may no longer be one that
    // registers (a table unwatched or dropped since).
    char *statement = nullptr;
    Query *query = pgmemo::parse_registered(text_to_cstring(PG_GETARG_TEXT_PP(0)), &statement);
    PG_RETURN_BOOL(pgmemo::unregister(int64(pgmemo::planned_query_id(query, statement))));
}

Datum pg_memo_uncache_statement_by_id(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("query_id must not be NULL")));
    PG_RETURN_BOOL(pgmemo::unregister(PG_GETARG_INT64(0)));
}

namespace pgmemo {
namespace {

// The checks of memo.cache_statement in a subtransaction: their error, if
// one says why the statement would not be cached, copied into context;
// nullptr and *query_id if none. Other errors (a cancel, a shortage) are
// raised again.
ErrorData *registration_refusal(const char *query_text, uint64 *query_id) {
    *query_id = 0;
    ErrorData *error =
        error_of_subtransaction([&] { *query_id = check_statement(query_text, "register").query_id; });
    if (error && !error_explains_refusal(error->sqlerrcode)) ReThrowError(error);
    return error;
}

}  // namespace
}  // namespace pgmemo

// memo.explain_cache(query text): whether memo.cache_statement would take
// the statement, and if not, why (its SQLSTATE, message and hint), without
// running it.
Datum pg_memo_explain_cache(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "pg_memo: memo.explain_cache must return a record");
    uint64 query_id = 0;
    ErrorData *error = pgmemo::registration_refusal(text_to_cstring(PG_GETARG_TEXT_PP(0)), &query_id);
    Datum values[5];
    bool nulls[5] = {false, error != nullptr, error == nullptr, error == nullptr, true};
    values[0] = BoolGetDatum(error == nullptr);
    values[1] = Int64GetDatum(int64(query_id));
    if (error) {
        values[2] = CStringGetTextDatum(unpack_sql_state(error->sqlerrcode));
        values[3] = CStringGetTextDatum(error->message);
        nulls[4] = error->hint == nullptr;
        if (error->hint) values[4] = CStringGetTextDatum(error->hint);
    }
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

// memo.statement_shape(query text), since 1.3: the shape a registration of
// the statement serves (admission/statement_shape.hpp), as the planner
// hook computes it for a client's statement.
Datum pg_memo_statement_shape(PG_FUNCTION_ARGS) {
    char *statement = nullptr;
    Query *query = pgmemo::parse_registered(text_to_cstring(PG_GETARG_TEXT_PP(0)), &statement);
    PG_RETURN_INT64(int64(pgmemo::planned_shape(query, statement)));
}
