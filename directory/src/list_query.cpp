// Argument checks and query building for the directory listings.
//
// The checks name the problem in their message (SQLSTATE 22023; malformed
// values are already refused by the argument types with 22P02). The queries
// carry values only as parameters: the SQL text depends on the sort and on
// which filter keys are present, nothing else, so that the memo keys differ
// only where the requests do.
#include "list_query.hpp"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(directory_build_list_query);
Datum directory_build_list_query(PG_FUNCTION_ARGS);
}

namespace directory {
namespace {

constexpr int kMaxPageSize = 500;

const char *const kSortKeys[] = {"full_name", "title", "department", "location", "hired_on", "org_depth"};

// Filter keys in the fixed order their predicates are appended.
const char *const kFilterKeys[] = {"department", "title", "location", "name_prefix"};
constexpr int kNameFilter = 3;

[[noreturn]] void invalid(const char *message, const char *hint = nullptr) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg_internal("%s", message),
                    hint ? errhint("%s", hint) : 0));
    pg_unreachable();
}

constexpr int kSorts = 2 * int(lengthof(kSortKeys));  // every key, asc and desc
constexpr int kFilterSets = 1 << lengthof(kFilterKeys);

// 2 * key index + (desc ? 1 : 0) for a valid "key:asc" or "key:desc"; an
// error naming the key or the direction otherwise.
int sort_index(const char *sort) {
    const char *colon = strchr(sort, ':');
    size_t key_len = colon ? size_t(colon - sort) : strlen(sort);
    for (int k = 0; k < int(lengthof(kSortKeys)); k++) {
        const char *key = kSortKeys[k];
        if (strlen(key) != key_len || strncmp(sort, key, key_len) != 0) continue;
        if (colon && strcmp(colon + 1, "asc") == 0) return 2 * k;
        if (colon && strcmp(colon + 1, "desc") == 0) return 2 * k + 1;
        invalid(psprintf("invalid sort direction in \"%s\"", sort),
                "sort is key:direction with direction asc or desc.");
    }
    invalid(
        psprintf("invalid sort key \"%.*s\"", int(key_len), sort),
        "sort is key:direction with key one of full_name, title, department, location, hired_on, org_depth.");
}

// jsonb_typeof's name for a value.
const char *json_type_name(const JsonbValue &v) {
    switch (v.type) {
        case jbvNull: return "null";
        case jbvString: return "string";
        case jbvNumeric: return "number";
        case jbvBool: return "boolean";
        case jbvBinary: return JsonContainerIsArray(v.val.binary.data) ? "array" : "object";
        default: return "unknown";
    }
}

bool is_filter_key(const char *key, int len) {
    for (const char *k : kFilterKeys)
        if (int(strlen(k)) == len && memcmp(k, key, len) == 0) return true;
    return false;
}

// Refuses a non-object and unknown keys (naming the least one, in the
// database's collation, as min() would).
void check_filter_keys(Jsonb *filters) {
    if (!JB_ROOT_IS_OBJECT(filters)) {
        const char *type = "array";
        JsonbValue scalar;
        if (JB_ROOT_IS_SCALAR(filters) && JsonbExtractScalar(&filters->root, &scalar))
            type = json_type_name(scalar);
        invalid(psprintf("filters must be a JSON object, got a JSON %s", type));
    }
    JsonbIterator *it = JsonbIteratorInit(&filters->root);
    JsonbValue v;
    JsonbIteratorToken token;
    const char *unknown = nullptr;
    int unknown_len = 0;
    while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
        if (token != WJB_KEY || is_filter_key(v.val.string.val, v.val.string.len)) continue;
        if (!unknown ||
            varstr_cmp(v.val.string.val, v.val.string.len, unknown, unknown_len, DEFAULT_COLLATION_OID) < 0) {
            unknown = v.val.string.val;
            unknown_len = v.val.string.len;
        }
    }
    if (unknown)
        invalid(psprintf("unknown filter key \"%.*s\"", unknown_len, unknown),
                "Filter keys are department, title, location and name_prefix.");
}

// 'prefix%' with LIKE's own wildcards in the prefix escaped.
char *like_prefix_pattern(const char *prefix, int len) {
    StringInfoData s;
    initStringInfo(&s);
    for (int i = 0; i < len; i++) {
        if (prefix[i] == '\\' || prefix[i] == '%' || prefix[i] == '_') appendStringInfoChar(&s, '\\');
        appendStringInfoChar(&s, prefix[i]);
    }
    appendStringInfoChar(&s, '%');
    return s.data;
}

// The two query texts depend only on the sort and on which filter keys are
// present: built once per backend for each combination, not on every call,
// and kept as text, the form the memo functions take.
struct QueryTexts {
    text *count_sql;
    text *page_sql;
    text *cached_page_sql;
};
QueryTexts query_texts[kSorts][kFilterSets];

const QueryTexts &texts_for(int sort, unsigned filter_set) {
    QueryTexts &t = query_texts[sort][filter_set];
    if (t.page_sql) return t;
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    StringInfoData predicate;
    initStringInfo(&predicate);
    appendStringInfoString(&predicate, "e.path @> ARRAY[$1::bigint]");
    int n = 1;
    for (int f = 0; f < int(lengthof(kFilterKeys)); f++) {
        if (!(filter_set & (1u << f))) continue;
        n++;
        if (f == kNameFilter)
            appendStringInfo(&predicate, " AND e.full_name LIKE $%d::text", n);
        else
            appendStringInfo(&predicate, " AND e.%s = $%d::text", kFilterKeys[f], n);
    }
    const char *key = kSortKeys[sort / 2], *dir = sort % 2 ? "desc" : "asc";
    char *count_sql = psprintf(
        "SELECT 1 FROM directory.employees e WHERE %s"
        " UNION ALL SELECT 1 FROM directory.employees e WHERE e.id = $1::bigint",
        predicate.data);
    const char *page_format =
        "SELECT e.id, e.full_name, e.title, e.department, e.location, e.manager_id,"
        " e.org_depth, e.sub_org_size, %s AS total_count"
        " FROM directory.employees e WHERE %s ORDER BY e.%s %s, e.id %s"
        " LIMIT $%d::bigint OFFSET $%d::bigint";
    char *total = psprintf("$%d::bigint", n + 3);
    char *page_sql = psprintf(page_format, total, predicate.data, key, dir, dir, n + 1, n + 2);
    char *cached_page_sql = psprintf(page_format, "0::bigint", predicate.data, key, dir, dir, n + 1, n + 2);
    t.count_sql = cstring_to_text(count_sql);
    t.cached_page_sql = cstring_to_text(cached_page_sql);
    t.page_sql = cstring_to_text(page_sql);
    pfree(count_sql);
    pfree(total);
    pfree(page_sql);
    pfree(cached_page_sql);
    pfree(predicate.data);
    MemoryContextSwitchTo(old);
    return t;
}

}  // namespace

ArrayType *text_array(const Datum *values, int n) {
    return construct_array(const_cast<Datum *>(values), n, TEXTOID, -1, false, TYPALIGN_INT);
}

Datum int64_text(int64 value) {
    char digits[MAXINT8LEN + 1];
    int len = pg_lltoa(value, digits);
    return PointerGetDatum(cstring_to_text_with_len(digits, len));
}

void build_list_query(FunctionCallInfo fcinfo, ListQuery *out) {
    static const char *const kArgNames[] = {"scope_root", "page", "page_size", "sort", "filters"};
    for (int i = 0; i < 5; i++)
        if (PG_ARGISNULL(i)) invalid(psprintf("%s must not be NULL", kArgNames[i]));
    int64 scope_root = PG_GETARG_INT64(0);
    int32 page = PG_GETARG_INT32(1);
    int32 page_size = PG_GETARG_INT32(2);
    char *sort = text_to_cstring(PG_GETARG_TEXT_PP(3));
    Jsonb *filters = PG_GETARG_JSONB_P(4);

    if (page < 1) invalid(psprintf("page must be at least 1, got %d", page));
    if (page_size < 1 || page_size > kMaxPageSize)
        invalid(psprintf("page_size must be between 1 and %d, got %d", kMaxPageSize, page_size));
    int sort_idx = sort_index(sort);
    check_filter_keys(filters);

    Datum *params = out->page_values;
    int n = 0;
    params[n++] = int64_text(scope_root);
    unsigned filter_set = 0;
    for (int f = 0; f < int(lengthof(kFilterKeys)); f++) {
        JsonbValue value;
        const char *key = kFilterKeys[f];
        if (!getKeyJsonValueFromContainer(&filters->root, key, int(strlen(key)), &value)) continue;
        if (value.type != jbvString)
            invalid(psprintf("filter \"%s\" must be a JSON string, got a JSON %s", key, json_type_name(value)));
        filter_set |= 1u << f;
        params[n++] = f == kNameFilter
                        ? CStringGetTextDatum(like_prefix_pattern(value.val.string.val, value.val.string.len))
                        : PointerGetDatum(cstring_to_text_with_len(value.val.string.val, value.val.string.len));
    }

    const QueryTexts &texts = texts_for(sort_idx, filter_set);
    out->count_sql = texts.count_sql;
    out->count_params = text_array(params, n);
    out->page_sql = texts.page_sql;
    out->cached_page_sql = texts.cached_page_sql;
    params[n++] = int64_text(page_size);
    params[n++] = int64_text(int64(page - 1) * page_size);
    out->npage_values = n;
}

}  // namespace directory

// directory.build_list_query(...) RETURNS directory.list_query
Datum directory_build_list_query(PG_FUNCTION_ARGS) {
    directory::ListQuery q;
    directory::build_list_query(fcinfo, &q);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "directory.build_list_query must return a composite type");
    Datum values[4] = {PointerGetDatum(q.count_sql), PointerGetDatum(q.count_params),
                       PointerGetDatum(q.page_sql),
                       PointerGetDatum(directory::text_array(q.page_values, q.npage_values))};
    bool nulls[4] = {false, false, false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
