// Which trigger counts as pg_memo's, and whether a table is watched.
#include "invalidate/watch.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(pg_memo_is_watch_trigger);
Datum pg_memo_is_watch_trigger(PG_FUNCTION_ARGS);
}

namespace pgmemo {

namespace {

constexpr const char *kTriggerName = "pg_memo_invalidate";

// memo.invalidation_trigger(): the extension is not relocatable, so its
// schema is always memo. Looked up without privilege checks: it runs for
// any role that drops any trigger, in databases that may have a schema
// named memo of their own that the role may not use.
Oid memo_function_without_arguments(const char *name) {
    Oid schema = get_namespace_oid(kExtensionSchema, true);
    if (!OidIsValid(schema)) return InvalidOid;
    return GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
                           PointerGetDatum(buildoidvector(nullptr, 0)), ObjectIdGetDatum(schema));
}

Oid trigger_function() { return memo_function_without_arguments("invalidation_trigger"); }


// The one trigger memo.watch creates: BEFORE INSERT OR UPDATE OR DELETE OR
// TRUNCATE, FOR EACH STATEMENT, calling memo.invalidation_trigger(), with no
// WHEN, no column list, no arguments, no transition tables, and not a
// constraint trigger. Anything else that bears the name may skip writes (a
// WHEN (false) planted by a role with only the TRIGGER privilege).
constexpr int16 kWatchTriggerType = TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE |
                                    TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE;

// The fields of a trigger that decide whether it is pg_memo's, read from the
// relcache (Trigger) or from pg_trigger.
struct TriggerShape {
    const char *name;
    Oid function;
    int16 type;
    int16 nargs;
    int nattr;
    bool has_when;
    bool has_transition_tables;
    Oid constraint;
};

bool is_watch_trigger_shape(const TriggerShape &t) {
    return strcmp(t.name, kTriggerName) == 0 && t.function == trigger_function() &&
           t.type == kWatchTriggerType && t.nargs == 0 && t.nattr == 0 && !t.has_when &&
           !t.has_transition_tables && !OidIsValid(t.constraint);
}

// The pg_trigger row of a trigger, copied; nullptr if there is none.
HeapTuple trigger_tuple(Oid trigger_oid) {
    Relation triggers = table_open(TriggerRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(trigger_oid));
    SysScanDesc scan = systable_beginscan(triggers, TriggerOidIndexId, true, nullptr, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    if (tuple) tuple = heap_copytuple(tuple);
    systable_endscan(scan);
    table_close(triggers, AccessShareLock);
    return tuple;
}

}  // namespace

bool is_watch_trigger(Oid trigger_oid) {
    HeapTuple tuple = trigger_tuple(trigger_oid);
    if (!tuple) return false;
    auto *t = reinterpret_cast<Form_pg_trigger>(GETSTRUCT(tuple));
    TriggerShape shape{NameStr(t->tgname),
                       t->tgfoid,
                       t->tgtype,
                       t->tgnargs,
                       t->tgattr.dim1,
                       !heap_attisnull(tuple, Anum_pg_trigger_tgqual, nullptr),
                       !heap_attisnull(tuple, Anum_pg_trigger_tgoldtable, nullptr) ||
                           !heap_attisnull(tuple, Anum_pg_trigger_tgnewtable, nullptr),
                       t->tgconstraint};
    bool ours = is_watch_trigger_shape(shape);
    heap_freetuple(tuple);
    return ours;
}

WatchState relation_watch_state(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td) return WatchState::NotWatched;
    for (int i = 0; i < td->numtriggers; i++) {
        const Trigger &t = td->triggers[i];
        if (strcmp(t.tgname, kTriggerName) != 0) continue;  // names are unique per table
        TriggerShape shape{t.tgname,
                           t.tgfoid,
                           t.tgtype,
                           t.tgnargs,
                           t.tgnattr,
                           t.tgqual != nullptr,
                           t.tgoldtable != nullptr || t.tgnewtable != nullptr,
                           t.tgconstraint};
        if (!is_watch_trigger_shape(shape)) return WatchState::NotWatched;
        // (Logical replication apply fires no statement triggers; apply
        // workers mark their subscription's tables at commit, see
        // invalidation.cpp.)
        return t.tgenabled == TRIGGER_FIRES_ALWAYS ? WatchState::Watched : WatchState::Disabled;
    }
    return WatchState::NotWatched;
}

Oid delta_trigger_function() { return memo_function_without_arguments("delta_trigger"); }

bool relation_keeps_deltas(Relation rel) {
    TriggerDesc *td = rel->trigdesc;
    if (!td) return false;
    // memo.delta_trigger() exists from 1.1 on; looked up only for tables
    // whose queries qualify.
    Oid function = delta_trigger_function();
    int16 events = 0;
    for (int i = 0; i < td->numtriggers; i++) {
        const Trigger &t = td->triggers[i];
        if (t.tgfoid != function || t.tgenabled != TRIGGER_FIRES_ALWAYS || TRIGGER_FOR_ROW(t.tgtype))
            continue;
        if (!TRIGGER_FOR_AFTER(t.tgtype) || t.tgnattr != 0 || t.tgqual) continue;
        if (TRIGGER_FOR_INSERT(t.tgtype) && t.tgnewtable) events |= TRIGGER_TYPE_INSERT;
        if (TRIGGER_FOR_UPDATE(t.tgtype) && t.tgnewtable && t.tgoldtable) events |= TRIGGER_TYPE_UPDATE;
        if (TRIGGER_FOR_DELETE(t.tgtype) && t.tgoldtable) events |= TRIGGER_TYPE_DELETE;
    }
    return events == (TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE);
}

}  // namespace pgmemo

// memo.is_watch_trigger(oid), since 1.1: the same test in SQL.
Datum pg_memo_is_watch_trigger(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(pgmemo::is_watch_trigger(PG_GETARG_OID(0))); }
