// One memo call: its arguments, read once, and the cache key they make.
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "utils/array.h"
#include "access/tupconvert.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"
#include "utils/snapshot.h"
}

namespace pgmemo {

enum class Kind : char { List = 'L', Count = 'C' };

constexpr int kMaxSearchPath = 32;
// As many as a prepared statement can take over PostgreSQL's protocol. Far
// more would not fit the key's field list in one allocation.
constexpr int kMaxParams = 65535;

// Who declared the row type a list's caller expects: what a mismatch with
// the query's columns is said to be against.
enum class DeclaredBy : char {
    ColumnList,       // memo.list(...) AS t(col type, ...)
    RowTypeArgument,  // memo.list_as(NULL::row_type, ...)
    Statement,        // a registered statement's planned result (registered/)
};

// Where a list's rows go once they outgrow pg_memo.max_result_size (they
// will not be stored): straight into the tuplestore the caller returns,
// which work_mem bounds in memory, so a large result is never copied whole.
struct RowSpill {
    MemoryContext context;     // the caller's per-query memory
    ResourceOwner owner;       // the caller's: the temporary files of the store must
                               // outlive a subtransaction the computation may run in
    TupleDesc expected;        // the row type the caller expects
    DeclaredBy declared_by;    // and who said so
    bool random_access;
    Tuplestorestate *store;    // set once rows spilled into it
    TupleConversionMap *map;   // to the caller's row type, if the stored one differs
};

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
    RowSpill *spill = nullptr;  // lists: where rows past the bound go
    // A registered statement (registered/): the types its
    // client bound the parameters with, which the statement is parsed with
    // and keyed on; nullptr for a memo function's call, whose parameters'
    // types are inferred from the text.
    const Oid *param_types = nullptr;
    // A registered statement's snapshot, the one PostgreSQL gave its
    // portal: its result must be what that snapshot sees
    // (compute/statement_snapshot.hpp). InvalidSnapshot for a memo call,
    // which answers as of the call.
    Snapshot as_of = InvalidSnapshot;
    // Computed and not stored, counted as pg_memo.enabled = off counts a
    // call: a plan made for a shape automatic admission no longer serves.
    bool uncached = false;
};

// The name a key's settings give session_user (Analysis::settings), which
// no custom setting has (theirs have a dot).
constexpr char kSessionUserSetting[] = "session_user";

// A call's cache key: encoded bytes (see src/core/key.hpp) and their hash.
struct Encoded {
    char *key;
    uint32_t key_len;
    uint64_t hash;
    // The settings whose values the key holds (Analysis::settings' form:
    // names, sorted, each ending in '\0'), or nullptr with 0.
    const char *settings = nullptr;
    uint32_t settings_len = 0;
};

// Reads the arguments from first on (cache_name, query, params) and the
// search path. Raises 22004, 2202E, 42804 or 54000 for bad ones.
void read_arguments(FunctionCallInfo fcinfo, int first, Kind kind, Call *call);

// Values as text that their types' input functions read back to the same
// values whatever the session's settings: floats at full precision, dates,
// times and intervals in styles every setting reads (set for the loop,
// restored however it ends). Parameters bound with a type: a registered
// statement's, a driver's typed array (memo.params). texts[i] is left
// alone where nulls[i].
void portable_texts(int n, const Oid *types, const Datum *values, const bool *nulls, Datum *texts);

// The schemas names are looked up in, in order (the session's temporary
// schema first), into path (kMaxSearchPath entries); returns how many.
// Raises 54000 past kMaxSearchPath.
int effective_search_path(Oid *path);

// Whether the search path is still the one the call was keyed with: a
// commit (a new schema named like the role, a revoked USAGE) may have
// changed it since the arguments were read.
bool same_search_path(const Call &call);

// The key: database, role, the settings that change what the text means,
// search path, cache name, query text and parameters, and the values the
// settings named have now (the settings its policies read, say:
// compute/keyed_settings.hpp). Raises 54000 past 1 GB.
Encoded encode_call(const Call &call, const char *settings = nullptr, uint32_t settings_len = 0);

// Whether the settings a key holds have the values the caller has now (true
// for a key that holds none): a view shows a tenant's keys only to it.
bool key_holds_callers_settings(const char *key, uint32_t len);

// The key a failed computation's error is remembered under
// (pg_memo.error_ttl): the call's key with its kind in lower case. Apart
// from the result's entry, so that an older answer stays for the callers
// that accept one (pg_memo.max_staleness, pg_memo.stale_on_error).
Encoded remembered_error_key(const Encoded &key);

// The same without the cache name and the parameters: what the text means
// to the parser and planner, the key of this backend's prepared statements.
Encoded encode_statement(const Call &call);

// The database a key belongs to (InvalidOid if the bytes are not a key).
Oid key_database(const char *key, uint32_t len);

// A key's kind byte ('L', 'C', 'S'; lower case for a remembered error),
// database and cache name (a view into key). Allocates nothing and raises
// nothing, so it may run under a partition lock (memo.reset(cache_name)).
// False if the bytes are not a key.
struct KeyIdentity {
    char kind;
    Oid dbid;
    const char *cache_name;
    uint32_t cache_name_len;
};
bool key_identity(const char *key, uint32_t len, KeyIdentity *identity);

// What a key says, for memo.flights: the role it is for, the query text and
// the parameters (palloc'd). False if the bytes are not a key.
bool describe_key(const char *key, uint32_t len, Oid *userid, text **query, ArrayType **params);

}  // namespace pgmemo
