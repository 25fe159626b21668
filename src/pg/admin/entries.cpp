// memo.entries, one row per cached entry, and memo.reset(cache_name,
// database), which removes one cache name's entries.
//
// Reading the store: one bucket at a time under its partition's shared
// lock (Store::for_each_entry_in_bucket), copying the bucket's entries into
// a buffer allocated before the lock is taken. Nothing under the lock
// allocates or can raise: a bucket that does not fit is read again once the
// buffer has grown. The rows are made after the lock is released, so a hit
// or a miss on that partition waits at most for one bucket's memcpy.
#include "admin/views.hpp"
#include "call.hpp"
#include "privileges.hpp"
#include "result_format.hpp"
#include "shared_state.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_entries_1_2);
PG_FUNCTION_INFO_V1(pg_memo_reset_cache_1_2);
Datum pg_memo_entries_1_2(PG_FUNCTION_ARGS);
Datum pg_memo_reset_cache_1_2(PG_FUNCTION_ARGS);
}

namespace {

using pgmemo::EntryState;
using pgmemo::ResultKind;

constexpr int kEntriesColumns = 15;

// What is copied of one entry under the lock; its key and its privilege
// checks (which name its relations) follow, each MAXALIGNed.
struct EntryCopy {
    uint32_t key_len;
    uint32_t meta_len;
    EntryState state;
    bool deltas;        // kept by deltas
    ResultKind result;  // 0 when the payload is not a result
    int64 rows;         // a list's rows, a count's count
    int32 error_code;   // a remembered error's SQLSTATE
    uint64_t bytes;
    pgmemo::Micros stamped_at;
    uint64_t estimated_hits;
    uint32_t last_hit;  // Unix seconds, 0: none
};

// The copies of one bucket's entries. wanted counts what the bucket needed,
// including what did not fit: more than capacity means read it again.
struct BucketBuffer {
    char *data;
    size_t capacity;
    size_t used;
    size_t wanted;
};

size_t copy_size(uint32_t key_len, uint32_t meta_len) {
    return MAXALIGN(sizeof(EntryCopy)) + MAXALIGN(key_len) + MAXALIGN(meta_len);
}

// Under the partition lock: copies only, into room already allocated.
void copy_entry(const pgmemo::Store &store, BucketBuffer *buf, const char *key, uint32_t key_len,
                const pgmemo::EntryView &e) {
    size_t need = copy_size(key_len, e.meta_len);
    buf->wanted += need;
    if (buf->used + need > buf->capacity) return;
    auto *c = reinterpret_cast<EntryCopy *>(buf->data + buf->used);
    c->key_len = key_len;
    c->meta_len = e.meta_len;
    c->state = store.state_of(e);
    c->deltas = pgmemo::kept_by_deltas(e.deps, e.ndeps);
    c->bytes = e.bytes;
    c->stamped_at = e.stamped_at;
    c->estimated_hits = e.estimated_hits;
    c->last_hit = e.last_hit;
    pgmemo::ResultReader rd(e.payload, e.payload_len);
    c->result = rd.valid() ? rd.kind() : ResultKind(0);
    c->rows = !rd.valid() ? 0 : rd.kind() == ResultKind::Rows ? int64(rd.nrows()) : rd.count();
    c->error_code = rd.valid() && rd.kind() == ResultKind::Error ? rd.error_code() : 0;
    char *p = buf->data + buf->used + MAXALIGN(sizeof(EntryCopy));
    memcpy(p, key, key_len);
    memcpy(p + MAXALIGN(key_len), e.meta, e.meta_len);
    buf->used += need;
}

// Copies bucket b whole, growing the buffer (with no lock held) as often as
// the bucket outgrows it meanwhile.
void copy_bucket(pgmemo::Store &store, uint32_t b, BucketBuffer *buf) {
    for (;;) {
        buf->used = buf->wanted = 0;
        store.for_each_entry_in_bucket(b, [&](uint64_t, const char *key, uint32_t key_len, uint32_t,
                                              const pgmemo::EntryView &e) { copy_entry(store, buf, key, key_len, e); });
        if (buf->wanted <= buf->capacity) return;
        buf->capacity = buf->wanted * 2;
        pfree(buf->data);
        buf->data = static_cast<char *>(palloc(buf->capacity));
    }
}

const char *kind_name(char kind) {
    switch (kind) {
        case 'L': return "list";
        case 'C': return "count";
        case 'S': return "statement";
        case 'l': case 'c': case 's': return "error";  // remembered for its call's key (pg_memo.error_ttl)
        default: return "unknown";
    }
}

const char *state_name(EntryState s) {
    switch (s) {
        case EntryState::Current: return "current";
        case EntryState::Pending: return "pending";
        case EntryState::Stale: return "stale";
        case EntryState::Kept: return "kept";
    }
    return "unknown";
}

// The relations the entry's privilege checks name, as oid[]; NULL if its
// checks cannot be read.
Datum relations_array(const char *meta, uint32_t meta_len, bool *isnull) {
    int n = pgmemo::checked_relations(meta, meta_len, nullptr, 0);
    *isnull = n < 0;
    if (n < 0) return (Datum)0;
    Oid *relids = static_cast<Oid *>(palloc(sizeof(Oid) * (n ? n : 1)));
    pgmemo::checked_relations(meta, meta_len, relids, n);
    Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * (n ? n : 1)));
    for (int i = 0; i < n; i++) values[i] = ObjectIdGetDatum(relids[i]);
    return PointerGetDatum(construct_array(values, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

// One row of memo.entries from its copy. The cache name is shown for this
// database's entries, and for another's as the query is; the query, the
// parameters and the relations are shown only to the entry's role (with
// the values the key holds of the settings its statement reads: the
// entry's tenant), superusers and pg_read_all_stats (parameters can be
// secrets). The rows and the error only to the entry's role and
// superusers: a count's rows are the query's answer, which
// pg_read_all_stats does not entitle a role to (pg_stat_statements shows
// it no results either).
void put_entry_row(ReturnSetInfo *rsinfo, const EntryCopy &c, bool all_stats) {
    const char *key = reinterpret_cast<const char *>(&c) + MAXALIGN(sizeof(EntryCopy));
    const char *meta = key + MAXALIGN(c.key_len);
    pgmemo::KeyIdentity id;
    Oid userid;
    text *query;
    ArrayType *params;
    if (!pgmemo::key_identity(key, c.key_len, &id) || !pgmemo::describe_key(key, c.key_len, &userid, &query, &params))
        return;  // not a call's key: nothing stores one
    bool own = pgmemo::owns_key(key, c.key_len, userid);
    bool shown = all_stats || own;
    Datum values[kEntriesColumns];
    bool nulls[kEntriesColumns] = {false};
    values[0] = ObjectIdGetDatum(id.dbid);
    if (shown || id.dbid == MyDatabaseId)
        values[1] = PointerGetDatum(cstring_to_text_with_len(id.cache_name, int(id.cache_name_len)));
    else
        nulls[1] = true;
    values[2] = CStringGetTextDatum(kind_name(id.kind));
    values[3] = ObjectIdGetDatum(userid);
    values[4] = PointerGetDatum(query);
    values[5] = PointerGetDatum(params);
    values[6] = Int64GetDatum(int64(c.bytes));
    values[7] = Int64GetDatum(c.rows);
    nulls[7] = !own || (c.result != ResultKind::Rows && c.result != ResultKind::Count);
    values[8] = TimestampTzGetDatum(c.stamped_at);
    values[9] = CStringGetTextDatum(state_name(c.state));
    values[10] = BoolGetDatum(c.deltas);
    values[11] = relations_array(meta, c.meta_len, &nulls[11]);
    nulls[4] = nulls[5] = !shown;
    nulls[11] = nulls[11] || !shown;
    if (own && c.result == ResultKind::Error)
        values[12] = CStringGetTextDatum(unpack_sql_state(c.error_code));
    else
        nulls[12] = true;
    values[13] = Int64GetDatum(int64(c.estimated_hits));
    values[14] = TimestampTzGetDatum(time_t_to_timestamptz(pg_time_t(c.last_hit)));
    nulls[14] = c.last_hit == 0;
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

}  // namespace

Datum pg_memo_entries_1_2(PG_FUNCTION_ARGS) {
    pgmemo::check_result_columns(fcinfo, kEntriesColumns);
    pgmemo::Store &store = pgmemo::shared_state().store;
    InitMaterializedSRF(fcinfo, 0);
    auto *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    bool all_stats = pgmemo::reads_all_stats();
    // The rows' texts and arrays, freed bucket by bucket: a million entries
    // must not hold a million decoded keys at once.
    MemoryContext rows_context =
        AllocSetContextCreate(CurrentMemoryContext, "memo.entries rows", ALLOCSET_DEFAULT_SIZES);
    BucketBuffer buf{static_cast<char *>(palloc(64 * 1024)), 64 * 1024, 0, 0};
    uint32_t nbuckets = store.bucket_count();
    for (uint32_t b = 0; b < nbuckets; b++) {
        copy_bucket(store, b, &buf);
        MemoryContext old = MemoryContextSwitchTo(rows_context);
        for (size_t at = 0; at < buf.used;) {
            const auto &c = *reinterpret_cast<const EntryCopy *>(buf.data + at);
            put_entry_row(rsinfo, c, all_stats);
            at += copy_size(c.key_len, c.meta_len);
        }
        MemoryContextSwitchTo(old);
        MemoryContextReset(rows_context);
        CHECK_FOR_INTERRUPTS();
    }
    MemoryContextDelete(rows_context);
    pfree(buf.data);
    return (Datum)0;
}

namespace {

struct CacheOfDatabase {
    Oid dbid;
    const char *name;
    uint32_t len;
};

// Under a partition's exclusive lock: decodes, allocates nothing.
bool key_in_cache(const char *key, uint32_t len, void *context) {
    const auto *want = static_cast<const CacheOfDatabase *>(context);
    pgmemo::KeyIdentity id;
    return pgmemo::key_identity(key, len, &id) && id.dbid == want->dbid && id.cache_name_len == want->len &&
           memcmp(id.cache_name, want->name, want->len) == 0;
}

}  // namespace

// memo.reset(cache_name, database): removes the entries of one cache name
// in one database (the caller's by default) on this server, results and
// remembered errors alike; returns how many. Unlike memo.reset() it writes
// no WAL record: a standby keeps its own entries of that name.
Datum pg_memo_reset_cache_1_2(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("%s must not be null", PG_ARGISNULL(0) ? "cache_name" : "database"),
                        errhint("memo.reset() with no argument removes every entry.")));
    text *name = PG_GETARG_TEXT_PP(0);
    const char *dbname = NameStr(*PG_GETARG_NAME(1));
    Oid dbid = get_database_oid(dbname, true);
    if (!OidIsValid(dbid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_DATABASE), errmsg("database \"%s\" does not exist", dbname),
                        errhint("memo.entries shows each entry's database (datname).")));
    CacheOfDatabase want{dbid, VARDATA_ANY(name), uint32_t(VARSIZE_ANY_EXHDR(name))};
    PG_RETURN_INT64(int64(pgmemo::shared_state().store.remove_matching(key_in_cache, &want)));
}
