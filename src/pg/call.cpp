// The arguments of a memo call and the cache key they make.
#include "call.hpp"

extern "C" {
#include "access/gin.h"
#include "catalog/pg_authid.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "parser/parse_expr.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/xml.h"
}

#include "compat.hpp"
#include "hash.hpp"
#include "key.hpp"
#include "settings.hpp"

namespace pgmemo {

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
    int32 bytea_output;            // output functions marked immutable that read
    int32 extra_float_digits;      // a setting: they change ::text casts
    int32 quote_all_identifiers;   // quote_ident(), marked immutable
    int32 array_nulls;             // array input: is {NULL} a NULL or the text NULL
    int32 xml_option;              // xml input: document or content
    int32 xml_binary;              // bytea inside XML: base64 or hex
    int32 gin_fuzzy_search_limit;  // a GIN index scan returns only some rows
};

[[noreturn]] void null_argument(const char *name) {
    ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", name)));
    pg_unreachable();
}


// timezone_abbreviations' value. PostgreSQL exports no variable for it, and
// GetConfigOption looks the setting up by name (a binary search with
// case-insensitive compares): on every call, twice per directory hit. The
// setting's variable is found once instead (built-in settings never move);
// its value is read on each call.
const char *timezone_abbreviations() {
    static char **variable = nullptr;
    if (!variable) {
        variable = compat_string_setting_variable("timezone_abbreviations");
        if (!variable) elog(ERROR, "pg_memo: the setting timezone_abbreviations is missing");
    }
    return *variable ? *variable : "";
}

// The kind byte of a registered statement's key (Call::param_types): its
// text is parsed with the client's parameter types, which the key holds in
// one more field after the fixed ones.
constexpr char kStatementKind = 'S';

// kind, context, timezone, search path, cache name, query, timezone
// abbreviations, lc_monetary (the last two change timestamptz and money
// input), and the search_path setting as written: the resolved path leaves
// out where pg_temp stands in it, and types are looked up there at that
// position (pg_temp, public and public, pg_temp resolve a type name apart)
constexpr int kFixedKeyFields = 9;

// The second byte of the kind field of a key that holds settings' values
// (keyed_settings.hpp): they are its last field, after the parameters.
constexpr char kHoldsSettings = '+';

// The values of the settings named (Analysis::settings' form), as the last
// field of a key: each name, '\0', then '\1', the value and '\0', or '\0'
// for a setting that does not exist. A setting's value as current_setting
// shows it now (GetConfigOptionByName: a setting the role may not read
// raises the error current_setting would); session_user's is the role's
// OID. With unreadable, a setting the role may not read sets it and ends
// the values instead (a view's check raises nothing).
void append_setting_values(StringInfo buf, const char *names, uint32_t len, bool *unreadable = nullptr) {
    for (const char *name = names; name < names + len; name += strlen(name) + 1) {
        appendBinaryStringInfo(buf, name, int(strlen(name)) + 1);
        const char *value;
        char oid[16];
        if (strcmp(name, kSessionUserSetting) == 0) {
            snprintf(oid, sizeof oid, "%u", GetSessionUserId());
            value = oid;
        } else {
            if (unreadable && (GetConfigOptionFlags(name, true) & GUC_SUPERUSER_ONLY) &&
                !has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS)) {
                *unreadable = true;
                return;
            }
            value = GetConfigOptionByName(name, nullptr, true);
        }
        if (!value) {
            appendStringInfoChar(buf, '\0');
            continue;
        }
        appendStringInfoChar(buf, '\1');
        appendBinaryStringInfo(buf, value, int(strlen(value)) + 1);
    }
}


}  // namespace

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
                               "pg_catalog and the temporary schema",
                               kMaxSearchPath)));
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
                        errmsg("params has %d elements, more than the %d parameters pg_memo supports", nitems,
                               kMaxParams)));
    deconstruct_array(params, TEXTOID, -1, false, TYPALIGN_INT, &call->param_values, &call->param_nulls,
                      &call->nparams);

    call->search_path_len = effective_search_path(call->search_path);
}

void portable_texts(int n, const Oid *types, const Datum *values, const bool *nulls, Datum *texts) {
    if (n == 0) return;
    int float_digits = extra_float_digits, date_style = DateStyle, interval_style = IntervalStyle;
    extra_float_digits = 1;  // the shortest text that reads back exactly
    DateStyle = USE_ISO_DATES;
    IntervalStyle = INTSTYLE_POSTGRES;
    PG_TRY();
    {
        Oid type = InvalidOid, output = InvalidOid;
        for (int i = 0; i < n; i++) {
            if (nulls[i]) continue;
            if (types[i] != type) {
                bool varlena;
                getTypeOutputInfo(types[i], &output, &varlena);
                type = types[i];
            }
            texts[i] = CStringGetTextDatum(OidOutputFunctionCall(output, values[i]));
        }
    }
    PG_FINALLY();
    {
        extra_float_digits = float_digits;
        DateStyle = date_style;
        IntervalStyle = interval_style;
    }
    PG_END_TRY();
}

// Whether the search path is still the one the call was keyed with: a
// commit (a new schema named like the role, a revoked USAGE) may have
// changed it since the arguments were read.
bool same_search_path(const Call &call) {
    Oid path[kMaxSearchPath];
    int len = effective_search_path(path);
    return len == call.search_path_len && memcmp(path, call.search_path, sizeof(Oid) * len) == 0;
}

namespace {

// The key's fields, encoded; without the cache name and the parameters for
// a statement key; with the values of the settings named, if any.
Encoded encode_fields(const Call &call, bool with_name_and_params, const char *settings = nullptr,
                      uint32_t settings_len = 0) {
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
    char kind[2] = {call.param_types ? kStatementKind : char(call.kind), kHoldsSettings};
    StringInfoData values;
    if (settings_len) {
        initStringInfo(&values);
        append_setting_values(&values, settings, settings_len);
    }

    const int nfixed = kFixedKeyFields + (call.param_types ? 1 : 0);
    int nparams = with_name_and_params ? call.nparams : 0;
    int nfields = nfixed + nparams + (settings_len ? 1 : 0);
    auto *fields = static_cast<KeyField *>(palloc(sizeof(KeyField) * nfields));
    fields[0] = KeyField{kind, settings_len ? 2u : 1u, false};
    fields[1] = KeyField{reinterpret_cast<const char *>(&ctx), sizeof ctx, false};
    fields[2] = KeyField{tz, uint32_t(strlen(tz)), false};
    fields[3] = KeyField{reinterpret_cast<const char *>(call.search_path),
                         uint32_t(sizeof(Oid) * call.search_path_len), false};
    fields[4] = with_name_and_params
                  ? KeyField{VARDATA_ANY(call.cache_name), uint32_t(VARSIZE_ANY_EXHDR(call.cache_name)), false}
                  : KeyField{"", 0, false};
    fields[5] = KeyField{VARDATA_ANY(call.query), uint32_t(VARSIZE_ANY_EXHDR(call.query)), false};
    fields[6] = KeyField{tz_abbreviations, uint32_t(strlen(tz_abbreviations)), false};
    fields[7] = KeyField{locale_monetary, uint32_t(strlen(locale_monetary)), false};
    const char *path_setting = namespace_search_path ? namespace_search_path : "";
    fields[8] = KeyField{path_setting, uint32_t(strlen(path_setting)), false};
    if (call.param_types)
        fields[kFixedKeyFields] = KeyField{reinterpret_cast<const char *>(call.param_types),
                                           uint32_t(sizeof(Oid) * call.nparams), false};
    if (settings_len) fields[nfields - 1] = KeyField{values.data, uint32_t(values.len), false};
    for (int i = 0; i < nparams; i++) {
        if (call.param_nulls[i]) {
            fields[nfixed + i] = KeyField{nullptr, 0, true};
        } else {
            text *t = DatumGetTextPP(call.param_values[i]);
            fields[nfixed + i] = KeyField{VARDATA_ANY(t), uint32_t(VARSIZE_ANY_EXHDR(t)), false};
        }
    }
    size_t key_size = encoded_key_size(fields, nfields);
    if (key_size > MaxAllocSize)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("the cache key of this call would take %zu bytes, more than the %zu pg_memo supports",
                        key_size, size_t(MaxAllocSize)),
                 errdetail("The key holds the cache name, the query text and the parameters.")));
    Encoded e;
    e.key_len = uint32_t(key_size);
    e.key = static_cast<char *>(palloc(e.key_len));
    encode_key(fields, nfields, e.key);
    e.hash = pgmemo::hash_bytes(e.key, e.key_len);
    if (settings_len) {
        char *names = static_cast<char *>(palloc(settings_len));
        memcpy(names, settings, settings_len);
        e.settings = names;
        e.settings_len = settings_len;
    }
    return e;
}

}  // namespace

Encoded encode_call(const Call &call, const char *settings, uint32_t settings_len) {
    return encode_fields(call, true, settings, settings_len);
}

Encoded remembered_error_key(const Encoded &key) {
    // The kind field's one byte, after its 4-byte length: 'L' or 'C' in a
    // result's key, lower case in its error's. No result key has it.
    constexpr uint32_t kKindByte = 4;
    Encoded e;
    e.key_len = key.key_len;
    e.key = static_cast<char *>(palloc(e.key_len));
    memcpy(e.key, key.key, key.key_len);
    e.key[kKindByte] = char(e.key[kKindByte] | 0x20);
    e.hash = pgmemo::hash_bytes(e.key, e.key_len);
    e.settings = key.settings;
    e.settings_len = key.settings_len;
    return e;
}

Encoded encode_statement(const Call &call) { return encode_fields(call, false); }

bool key_holds_callers_settings(const char *key, uint32_t len) {
    int n = decode_key(key, len, nullptr, 0);
    if (n < kFixedKeyFields) return false;
    auto *fields = static_cast<KeyField *>(palloc(sizeof(KeyField) * n));
    decode_key(key, len, fields, size_t(n));
    if (fields[0].len != 2) return fields[0].len == 1;
    const KeyField &held = fields[n - 1];
    // The names, recovered from the field, and the caller's values for them.
    StringInfoData names, values;
    initStringInfo(&names);
    const char *p = held.data, *end = held.data + held.len;
    while (p < end) {
        size_t name_len = strnlen(p, size_t(end - p));
        if (p + name_len >= end) return false;  // a name without its '\0'
        appendBinaryStringInfo(&names, p, int(name_len) + 1);
        p += name_len + 1;
        if (p >= end) return false;  // no flag
        if (*p++ == '\1') {
            size_t value_len = strnlen(p, size_t(end - p));
            if (p + value_len >= end) return false;
            p += value_len + 1;
        }
    }
    initStringInfo(&values);
    bool unreadable = false;
    append_setting_values(&values, names.data, uint32_t(names.len), &unreadable);
    return !unreadable && uint32_t(values.len) == held.len && memcmp(values.data, held.data, held.len) == 0;
}

Oid key_database(const char *key, uint32_t len) {
    KeyField fields[2];
    if (decode_key(key, len, fields, 2) < 2 || fields[1].len != sizeof(KeyContext)) return InvalidOid;
    KeyContext ctx;
    memcpy(&ctx, fields[1].data, sizeof ctx);
    return ctx.dbid;
}

bool key_identity(const char *key, uint32_t len, KeyIdentity *identity) {
    KeyField fields[kFixedKeyFields];
    if (decode_key(key, len, fields, kFixedKeyFields) < kFixedKeyFields || fields[0].len < 1 || fields[0].len > 2 ||
        fields[1].len != sizeof(KeyContext))
        return false;
    KeyContext ctx;
    memcpy(&ctx, fields[1].data, sizeof ctx);
    identity->kind = fields[0].data[0];
    identity->dbid = ctx.dbid;
    identity->cache_name = fields[4].data;
    identity->cache_name_len = fields[4].len;
    return true;
}

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
    if (fields[0].len < 1 || fields[0].len > 2) return false;
    int first_param = kFixedKeyFields + ((fields[0].data[0] | 0x20) == (kStatementKind | 0x20) ? 1 : 0);
    int nsettings = fields[0].len == 2 ? 1 : 0;  // the settings' values: not parameters
    if (n < first_param + nsettings) return false;
    int nparams = n - first_param - nsettings;
    auto *values = static_cast<Datum *>(palloc(sizeof(Datum) * (nparams ? nparams : 1)));
    auto *nulls = static_cast<bool *>(palloc(sizeof(bool) * (nparams ? nparams : 1)));
    for (int i = 0; i < nparams; i++) {
        const KeyField &f = fields[first_param + i];
        nulls[i] = f.is_null;
        values[i] = f.is_null ? (Datum)0 : PointerGetDatum(cstring_to_text_with_len(f.data, int(f.len)));
    }
    int dims[1] = {nparams}, lbs[1] = {1};
    *params = construct_md_array(values, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
    return true;
}

}  // namespace pgmemo
