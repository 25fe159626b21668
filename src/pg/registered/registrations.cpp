// This backend's copy of its database's registrations (registrations.hpp).
#include "registered/registrations.hpp"
#include "serve/call_options.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "commands/trigger.h"
#include "fmgr.h"

PG_FUNCTION_INFO_V1(pg_memo_statements_changed);
PG_FUNCTION_INFO_V1(pg_memo_blocked_shapes_changed);
Datum pg_memo_statements_changed(PG_FUNCTION_ARGS);
Datum pg_memo_blocked_shapes_changed(PG_FUNCTION_ARGS);
}

namespace pgmemo {
namespace {

// memo.statements' columns (pg_memo--1.1--1.2.sql; 1.3 added shape_id).
enum StatementsColumn {
    kQueryId = 1,
    kCacheName,
    kQuery,
    kMaxStaleness,
    kStaleOnError,
    kErrorTtl,
    kRelations,
    kColumns_1_2 = 9,
    kShapeId = 10,
    kColumns_1_3 = 10,
};

struct ShapeEntry {
    uint64 shape_id;
    const Registration *registration;
};

struct RelationEntry {
    Oid relid;
};

struct BlockedEntry {
    uint64 shape_id;
};

// Rebuilt whenever it is out of date; all of it lives in context.
struct Registry {
    bool current = false;
    uint64 invalidations = 0;  // relcache invalidations that concerned it
    Oid table = InvalidOid;
    MemoryContext context = nullptr;
    HTAB *by_query_id = nullptr;  // Registration, keyed by query_id
    HTAB *by_shape = nullptr;     // ShapeEntry: the first registration of each shape
    HTAB *relations = nullptr;    // RelationEntry: what registrations read
    HTAB *blocked = nullptr;      // BlockedEntry: memo.blocked_shapes (1.3)
    bool admission = false;       // the database has 1.3's objects (memo.blocked_shapes)
    long count = 0;
};
Registry registry;

int interval_ms(Datum d, bool isnull) { return isnull ? 0 : interval_option_ms(d); }

HTAB *new_table(const char *name, Size keysize, Size entrysize) {
    HASHCTL ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.keysize = keysize;
    ctl.entrysize = entrysize;
    ctl.hcxt = registry.context;
    return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

void add_registration(HeapTuple tuple, TupleDesc desc) {
    Datum values[kColumns_1_3];
    bool nulls[kColumns_1_3];
    heap_deform_tuple(tuple, desc, values, nulls);
    bool has_shape = desc->natts >= kShapeId && !nulls[kShapeId - 1];
    if (nulls[kQueryId - 1] || nulls[kCacheName - 1]) return;
    uint64 query_id = uint64(DatumGetInt64(values[kQueryId - 1]));
    bool found;
    auto *r = static_cast<Registration *>(hash_search(registry.by_query_id, &query_id, HASH_ENTER, &found));
    r->query_id = query_id;
    r->admitted_shape = 0;
    // Its shape (admission/statement_shape.hpp); none under 1.2's SQL.
    uint64 shape_id = has_shape ? uint64(DatumGetInt64(values[kShapeId - 1])) : 0;
    if (shape_id != 0) {
        // Several registrations of one shape: the one with the lowest query
        // identifier serves the statements of that shape no registration
        // names exactly, whatever order the table is read in. (Entries of
        // a dynahash do not move.)
        auto *s = static_cast<ShapeEntry *>(hash_search(registry.by_shape, &shape_id, HASH_ENTER, &found));
        if (!found || int64(r->query_id) < int64(s->registration->query_id)) s->registration = r;
    }
    r->cache_name = MemoryContextStrdup(registry.context, TextDatumGetCString(values[kCacheName - 1]));
    r->options.max_staleness_ms = interval_ms(values[kMaxStaleness - 1], nulls[kMaxStaleness - 1]);
    r->options.stale_on_error_ms = interval_ms(values[kStaleOnError - 1], nulls[kStaleOnError - 1]);
    r->options.error_ttl_ms = interval_ms(values[kErrorTtl - 1], nulls[kErrorTtl - 1]);
    registry.count++;
    if (nulls[kRelations - 1]) return;
    ArrayType *relations = DatumGetArrayTypeP(values[kRelations - 1]);
    Datum *relids;
    bool *relid_nulls;
    int n;
    deconstruct_array(relations, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &relids, &relid_nulls, &n);
    for (int i = 0; i < n; i++) {
        if (relid_nulls[i]) continue;
        Oid relid = DatumGetObjectId(relids[i]);
        hash_search(registry.relations, &relid, HASH_ENTER, &found);
    }
}

// Reads memo.blocked_shapes (1.3), where it exists: its trigger announces
// a change as one of memo.statements, which has this copy read again.
void load_blocked(Oid schema) {
    Oid table = get_relname_relid("blocked_shapes", schema);
    registry.admission = OidIsValid(table);
    if (!OidIsValid(table)) return;
    Relation rel = table_open(table, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 0, nullptr);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        bool isnull;
        Datum shape = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);
        if (isnull) continue;
        uint64 shape_id = uint64(DatumGetInt64(shape));
        hash_search(registry.blocked, &shape_id, HASH_ENTER, nullptr);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
}

// Reads memo.statements with the catalog snapshot: what has committed.
void load() {
    if (!registry.context)
        registry.context = AllocSetContextCreate(CacheMemoryContext, "pg_memo registrations", ALLOCSET_SMALL_SIZES);
    MemoryContextReset(registry.context);
    registry.by_query_id = nullptr;
    registry.by_shape = nullptr;
    registry.relations = nullptr;
    registry.blocked = nullptr;
    registry.admission = false;
    registry.count = 0;
    registry.current = false;  // until read whole: an ERROR on the way leaves it out of date
    uint64 invalidations = registry.invalidations;
    Oid schema = get_namespace_oid(kExtensionSchema, true);
    registry.table = OidIsValid(schema) ? get_relname_relid("statements", schema) : InvalidOid;
    if (!OidIsValid(registry.table)) {
        registry.current = registry.invalidations == invalidations;
        return;
    }
    MemoryContext old = MemoryContextSwitchTo(registry.context);
    registry.by_query_id = new_table("pg_memo registrations", sizeof(uint64), sizeof(Registration));
    registry.by_shape = new_table("pg_memo registration shapes", sizeof(uint64), sizeof(ShapeEntry));
    registry.relations = new_table("pg_memo registered relations", sizeof(Oid), sizeof(RelationEntry));
    registry.blocked = new_table("pg_memo blocked shapes", sizeof(uint64), sizeof(BlockedEntry));
    MemoryContextSwitchTo(old);
    Relation rel = table_open(registry.table, AccessShareLock);
    int natts = RelationGetDescr(rel)->natts;
    if (natts == kColumns_1_2 || natts == kColumns_1_3) {
        SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 0, nullptr);
        HeapTuple tuple;
        old = MemoryContextSwitchTo(registry.context);
        while (HeapTupleIsValid(tuple = systable_getnext(scan))) add_registration(tuple, RelationGetDescr(rel));
        MemoryContextSwitchTo(old);
        systable_endscan(scan);
    }
    table_close(rel, AccessShareLock);
    load_blocked(schema);
    // Current unless a change arrived while it was read.
    registry.current = registry.invalidations == invalidations;
}

void ensure_current() {
    if (!registry.current) load();
}

}  // namespace

const Registration *find_registration(uint64 query_id) {
    ensure_current();
    if (registry.count == 0) return nullptr;
    return static_cast<const Registration *>(hash_search(registry.by_query_id, &query_id, HASH_FIND, nullptr));
}

const Registration *find_registration_by_shape(uint64 shape_id) {
    ensure_current();
    if (registry.count == 0 || shape_id == 0) return nullptr;
    auto *s = static_cast<ShapeEntry *>(hash_search(registry.by_shape, &shape_id, HASH_FIND, nullptr));
    return s ? s->registration : nullptr;
}

bool any_registration_shapes() {
    ensure_current();
    return registry.by_shape && hash_get_num_entries(registry.by_shape) > 0;
}

bool shape_blocked(uint64 shape_id) {
    ensure_current();
    return registry.blocked && hash_get_num_entries(registry.blocked) > 0 &&
           hash_search(registry.blocked, &shape_id, HASH_FIND, nullptr) != nullptr;
}

bool registration_reads(Oid relid) {
    ensure_current();
    return registry.count > 0 && hash_search(registry.relations, &relid, HASH_FIND, nullptr) != nullptr;
}

bool any_registrations() {
    ensure_current();
    return registry.count > 0;
}

Oid statements_table() {
    ensure_current();
    return registry.table;
}

Oid statements_table_as_read() { return registry.table; }

bool admission_installed() {
    ensure_current();
    return registry.admission;
}

uint64 registry_version() { return registry.invalidations; }

void registrations_out_of_date(Datum, Oid relid) {
    if (relid == InvalidOid || relid == registry.table || !OidIsValid(registry.table)) {
        registry.current = false;
        registry.invalidations++;
    }
}

}  // namespace pgmemo

// memo.statements' statement trigger: every backend reads it again.
Datum pg_memo_statements_changed(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("memo.statements_changed() must be called as a trigger")));
    CacheInvalidateRelcache(reinterpret_cast<TriggerData *>(fcinfo->context)->tg_relation);
    return PointerGetDatum(nullptr);
}

// memo.blocked_shapes' statement trigger (1.3): announced as a change of
// memo.statements, so that every backend reads the registrations and the
// blocks again, and plans every SELECT again (each depends on
// memo.statements).
Datum pg_memo_blocked_shapes_changed(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("memo.blocked_shapes_changed() must be called as a trigger")));
    Relation blocked = reinterpret_cast<TriggerData *>(fcinfo->context)->tg_relation;
    Oid statements = get_relname_relid("statements", RelationGetNamespace(blocked));
    if (OidIsValid(statements)) CacheInvalidateRelcacheByRelid(statements);
    return PointerGetDatum(nullptr);
}
