// Scope columns and the hashes of their values (invalidate/scope_columns.hpp).
#include "invalidate/scope_columns.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(pg_memo_scope_column);
Datum pg_memo_scope_column(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pg_memo_scope_columns);
Datum pg_memo_scope_columns(PG_FUNCTION_ARGS);
}

#include "invalidate/watch.hpp"

namespace pgmemo {

namespace {

// An attribute number as memo.watch writes it: decimal, positive.
bool parse_attnum(const char *text, AttrNumber *out) {
    char *end = nullptr;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v <= 0 || v > MaxAttrNumber) return false;
    *out = AttrNumber(v);
    return true;
}

bool is_delta_trigger_name(const char *name) {
    return strcmp(name, "pg_memo_delta_insert") == 0 || strcmp(name, "pg_memo_delta_update") == 0 ||
           strcmp(name, "pg_memo_delta_delete") == 0;
}

bool same_columns(const ScopeColumns &a, const ScopeColumns &b) {
    if (a.count != b.count) return false;
    for (int i = 0; i < a.count; i++)
        if (a.attnums[i] != b.attnums[i]) return false;
    return true;
}

}  // namespace

ScopeColumns scope_columns_of_trigger(const Trigger &trigger) {
    ScopeColumns c;
    if (trigger.tgnargs > kMaxScopeColumns) return c;
    for (int i = 0; i < trigger.tgnargs; i++)
        if (!parse_attnum(trigger.tgargs[i], &c.attnums[c.count++])) return ScopeColumns{};
    return c;
}

ScopeColumns scope_columns_of(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td || !relation_keeps_deltas(rel)) return ScopeColumns{};
    Oid function = delta_trigger_function();
    ScopeColumns found;
    bool first = true;
    for (int i = 0; i < td->numtriggers; i++) {
        const Trigger &t = td->triggers[i];
        if (t.tgfoid != function) continue;
        if (!is_delta_trigger_name(t.tgname)) return ScopeColumns{};  // made by hand
        ScopeColumns c = scope_columns_of_trigger(t);
        if (!first && !same_columns(c, found)) return ScopeColumns{};
        found = c;
        first = false;
    }
    return found;
}

bool may_have_scope_columns(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td) return false;
    for (int i = 0; i < td->numtriggers; i++)
        if (td->triggers[i].tgnargs > 0 && is_delta_trigger_name(td->triggers[i].tgname)) return true;
    return false;
}

namespace {

// Whether the hash function is one the equality operator's hash operator
// families register for it: the check asks the catalogs, and a writer asks
// per statement, so the answers are kept per (equality, hash function).
// The type cache gives both afresh each time: a change to either is a new
// question.
bool hash_agrees_with_equality(Oid equality, Oid hash_proc) {
    struct Answer {
        Oid equality, hash_proc;
        bool agrees;
    };
    static Answer answers[16];
    static int nanswers = 0;
    for (int i = 0; i < nanswers; i++)
        if (answers[i].equality == equality && answers[i].hash_proc == hash_proc) return answers[i].agrees;
    RegProcedure lhs, rhs;
    bool agrees = get_op_hash_functions(equality, &lhs, &rhs) && lhs == hash_proc && rhs == hash_proc;
    answers[nanswers < 16 ? nanswers++ : 15] = Answer{equality, hash_proc, agrees};
    return agrees;
}

// Values of tc's type hashed with its hash function (the type cache's:
// it lives as long as the backend), laid out as an array's elements.
void hash_values_as(TypeCacheEntry *tc, ScopeHasher *out) {
    out->hash = &tc->hash_proc_finfo;
    out->elem_len = tc->typlen;
    out->elem_byval = tc->typbyval;
    out->elem_align = tc->typalign;
}

}  // namespace

bool scope_hasher_for(Oid column_type, Oid collation, ScopeHasher *out) {
    *out = ScopeHasher{};
    TypeCacheEntry *column = lookup_type_cache(column_type, 0);
    out->is_array = OidIsValid(column->typelem) && column->typlen == -1 && column->typsubscript == F_ARRAY_SUBSCRIPT_HANDLER;
    out->value_type = out->is_array ? column->typelem : column_type;
    out->collation = collation;
    TypeCacheEntry *tc = lookup_type_cache(out->value_type, TYPECACHE_EQ_OPR | TYPECACHE_HASH_PROC_FINFO);
    // The hash must agree with the equality that decides membership.
    if (!OidIsValid(tc->eq_opr) || !OidIsValid(tc->hash_proc) || !hash_agrees_with_equality(tc->eq_opr, tc->hash_proc))
        return false;
    out->equality = tc->eq_opr;
    hash_values_as(tc, out);
    return true;
}

bool scope_value_hasher(const ScopeHasher &column, Oid opno, bool column_left, Oid value_type, ScopeHasher *out) {
    *out = column;
    if (!OidIsValid(value_type)) return false;  // a domain over an array: no element type of its own
    if (value_type == column.value_type) return opno == column.equality;
    // The hash functions the operator's family registers for its two
    // inputs: the column's must be the one writers hash with.
    RegProcedure left_hash, right_hash;
    if (!get_op_hash_functions(opno, &left_hash, &right_hash)) return false;
    Oid column_hash = column_left ? left_hash : right_hash, value_hash = column_left ? right_hash : left_hash;
    if (column_hash != column.hash->fn_oid) return false;
    // Under a nondeterministic collation two functions of one family need
    // not agree (hashname ignores the collation, hashtext does not): only
    // one function hashing both sides is trusted there.
    if (value_hash != column_hash && OidIsValid(column.collation) &&
        !get_collation_isdeterministic(column.collation))
        return false;
    return scope_hasher_as(column, value_type, out) && out->hash->fn_oid == value_hash;
}

bool scope_hasher_as(const ScopeHasher &column, Oid value_type, ScopeHasher *out) {
    *out = column;
    if (value_type == column.value_type) return true;
    if (!OidIsValid(value_type)) return false;
    TypeCacheEntry *tc = lookup_type_cache(value_type, TYPECACHE_HASH_PROC_FINFO);
    if (!OidIsValid(tc->hash_proc)) return false;
    out->value_type = value_type;
    hash_values_as(tc, out);
    return true;
}

uint32 hash_scope_value(const ScopeHasher &h, Datum value) {
    return DatumGetUInt32(FunctionCall1Coll(h.hash, h.collation, value));
}

void ScopeHashes::add(uint32 hash) {
    for (int i = 0; i < count; i++)
        if (values[i] == hash) return;
    if (count == capacity) {
        capacity = capacity ? 2 * capacity : 8;
        values = static_cast<uint32 *>(values ? repalloc(values, sizeof(uint32) * capacity)
                                              : palloc(sizeof(uint32) * capacity));
    }
    values[count++] = hash;
}

void add_scope_values(const ScopeHasher &h, Datum datum, bool isnull, ScopeHashes *out) {
    if (isnull) return;
    if (!h.is_array) return out->add(hash_scope_value(h, datum));
    ArrayType *array = DatumGetArrayTypeP(datum);
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(array, h.value_type, h.elem_len, h.elem_byval, h.elem_align, &elems, &nulls, &n);
    for (int i = 0; i < n; i++)
        if (!nulls[i]) out->add(hash_scope_value(h, elems[i]));
}

}  // namespace pgmemo

// memo.scope_column(rel, column_name), since 1.2: memo.watch's check.
Datum pg_memo_scope_column(PG_FUNCTION_ARGS) {
    Oid relid = PG_GETARG_OID(0);
    char *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
    AttrNumber attnum = get_attnum(relid, name);
    if (attnum == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of relation \"%s\" does not exist", name, get_rel_name(relid)),
                        errhint("Name the scope columns as the table names them.")));
    if (attnum < 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("system column \"%s\" cannot be a scope column", name)));
    Oid type, collation;
    int32 typmod;
    get_atttypetypmodcoll(relid, attnum, &type, &typmod, &collation);
    pgmemo::ScopeHasher hasher;
    if (!pgmemo::scope_hasher_for(type, collation, &hasher))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("column \"%s\" of type %s cannot be a scope column", name, format_type_be(type)),
                        errdetail("Its values are hashed with the default hash operator class of its type "
                                  "(or of its element type), and this type has none that agrees with its "
                                  "equality."),
                        errhint("Choose a column of a type such as integer, bigint, text or uuid, or an "
                                "array of one.")));
    PG_RETURN_INT16(attnum);
}

// memo.scope_columns(rel), since 1.2: what readers of rel use.
Datum pg_memo_scope_columns(PG_FUNCTION_ARGS) {
    Relation rel = try_relation_open(PG_GETARG_OID(0), AccessShareLock);
    if (!rel) PG_RETURN_NULL();
    pgmemo::ScopeColumns columns = pgmemo::scope_columns_of(rel);
    Datum names[pgmemo::kMaxScopeColumns];
    int n = 0;
    TupleDesc desc = RelationGetDescr(rel);
    for (int i = 0; i < columns.count; i++) {
        AttrNumber a = columns.attnums[i];
        if (a > desc->natts || TupleDescAttr(desc, a - 1)->attisdropped) continue;
        names[n++] = NameGetDatum(&TupleDescAttr(desc, a - 1)->attname);
    }
    ArrayType *result = construct_array(names, n, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR);
    relation_close(rel, AccessShareLock);
    PG_RETURN_ARRAYTYPE_P(result);
}
