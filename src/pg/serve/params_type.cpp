// memo.params: the memo functions' parameter list as drivers bind it.
//
// Inside, a text array: the memo functions read it as they read text[].
// What makes it a type of its own is its category, string, and its
// implicit casts from the arrays drivers bind (psycopg sends [42] as
// smallint[], [1.5] as numeric[], [True] as boolean[]). PostgreSQL gives an
// untyped argument ('{1,2}', a node-postgres parameter) to a string
// category parameter before an array one, so 1.2's overloads take every
// kind of list while '{...}' still resolves to one function. The casts turn
// each value into the text its type's input function reads back the same
// in any session (portable_texts), so 42 as smallint, integer or text
// makes the same key.
#include "call.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(pg_memo_params_in);
PG_FUNCTION_INFO_V1(pg_memo_params_out);
PG_FUNCTION_INFO_V1(pg_memo_params_recv);
PG_FUNCTION_INFO_V1(pg_memo_params_send);
PG_FUNCTION_INFO_V1(pg_memo_params_from_array);
Datum pg_memo_params_in(PG_FUNCTION_ARGS);
Datum pg_memo_params_out(PG_FUNCTION_ARGS);
Datum pg_memo_params_recv(PG_FUNCTION_ARGS);
Datum pg_memo_params_send(PG_FUNCTION_ARGS);
Datum pg_memo_params_from_array(PG_FUNCTION_ARGS);
}

// Text and binary forms: a text array's.
Datum pg_memo_params_in(PG_FUNCTION_ARGS) {
    return OidInputFunctionCall(F_ARRAY_IN, PG_GETARG_CSTRING(0), TEXTOID, -1);
}

Datum pg_memo_params_out(PG_FUNCTION_ARGS) {
    PG_RETURN_CSTRING(OidOutputFunctionCall(F_ARRAY_OUT, PG_GETARG_DATUM(0)));
}

Datum pg_memo_params_recv(PG_FUNCTION_ARGS) {
    auto *buf = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    return OidReceiveFunctionCall(F_ARRAY_RECV, buf, TEXTOID, -1);
}

Datum pg_memo_params_send(PG_FUNCTION_ARGS) {
    PG_RETURN_BYTEA_P(OidSendFunctionCall(F_ARRAY_SEND, PG_GETARG_DATUM(0)));
}

// The casts: an array of any type to its values' portable texts, same
// dimensions and NULLs.
Datum pg_memo_params_from_array(PG_FUNCTION_ARGS) {
    ArrayType *array = PG_GETARG_ARRAYTYPE_P(0);
    Oid type = ARR_ELEMTYPE(array);
    if (type == TEXTOID) PG_RETURN_ARRAYTYPE_P(array);
    int16 typlen;
    bool typbyval;
    char typalign;
    get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
    Datum *values;
    bool *nulls;
    int n;
    deconstruct_array(array, type, typlen, typbyval, typalign, &values, &nulls, &n);
    auto *types = static_cast<Oid *>(palloc(sizeof(Oid) * (n + 1)));
    auto *texts = static_cast<Datum *>(palloc0(sizeof(Datum) * (n + 1)));
    for (int i = 0; i < n; i++) types[i] = type;
    pgmemo::portable_texts(n, types, values, nulls, texts);
    PG_RETURN_ARRAYTYPE_P(construct_md_array(texts, nulls, ARR_NDIM(array), ARR_DIMS(array), ARR_LBOUND(array),
                                             TEXTOID, -1, false, TYPALIGN_INT));
}
