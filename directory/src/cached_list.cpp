// directory.cached_list_employees: the listing through pg_memo, with no
// PL/pgSQL and no intermediate result on a hit.
//
// It calls the SQL functions memo.count ('employees.count') and
// memo.list_as ('employees.page') through fmgr, exactly as a SQL caller
// would (same entries, same EXECUTE privilege checks), and lets memo.list_as
// fill this function's own result set; the total is then written into each
// row (the page's entry does not hold it: its key would change with every
// hire, and a hire that lands on no page must leave the pages valid). The
// parameter arrays of the last request are kept, so that a hot page is not
// rebuilt on each call.
#include "list_query.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "access/htup_details.h"
#include "executor/tuptable.h"

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(directory_cached_list_employees);
Datum directory_cached_list_employees(PG_FUNCTION_ARGS);
void _PG_init(void);
}

#include "compat.hpp"

namespace directory {
namespace {

// The memo functions, resolved once per backend and again after any change
// to pg_proc (DROP/CREATE EXTENSION pg_memo gives them new OIDs).
struct MemoFunction {
    const char *name;
    int nargs;
    Oid argtypes[4];
    Oid oid;
    FmgrInfo finfo;
};
MemoFunction memo_count = {"count", 3, {TEXTOID, TEXTOID, TEXTARRAYOID}, InvalidOid, {}};
MemoFunction memo_list_as = {"list_as", 4, {ANYELEMENTOID, TEXTOID, TEXTOID, TEXTARRAYOID}, InvalidOid, {}};

void forget_memo_functions(Datum, int, uint32) {
    memo_count.oid = InvalidOid;
    memo_list_as.oid = InvalidOid;
}

// Resolves the function when needed, and checks that the current user may
// execute it, as calling it from SQL would.
FmgrInfo *memo_function(MemoFunction &f) {
    if (!OidIsValid(f.oid)) {
        List *name = list_make2(makeString(pstrdup("memo")), makeString(pstrdup(f.name)));
        Oid oid = LookupFuncName(name, f.nargs, f.argtypes, true);
        if (!OidIsValid(oid))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION), errmsg("function memo.%s is missing", f.name),
                            errhint("pg_memo_directory needs the pg_memo extension, version 1.0 or later.")));
        fmgr_info_cxt(oid, &f.finfo, TopMemoryContext);
        f.oid = oid;
    }
    if (!compat_function_execute_ok(f.oid, GetUserId()))
        aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION, psprintf("memo.%s", f.name));
    return &f.finfo;
}

// The last request this backend built. A hot page asked again and again
// reuses its parameter texts and arrays instead of building them anew: they
// depend on the five arguments only (the query texts are built once per
// backend anyway). Everything lives in a context of its own; valid is false
// while it is being filled.
// They are replaced only at the start of a call, before the memo calls, and
// nothing those run (plain SELECTs over directory.employees) calls back in.
struct LastRequest {
    bool valid = false;
    int64 scope_root;
    int32 page, page_size;
    struct varlena *sort, *filters;  // the arguments' bytes, as given
    ListQuery q;
    ArrayType *page_params = nullptr;
    MemoryContext request_context = nullptr;
};
LastRequest last;

struct varlena *packed_argument(FunctionCallInfo fcinfo, int n) {
    return pg_detoast_datum_packed(reinterpret_cast<struct varlena *>(PG_GETARG_POINTER(n)));
}

bool same_bytes(const struct varlena *a, const struct varlena *b) {
    return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
           memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

bool is_last_request(FunctionCallInfo fcinfo) {
    if (!last.valid) return false;
    for (int i = 0; i < 5; i++)
        if (PG_ARGISNULL(i)) return false;
    return PG_GETARG_INT64(0) == last.scope_root && PG_GETARG_INT32(1) == last.page &&
           PG_GETARG_INT32(2) == last.page_size && same_bytes(packed_argument(fcinfo, 3), last.sort) &&
           same_bytes(packed_argument(fcinfo, 4), last.filters);
}

// Checks the arguments and builds the request, or takes the last one.
const ListQuery &request_for(FunctionCallInfo fcinfo) {
    if (is_last_request(fcinfo)) return last.q;
    ListQuery q;
    build_list_query(fcinfo, &q);  // raises on invalid arguments
    if (!last.request_context) {
        last.request_context = AllocSetContextCreate(TopMemoryContext, "directory: last request",
                                                     ALLOCSET_SMALL_SIZES);
    }
    last.valid = false;
    MemoryContextReset(last.request_context);
    last.page_params = nullptr;
    MemoryContext old = MemoryContextSwitchTo(last.request_context);
    last.scope_root = PG_GETARG_INT64(0);
    last.page = PG_GETARG_INT32(1);
    last.page_size = PG_GETARG_INT32(2);
    last.sort = PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(3));
    last.filters = PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(4));
    last.q = q;
    last.q.count_params = DatumGetArrayTypePCopy(PointerGetDatum(q.count_params));
    for (int i = 0; i < q.npage_values; i++) last.q.page_values[i] = datumCopy(q.page_values[i], false, -1);
    last.page_params = text_array(last.q.page_values, q.npage_values);
    MemoryContextSwitchTo(old);
    last.valid = true;
    return last.q;
}

// The page query gives total_count as 0::bigint: a stored row then ends with
// the 8 bytes of its last column (by value, not null, nothing after it).
bool ends_with_total(MinimalTuple row, TupleDesc desc) {
    int last = desc->natts - 1;
    Form_pg_attribute att = TupleDescAttr(desc, last);
    if (att->atttypid != INT8OID || !att->attbyval || att->attlen != sizeof(int64)) return false;
    if ((row->t_infomask2 & HEAP_NATTS_MASK) != desc->natts) return false;
    return !(row->t_infomask & HEAP_HASNULL) || !att_isnull(last, row->t_bits);
}

// While the result set is in memory, reading it without a copy hands out
// the rows it holds: the total is written over each row's last 8 bytes
// there, and the set is rewound for the executor. False (some rows written,
// which the caller writes again) when a row has another shape.
bool write_total_in_place(Tuplestorestate *rows, TupleTableSlot *slot, int64 total) {
    while (tuplestore_gettupleslot(rows, true, false, slot)) {
        bool should_free;
        MinimalTuple row = ExecFetchSlotMinimalTuple(slot, &should_free);
        if (should_free || !ends_with_total(row, slot->tts_tupleDescriptor)) return false;
        memcpy(reinterpret_cast<char *>(row) + row->t_len - sizeof(int64), &total, sizeof(int64));
    }
    tuplestore_rescan(rows);
    return true;
}

// Writes the total into the last column (total_count) of every row of the
// result set memo.list_as filled: in place while the set is in memory,
// otherwise (more than work_mem) into a new set, row by row.
void fill_total(ReturnSetInfo *rsinfo, int64 total) {
    TupleDesc desc = rsinfo->setDesc;
    Tuplestorestate *rows = rsinfo->setResult;
    TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
    if (tuplestore_in_memory(rows) && write_total_in_place(rows, slot, total)) {
        ExecDropSingleTupleTableSlot(slot);
        return;
    }
    tuplestore_rescan(rows);
    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    Tuplestorestate *filled =
        tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0, false, work_mem);
    MemoryContextSwitchTo(old);
    while (tuplestore_gettupleslot(rows, true, false, slot)) {
        slot_getallattrs(slot);
        slot->tts_values[desc->natts - 1] = Int64GetDatum(total);
        slot->tts_isnull[desc->natts - 1] = false;
        tuplestore_putvalues(filled, desc, slot->tts_values, slot->tts_isnull);
    }
    ExecDropSingleTupleTableSlot(slot);
    tuplestore_end(rows);
    rsinfo->setResult = filled;
}

}  // namespace
}  // namespace directory

void _PG_init(void) { CacheRegisterSyscacheCallback(PROCOID, directory::forget_memo_functions, (Datum)0); }

Datum directory_cached_list_employees(PG_FUNCTION_ARGS) {
    using namespace directory;
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (!rsinfo || !IsA(rsinfo, ReturnSetInfo))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("set-valued function called in context that cannot accept a set")));
    const ListQuery &q = request_for(fcinfo);

    static text *count_name, *page_name;  // the cache names, built once
    if (!page_name) {                     // the one built last: an error between them retries both
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        count_name = cstring_to_text("employees.count");
        page_name = cstring_to_text("employees.page");
        MemoryContextSwitchTo(old);
    }
    int64 total = DatumGetInt64(FunctionCall3(memo_function(memo_count), PointerGetDatum(count_name),
                                              PointerGetDatum(q.count_sql), PointerGetDatum(q.count_params))) -
                  1;
    if (total < 0)  // no sentinel row: the scope root does not exist
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("scope_root " INT64_FORMAT " is not an employee", PG_GETARG_INT64(0))));

    // memo.list_as(NULL::directory.employee_row, ...) into our result set:
    // its rows are ours, column for column (the row type it is given is
    // this function's own result type).
    if (!rsinfo->expectedDesc) {
        TupleDesc own;
        if (get_call_result_type(fcinfo, nullptr, &own) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "cached_list_employees must return a composite type");
        rsinfo->expectedDesc = own;
    }
    LOCAL_FCINFO(list_call, 4);
    InitFunctionCallInfoData(*list_call, memo_function(memo_list_as), 4, InvalidOid, nullptr,
                             reinterpret_cast<Node *>(rsinfo));
    list_call->args[0] = {(Datum)0, true};
    list_call->args[1] = {PointerGetDatum(page_name), false};
    list_call->args[2] = {PointerGetDatum(q.cached_page_sql), false};
    list_call->args[3] = {PointerGetDatum(last.page_params), false};
    FunctionCallInvoke(list_call);
    fill_total(rsinfo, total);
    return (Datum)0;
}
