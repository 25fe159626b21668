// memo.list, memo.list_as and memo.count: look up, or compute and store.
//
// Hit path: build the key, one shared-lock lookup that copies the entry
// out, re-check privileges, hand the rows over. Nothing is parsed, planned
// or locked.
// Miss path: parse, analyze (dependencies, refusals), read the generations,
// THEN execute with a fresh snapshot (volatile SPI), store, hand over.
#include "pg_memo.hpp"

extern "C" {
#include "access/gin.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_expr.h"
#include "parser/parse_param.h"
#include "parser/parser.h"
#include "pgtime.h"
#include "portability/instr_time.h"
#include "storage/sinval.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/plancache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
#include "utils/xml.h"

PG_FUNCTION_INFO_V1(pg_memo_list);
PG_FUNCTION_INFO_V1(pg_memo_list_as);
PG_FUNCTION_INFO_V1(pg_memo_count);
Datum pg_memo_list(PG_FUNCTION_ARGS);
Datum pg_memo_list_as(PG_FUNCTION_ARGS);
Datum pg_memo_count(PG_FUNCTION_ARGS);
}

#include "hash.hpp"
#include "key.hpp"
#include "memoize.hpp"
#include "result_format.hpp"

namespace pgmemo {

enum class Kind : char { List = 'L', Count = 'C' };

constexpr int kMaxSearchPath = 32;
// As many as a prepared statement can take over PostgreSQL's protocol. Far
// more would not fit the key's field list in one allocation.
constexpr int kMaxParams = 65535;

// Everything a call is about, read from its arguments once.
struct Call {
    Kind kind;
    text *cache_name;
    text *query;  // made a C string only when the call computes
    int nparams;
    Datum *param_values;  // text
    bool *param_nulls;
    Oid search_path[kMaxSearchPath];
    int search_path_len;
};

namespace {

// Session settings that change what the query text or a parameter means,
// or which rows it returns.
struct KeyContext {
    Oid dbid;
    Oid userid;
    int32 date_style;
    int32 date_order;
    int32 interval_style;
    int32 standard_strings;
    int32 null_equals;
    int32 bytea_output;        // output functions marked immutable that read
    int32 extra_float_digits;  // a setting: they change ::text casts
    int32 quote_all_identifiers;  // quote_ident(), marked immutable
    int32 array_nulls;            // array input: is {NULL} a NULL or the text NULL
    int32 xml_option;             // xml input: document or content
    int32 xml_binary;             // bytea inside XML: base64 or hex
    int32 gin_fuzzy_search_limit; // a GIN index scan returns only some rows
};

[[noreturn]] void null_argument(const char *name) {
    ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", name)));
    pg_unreachable();
}

// The schemas names are looked up in, in order, into path
// (kMaxSearchPath entries); returns how many.
int effective_search_path(Oid *path) {
    // The session's temporary schema is searched first, but is not part of
    // the active path array: a temporary table could shadow a name.
    Oid temp_namespace, temp_toast_namespace;
    GetTempNamespaceState(&temp_namespace, &temp_toast_namespace);
    int n = 0;
    if (OidIsValid(temp_namespace)) path[n++] = temp_namespace;
    int path_len = fetch_search_path_array(path + n, kMaxSearchPath - n);
    if (n + path_len > kMaxSearchPath)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("pg_memo supports a search_path of at most %d schemas, counting "
                               "pg_catalog and the temporary schema", kMaxSearchPath)));
    return n + path_len;
}

void read_arguments(FunctionCallInfo fcinfo, int first, Kind kind, Call *call) {
    call->kind = kind;
    if (PG_ARGISNULL(first)) null_argument("cache_name");
    if (PG_ARGISNULL(first + 1)) null_argument("query");
    if (PG_ARGISNULL(first + 2)) null_argument("params");
    call->cache_name = PG_GETARG_TEXT_PP(first);
    call->query = PG_GETARG_TEXT_PP(first + 1);

    ArrayType *params = PG_GETARG_ARRAYTYPE_P(first + 2);
    if (ARR_NDIM(params) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("params must be a one-dimensional text array")));
    if (ARR_ELEMTYPE(params) != TEXTOID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("params must be a text array")));
    int nitems = ArrayGetNItems(ARR_NDIM(params), ARR_DIMS(params));
    if (nitems > kMaxParams)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("params has %d elements, more than the %d parameters pg_memo supports",
                               nitems, kMaxParams)));
    deconstruct_array(params, TEXTOID, -1, false, TYPALIGN_INT, &call->param_values,
                      &call->param_nulls, &call->nparams);

    call->search_path_len = effective_search_path(call->search_path);
}

// Whether the search path is still the one the call was keyed with: a
// commit (a new schema named like the role, a revoked USAGE) may have
// changed it since the arguments were read.
bool same_search_path(const Call &call) {
    Oid path[kMaxSearchPath];
    int len = effective_search_path(path);
    return len == call.search_path_len && memcmp(path, call.search_path, sizeof(Oid) * len) == 0;
}

// timezone_abbreviations' value. PostgreSQL exports no variable for it, and
// GetConfigOption looks the setting up by name (a binary search with
// case-insensitive compares): on every call, twice per directory hit. The
// setting's variable is found once instead (built-in settings never move);
// its value is read on each call.
const char *timezone_abbreviations() {
    static char **variable = nullptr;
    if (!variable) {
        struct config_generic **settings = get_guc_variables();
        for (int i = 0, n = GetNumConfigOptions(); i < n && !variable; i++)
            if (settings[i]->vartype == PGC_STRING &&
                pg_strcasecmp(settings[i]->name, "timezone_abbreviations") == 0)
                variable = reinterpret_cast<struct config_string *>(settings[i])->variable;
        if (!variable) elog(ERROR, "pg_memo: the setting timezone_abbreviations is missing");
    }
    return *variable ? *variable : "";
}

// kind, context, timezone, search path, cache name, query, timezone
// abbreviations, lc_monetary (the last two change timestamptz and money input)
constexpr int kFixedKeyFields = 8;

Encoded encode_call(const Call &call) {
    KeyContext ctx;
    memset(&ctx, 0, sizeof ctx);  // padding must not reach the key bytes
    ctx.dbid = MyDatabaseId;
    ctx.userid = GetUserId();
    ctx.date_style = DateStyle;
    ctx.date_order = DateOrder;
    ctx.interval_style = IntervalStyle;
    ctx.standard_strings = standard_conforming_strings;
    ctx.null_equals = Transform_null_equals;
    ctx.bytea_output = bytea_output;
    ctx.extra_float_digits = extra_float_digits;
    ctx.quote_all_identifiers = quote_all_identifiers;
    ctx.array_nulls = Array_nulls;
    ctx.xml_option = xmloption;
    ctx.xml_binary = xmlbinary;
    ctx.gin_fuzzy_search_limit = GinFuzzySearchLimit;
    const char *tz = pg_get_timezone_name(session_timezone);
    const char *tz_abbreviations = timezone_abbreviations();
    char kind = char(call.kind);

    const int nfixed = kFixedKeyFields;
    int nfields = nfixed + call.nparams;
    auto *fields = static_cast<KeyField *>(palloc(sizeof(KeyField) * nfields));
    fields[0] = KeyField{&kind, 1, false};
    fields[1] = KeyField{reinterpret_cast<const char *>(&ctx), sizeof ctx, false};
    fields[2] = KeyField{tz, uint32_t(strlen(tz)), false};
    fields[3] = KeyField{reinterpret_cast<const char *>(call.search_path),
                         uint32_t(sizeof(Oid) * call.search_path_len), false};
    fields[4] = KeyField{VARDATA_ANY(call.cache_name), uint32_t(VARSIZE_ANY_EXHDR(call.cache_name)), false};
    fields[5] = KeyField{VARDATA_ANY(call.query), uint32_t(VARSIZE_ANY_EXHDR(call.query)), false};
    fields[6] = KeyField{tz_abbreviations, uint32_t(strlen(tz_abbreviations)), false};
    fields[7] = KeyField{locale_monetary, uint32_t(strlen(locale_monetary)), false};
    for (int i = 0; i < call.nparams; i++) {
        if (call.param_nulls[i]) {
            fields[nfixed + i] = KeyField{nullptr, 0, true};
        } else {
            text *t = DatumGetTextPP(call.param_values[i]);
            fields[nfixed + i] = KeyField{VARDATA_ANY(t), uint32_t(VARSIZE_ANY_EXHDR(t)), false};
        }
    }
    size_t key_size = encoded_key_size(fields, nfields);
    if (key_size > MaxAllocSize)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("the cache key of this call would take %zu bytes, more than the %zu pg_memo supports",
                               key_size, size_t(MaxAllocSize)),
                        errdetail("The key holds the cache name, the query text and the parameters.")));
    Encoded e;
    e.key_len = uint32_t(key_size);
    e.key = static_cast<char *>(palloc(e.key_len));
    encode_key(fields, nfields, e.key);
    e.hash = pgmemo::hash_bytes(e.key, e.key_len);
    return e;
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
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
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

// Encodes the SPI result into a payload allocated in ctx.
Result encode_spi_result(Kind kind, MemoryContext ctx) {
    Result r{};
    SPITupleTable *tt = SPI_tuptable;
    if (kind == Kind::Count) {
        bool isnull;
        Datum d = SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull);
        r.len = sizeof(ResultHeader);
        r.payload = static_cast<char *>(MemoryContextAlloc(ctx, r.len));
        ResultWriter w(r.payload, r.len);
        w.write_count(isnull ? 0 : DatumGetInt64(d));
        return r;
    }

    TupleDesc desc = tt->tupdesc;
    uint64 nrows = SPI_processed;
    // Out-of-line values point into TOAST tables; a stored row must carry
    // its own bytes.
    HeapTuple *rows = static_cast<HeapTuple *>(palloc(sizeof(HeapTuple) * (nrows ? nrows : 1)));
    size_t size = result_prefix_size(uint32_t(desc->natts));
    for (uint64 i = 0; i < nrows; i++) {
        HeapTuple t = tt->vals[i];
        rows[i] = HeapTupleHasExternal(t) ? toast_flatten_tuple(t, desc) : t;
        size += row_space(rows[i]->t_len);
    }
    if (size > MaxAllocHugeSize || size > UINT32_MAX)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("query result is too large")));

    auto *cols = static_cast<ColumnType *>(palloc(sizeof(ColumnType) * (desc->natts ? desc->natts : 1)));
    for (int i = 0; i < desc->natts; i++)
        cols[i] = ColumnType{TupleDescAttr(desc, i)->atttypid, TupleDescAttr(desc, i)->atttypmod};

    r.len = uint32_t(size);
    r.payload = static_cast<char *>(MemoryContextAllocHuge(ctx, size));
    ResultWriter w(r.payload, size);
    w.begin_rows(cols, uint32_t(desc->natts));
    for (uint64 i = 0; i < nrows; i++) w.add_row(rows[i]->t_data, rows[i]->t_len);
    return r;
}

// Whether a result computed with this analysis may be stored.
bool storable(const Analysis &analysis, bool bypass) {
    return !bypass && analysis.uncacheable == Uncacheable::No &&
           !own_writes().intersects(analysis.deps, analysis.ndeps);
}

// The query parsed, analyzed and with its parameters bound, inside an SPI
// connection.
struct PreparedQuery {
    SPIPlanPtr plan;
    ParamListInfo params;
};

// Connects to SPI, parses and analyzes the query, and binds its parameters.
PreparedQuery prepare_query(const Call &call, Analysis *analysis) {
    MemoryContext caller_ctx = CurrentMemoryContext;
    char *statement = nullptr;  // wanted only to wrap a count
    const char *sql = text_to_cstring(call.query);
    check_single_select(sql, call.kind == Kind::Count ? &statement : nullptr);

    if (call.kind == Kind::Count) {
        // The count of the query's rows, computed by the server: the text is
        // wrapped only after it proved to be one SELECT, and without its
        // semicolon and what follows it ("SELECT 1; -- note").
        sql = psprintf("SELECT count(*) FROM (\n%s\n) AS pg_memo_count", statement);
    }

    // The parser grows this array with repalloc, which keeps it in our
    // context: SPI frees its own execution memory when prepare returns.
    VarParams vp{static_cast<Oid *>(palloc0(sizeof(Oid))), 0};
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    // Parallel plans allowed, as for the same query run through SPI_execute
    // or PL/pgSQL's EXECUTE: a miss must not be slower than the query itself.
    // The parser checks USAGE on the schemas of qualified names: noted for
    // the hits to check again.
    start_schema_lookups();
    SPIPlanPtr plan = SPI_prepare_params(sql, setup_var_params, &vp, CURSOR_OPT_PARALLEL_OK);
    stop_schema_lookups();
    if (!plan)
        elog(ERROR, "SPI_prepare_params failed: %s", SPI_result_code_string(SPI_result));
    List *sources = SPI_plan_get_plan_sources(plan);
    if (list_length(sources) != 1) check_single_select(sql);  // raises the error
    auto *source = static_cast<CachedPlanSource *>(linitial(sources));
    if (list_length(source->query_list) != 1)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_memo cannot cache a query that rewrite rules expand into several")));

    MemoryContext spi_ctx = MemoryContextSwitchTo(caller_ctx);
    analyze_query(linitial_node(Query, source->query_list), sql, call.search_path, call.search_path_len,
                  analysis);
    MemoryContextSwitchTo(spi_ctx);

    return PreparedQuery{plan, bind_parameters(call, vp)};
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
Result compute(const Call &call, Analysis *analysis, bool bypass, bool wait_for_commits) {
    MemoryContext caller_ctx = CurrentMemoryContext;
    for (int analyses = 1;; analyses++) {
        AcceptInvalidationMessages();
        uint64 invalidations_seen = SharedInvalidMessageCounter;
        // The key holds the path the arguments were read with.
        bool path_moved = !same_search_path(call);
        PreparedQuery q = prepare_query(call, analysis);
        if (path_moved) analysis->uncacheable = Uncacheable::CatalogsChanging;  // computed, not stored

        // A commit in progress would make the result stale as soon as it
        // lands: wait for it (on the first analysis only). What it changed
        // in the catalogs shows below, as invalidations.
        if (analyses == 1 && wait_for_commits && storable(*analysis, bypass))
            wait_for_commits_in_progress(*analysis);

        // The order is the protocol: generations first, snapshot second. A
        // commit in between leaves this entry born stale, never stale forever.
        read_generations(analysis);
        AcceptInvalidationMessages();
        if (SharedInvalidMessageCounter != invalidations_seen && storable(*analysis, bypass)) {
            if (analyses < kMaxAnalyses) {
                SPI_finish();
                continue;
            }
            analysis->uncacheable = Uncacheable::CatalogsChanging;  // computed, not stored
        }

        SPIExecuteOptions options;
        memset(&options, 0, sizeof options);
        options.params = q.params;
        options.read_only = false;  // volatile: a new snapshot, not the caller's
        int rc = SPI_execute_plan_extended(q.plan, &options);
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "pg_memo: unexpected SPI result %s", SPI_result_code_string(rc));

        Result r = encode_spi_result(call.kind, caller_ctx);
        SPI_finish();
        return r;
    }
}

bool store_result(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const Result &r,
                  uint64_t *pinned) {
    if (r.len > uint64_t(guc_max_result_size_kb) * 1024) {
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
    if (sh.store.insert(parts, ~uint64_t(0), pinned) == InsertStatus::Stored) return true;
    sh.stats.add(slot, kTooLarge);
    return false;
}

// The memoized result of a call: from the cache, or computed (through a
// flight when singleflight is on) and stored when allowed.
Result memoize(const Call &call) {
    Shared &sh = shared_state();
    uint32_t slot = stats_slot_for(VARDATA_ANY(call.cache_name), VARSIZE_ANY_EXHDR(call.cache_name));
    sh.stats.add(slot, kCalls);

    // Transactions with one snapshot must not see newer commits; a standby
    // has no triggers to invalidate anything; in replica mode (logical
    // replication apply) row triggers may run before the apply worker marks
    // its tables at pre-commit; a transaction that changed names may
    // resolve a query differently than any entry did.
    bool bypass = IsolationUsesXactSnapshot() || RecoveryInProgress() ||
                  SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA || transaction_changed_catalogs();
    Encoded key = encode_call(call);

    if (!bypass) {
        CopyOutSink sink;
        LookupStatus status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink);
        if (status == LookupStatus::Hit && privileges_still_hold(sink.meta, sink.meta_len)) {
            sh.stats.add(slot, kHits);
            return Result{sink.payload, sink.payload_len};
        }
        if (status == LookupStatus::OwnWrites) bypass = true;
    }
    // A transaction that wrote any watched table must see its own writes,
    // which no other backend's computation contains: no flights for it.
    if (!bypass && guc_singleflight && own_writes().count == 0 && flight_allowed(key))
        return memoize_in_flight(call, key, slot);
    return compute_and_store(call, key, slot, bypass, nullptr);
}

}  // namespace

bool describe_key(const char *key, uint32_t len, Oid *userid, text **query, ArrayType **params) {
    int n = decode_key(key, len, nullptr, 0);
    if (n < kFixedKeyFields) return false;
    auto *fields = static_cast<KeyField *>(palloc(sizeof(KeyField) * n));
    decode_key(key, len, fields, size_t(n));
    KeyContext ctx;
    if (fields[1].len != sizeof ctx) return false;
    memcpy(&ctx, fields[1].data, sizeof ctx);
    *userid = ctx.userid;
    *query = cstring_to_text_with_len(fields[5].data, int(fields[5].len));
    int nparams = n - kFixedKeyFields;
    auto *values = static_cast<Datum *>(palloc(sizeof(Datum) * (nparams ? nparams : 1)));
    auto *nulls = static_cast<bool *>(palloc(sizeof(bool) * (nparams ? nparams : 1)));
    for (int i = 0; i < nparams; i++) {
        const KeyField &f = fields[kFixedKeyFields + i];
        nulls[i] = f.is_null;
        values[i] = f.is_null ? (Datum)0 : PointerGetDatum(cstring_to_text_with_len(f.data, int(f.len)));
    }
    int dims[1] = {nparams}, lbs[1] = {1};
    *params = construct_md_array(values, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
    return true;
}

Result compute_and_store(const Call &call, const Encoded &key, uint32_t slot, bool bypass, uint64_t *pinned,
                         bool wait_for_commits) {
    Shared &sh = shared_state();
    if (pinned) *pinned = 0;
    Analysis analysis{};
    instr_time start, elapsed;
    sh.stats.add(slot, kComputations);  // counted even if the query then fails
    INSTR_TIME_SET_CURRENT(start);
    Result r = compute(call, &analysis, bypass, wait_for_commits);
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

namespace {

TupleDesc stored_descriptor(const ResultReader &rd) {
    TupleDesc desc = CreateTemplateTupleDesc(int(rd.ncolumns()));
    for (uint32_t i = 0; i < rd.ncolumns(); i++)
        TupleDescInitEntry(desc, AttrNumber(i + 1), psprintf("column%u", i + 1), rd.columns()[i].type_oid,
                           rd.columns()[i].typmod, 0);
    return desc;
}

// The stored rows have the query's own shape; they can be handed over as
// they are when the caller's row type has the same column types.
bool same_shape(const ResultReader &rd, TupleDesc expected) {
    if (uint32_t(expected->natts) != rd.ncolumns()) return false;
    for (int i = 0; i < expected->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(expected, i);
        if (att->attisdropped || att->atttypid != rd.columns()[i].type_oid) return false;
    }
    return true;
}

// The row type the caller expects; checked before anything is computed.
TupleDesc expected_row_type(FunctionCallInfo fcinfo) {
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (!rsinfo || !IsA(rsinfo, ReturnSetInfo) || !(rsinfo->allowedModes & SFRM_Materialize))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("set-valued function called in context that cannot accept a set")));
    TupleDesc expected = rsinfo->expectedDesc;
    if (!expected && get_call_result_type(fcinfo, nullptr, &expected) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("a column definition list is required for memo.list"),
                        errhint("Write SELECT * FROM memo.list(...) AS t(col type, ...), or use "
                                "memo.list_as(NULL::row_type, ...).")));
    return expected;
}

Datum return_rows(FunctionCallInfo fcinfo, TupleDesc expected, const Result &r) {
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

    ResultReader rd(r.payload, r.len);
    if (!rd.valid() || rd.kind() != ResultKind::Rows) elog(ERROR, "pg_memo: corrupt row result");

    TupleConversionMap *map = nullptr;
    if (!same_shape(rd, expected))
        map = convert_tuples_by_position(stored_descriptor(rd), expected,
                                         "query result does not match the column definition list");

    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    Tuplestorestate *store =
        tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false, work_mem);
    TupleDesc result_desc = CreateTupleDescCopy(expected);
    MemoryContextSwitchTo(old);

    const char *data;
    uint32_t len;
    while (rd.next_row(&data, &len)) {
        HeapTupleData tuple;
        tuple.t_len = len;
        tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(data));
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        if (map) {
            HeapTuple converted = execute_attr_map_tuple(&tuple, map);
            tuplestore_puttuple(store, converted);
            heap_freetuple(converted);
        } else {
            tuplestore_puttuple(store, &tuple);
        }
    }
    rsinfo->returnMode = SFRM_Materialize;
    rsinfo->setResult = store;
    rsinfo->setDesc = result_desc;
    return (Datum)0;
}

Datum list_entry(FunctionCallInfo fcinfo, int first_arg) {
    TupleDesc expected = expected_row_type(fcinfo);
    Call call;
    read_arguments(fcinfo, first_arg, Kind::List, &call);
    return return_rows(fcinfo, expected, memoize(call));
}

}  // namespace

}  // namespace pgmemo

Datum pg_memo_list(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    return pgmemo::list_entry(fcinfo, 0);
    PG_MEMO_ENTRY_END
}

Datum pg_memo_list_as(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    return pgmemo::list_entry(fcinfo, 1);
    PG_MEMO_ENTRY_END
}

Datum pg_memo_count(PG_FUNCTION_ARGS) {
    PG_MEMO_ENTRY_BEGIN
    pgmemo::Call call;
    pgmemo::read_arguments(fcinfo, 0, pgmemo::Kind::Count, &call);
    pgmemo::Result r = pgmemo::memoize(call);
    pgmemo::ResultReader rd(r.payload, r.len);
    if (!rd.valid() || rd.kind() != pgmemo::ResultKind::Count) elog(ERROR, "pg_memo: corrupt count result");
    PG_RETURN_INT64(rd.count());
    PG_MEMO_ENTRY_END
}
