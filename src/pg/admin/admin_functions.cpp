// Functions for DBAs: manual invalidation, resets, a relation's generation.
#include "call.hpp"
#include "invalidate/write_set.hpp"

#include "compat.hpp"
#include "durability/wal_records.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(pg_memo_invalidate);
PG_FUNCTION_INFO_V1(pg_memo_reset);
PG_FUNCTION_INFO_V1(pg_memo_reset_stats);
PG_FUNCTION_INFO_V1(pg_memo_generation);
Datum pg_memo_invalidate(PG_FUNCTION_ARGS);
Datum pg_memo_reset(PG_FUNCTION_ARGS);
Datum pg_memo_reset_stats(PG_FUNCTION_ARGS);
Datum pg_memo_generation(PG_FUNCTION_ARGS);
}

// Marks the table (and its partitions or children) as written: the bump
// happens now and again at commit, so entries computed meanwhile die too.
Datum pg_memo_invalidate(PG_FUNCTION_ARGS) {
    Oid relid = PG_GETARG_OID(0);
    pgmemo::Shared &sh = pgmemo::shared_state();
    if (!get_rel_name(relid))
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relid)));
    if (!pgmemo::compat_relation_owner_ok(relid, GetUserId()))
        aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)), get_rel_name(relid));
    List *rels = find_all_inheritors(relid, AccessShareLock, nullptr);
    ListCell *lc;
    TimestampTz now = GetCurrentTimestamp();
    foreach (lc, rels) {
        Oid rel = lfirst_oid(lc);
        pgmemo::mark_relation_changed(rel);
        sh.gens.bump(pgmemo::relation_slot(rel), now);
        sh.gens.bump(pgmemo::definition_slot(rel), now);
    }
    PG_RETURN_VOID();
}

Datum pg_memo_reset(PG_FUNCTION_ARGS) {
    pgmemo::log_reset();  // standbys empty their store too
    PG_RETURN_INT64(int64(pgmemo::shared_state().store.remove_all()));
}

Datum pg_memo_reset_stats(PG_FUNCTION_ARGS) {
    pgmemo::shared_state().stats.reset_counters(GetCurrentTimestamp());
    PG_RETURN_VOID();
}

Datum pg_memo_generation(PG_FUNCTION_ARGS) {
    pgmemo::Shared &sh = pgmemo::shared_state();
    PG_RETURN_INT64(int64(sh.gens.read(pgmemo::relation_slot(PG_GETARG_OID(0)))));
}
