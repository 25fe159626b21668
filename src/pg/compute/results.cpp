// A computation's result (results.hpp).
#include "compute/results.hpp"
#include "stored_rows.hpp"

extern "C" {
#include "access/detoast.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include "settings.hpp"

namespace pgmemo {

// The executor's rows, received one by one (a DestReceiver): a count's one
// row, or a list's rows written into the payload to store, until the
// payload would outgrow pg_memo.max_result_size; from then on (it will not
// be stored) the rows go into the caller's tuplestore (Call::spill), the
// payload's rows first. So a result too large to store costs the backend
// what the query run plainly through a function costs: the executor's
// memory and work_mem, not a copy of every row (SPI's own tuple table
// would be one, and the payload a second).
struct ResultReceiver {
    DestReceiver pub;  // first: the executor sees a DestReceiver
    Kind kind;
    MemoryContext payload_context;
    RowSpill *spill;   // nullptr: everything goes into the payload
    uint64_t bound;    // payload bytes past which rows spill
    uint64_t spilled_bytes;  // about what the payload would have taken, once spilling
    TupleDesc desc;
    char *payload;
    ResultWriter writer;
    int64 count;
};

namespace {

void put_row_for_caller(RowSpill *spill, HeapTuple tuple) {
    if (!spill->map) return tuplestore_puttuple(spill->store, tuple);
    HeapTuple converted = execute_attr_map_tuple(tuple, spill->map);
    tuplestore_puttuple(spill->store, converted);
    heap_freetuple(converted);
}

constexpr size_t kFirstPayloadBytes = 8192;

bool receive_count(TupleTableSlot *slot, DestReceiver *self) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    bool isnull;
    Datum d = slot_getattr(slot, 1, &isnull);
    rr->count = isnull ? 0 : DatumGetInt64(d);
    return true;
}

// The bytes a spilled row would take in the payload, about: a value stored
// out of line counts with its stored size, as the payload would hold it.
size_t stored_row_space(HeapTuple tuple, TupleDesc desc) {
    uint64_t len = tuple->t_len;
    for (int i = 0; HeapTupleHasExternal(tuple) && i < desc->natts; i++) {
        if (TupleDescAttr(desc, i)->attlen != -1) continue;
        bool isnull;
        Datum d = heap_getattr(tuple, i + 1, desc, &isnull);
        if (!isnull && VARATT_IS_EXTERNAL(DatumGetPointer(d)))
            len += toast_datum_size(d) + VARHDRSZ - VARSIZE_EXTERNAL(DatumGetPointer(d));
    }
    return row_space(uint32_t(Min(len, uint64_t(UINT32_MAX))));
}

// The payload's rows move to the caller's tuplestore, and the payload goes.
void start_spilling(ResultReceiver *rr) {
    rr->spilled_bytes = rr->writer.size();
    put_rows_for_caller(rr->payload, uint32_t(rr->writer.size()), rr->spill);
    pfree(rr->payload);
    rr->payload = nullptr;
}

// Room for space more bytes in the payload: doubled (huge allocations).
void grow_payload(ResultReceiver *rr, size_t space) {
    size_t needed = rr->writer.size() + space;
    if (needed > MaxAllocHugeSize || needed > UINT32_MAX)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("query result is too large")));
    size_t grown = Max(rr->writer.capacity() * 2, needed);
    grown = Min(grown, size_t(Min(MaxAllocHugeSize, size_t(UINT32_MAX))));
    rr->payload = static_cast<char *>(repalloc_huge(rr->payload, grown));
    rr->writer.rebase(rr->payload, grown);
}

bool receive_row(TupleTableSlot *slot, DestReceiver *self) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    bool should_free;
    HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
    if (rr->spill && rr->spill->store) {
        rr->spilled_bytes += stored_row_space(tuple, rr->desc);
        put_row_for_caller(rr->spill, tuple);
    } else {
        // A stored row must carry its own bytes, not TOAST pointers.
        MemoryContext old = MemoryContextSwitchTo(rr->payload_context);
        HeapTuple flat = HeapTupleHasExternal(tuple) ? toast_flatten_tuple(tuple, rr->desc) : tuple;
        MemoryContextSwitchTo(old);
        size_t space = row_space(flat->t_len);
        if (rr->spill && rr->writer.size() + space > rr->bound) {
            start_spilling(rr);
            rr->spilled_bytes += space;
            put_row_for_caller(rr->spill, flat);
        } else {
            if (space > rr->writer.capacity() - rr->writer.size()) grow_payload(rr, space);
            rr->writer.add_row(flat->t_data, flat->t_len);
        }
        if (flat != tuple) heap_freetuple(flat);
    }
    if (should_free) heap_freetuple(tuple);
    return true;
}

void receiver_startup(DestReceiver *self, int, TupleDesc desc) {
    auto *rr = reinterpret_cast<ResultReceiver *>(self);
    rr->desc = desc;
    if (rr->kind == Kind::Count) return;
    auto *cols = static_cast<ColumnType *>(palloc(sizeof(ColumnType) * (desc->natts ? desc->natts : 1)));
    for (int i = 0; i < desc->natts; i++)
        cols[i] = ColumnType{TupleDescAttr(desc, i)->atttypid, TupleDescAttr(desc, i)->atttypmod};
    size_t capacity = result_prefix_size(uint32_t(desc->natts)) + kFirstPayloadBytes;
    rr->payload = static_cast<char *>(MemoryContextAllocHuge(rr->payload_context, capacity));
    rr->writer = ResultWriter(rr->payload, capacity);
    rr->writer.begin_rows(cols, uint32_t(desc->natts));
}

void receiver_shutdown(DestReceiver *) {}
void receiver_destroy(DestReceiver *) {}

}  // namespace

ResultReceiver *new_receiver(const Call &call, MemoryContext payload_context) {
    auto *rr = static_cast<ResultReceiver *>(palloc0(sizeof(ResultReceiver)));
    rr->pub.receiveSlot = call.kind == Kind::Count ? receive_count : receive_row;
    rr->pub.rStartup = receiver_startup;
    rr->pub.rShutdown = receiver_shutdown;
    rr->pub.rDestroy = receiver_destroy;
    rr->pub.mydest = DestTuplestore;  // anything but DestNone, for which SPI reports no SELECT
    rr->kind = call.kind;
    rr->payload_context = payload_context;
    rr->spill = call.kind == Kind::List ? call.spill : nullptr;
    rr->bound = uint64_t(guc_max_result_size_kb) * 1024;
    rr->writer = ResultWriter(nullptr, 0);
    return rr;
}

// What the receiver holds once the executor is done.
Result received_result(ResultReceiver *rr) {
    Result r{};
    if (rr->kind == Kind::Count) {
        r.len = sizeof(ResultHeader);
        r.payload = static_cast<char *>(MemoryContextAlloc(rr->payload_context, r.len));
        ResultWriter w(r.payload, r.len);
        w.write_count(rr->count);
        return r;
    }
    if (rr->spill && rr->spill->store) {
        r.spilled = true;
        r.spilled_bytes = rr->spilled_bytes;
        return r;
    }
    r.payload = rr->payload;
    r.len = uint32_t(rr->writer.size());
    return r;
}

DestReceiver *receiver_dest(ResultReceiver *rr) { return &rr->pub; }

namespace {

// The stored rows have the query's own shape; they can be handed over as
// they are when the caller's row type has the same column types.
bool same_row_shape(const ResultReader &rd, TupleDesc expected) {
    if (uint32_t(expected->natts) != rd.ncolumns()) return false;
    for (int i = 0; i < expected->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(expected, i);
        if (att->attisdropped || att->atttypid != rd.columns()[i].type_oid) return false;
    }
    return true;
}

// What declared the caller's row type, as a mismatch names it.
const char *declaration(const RowSpill &spill) {
    switch (spill.declared_by) {
        case DeclaredBy::ColumnList: return "the column definition list";
        case DeclaredBy::RowTypeArgument:
            return psprintf("row type %s (memo.list_as's first argument)", format_type_be(spill.expected->tdtypeid));
        case DeclaredBy::Statement: break;
    }
    return "the statement's planned result";
}

// How to make them agree, besides a cast in the query.
const char *declaration_hint(const RowSpill &spill, const char *query_type) {
    switch (spill.declared_by) {
        case DeclaredBy::ColumnList: return psprintf("declare the column as %s in the column definition list", query_type);
        case DeclaredBy::RowTypeArgument: return psprintf("pass a row type whose column is %s", query_type);
        case DeclaredBy::Statement: break;
    }
    return "run the statement again, to plan it anew";
}

void column_mismatch(const RowSpill &spill, int position, Form_pg_attribute declared, const ColumnType &query) {
    const char *declared_type = format_type_with_typemod(declared->atttypid, declared->atttypmod);
    const char *query_type = format_type_with_typemod(query.type_oid, query.typmod);
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("column \"%s\" (position %d) is %s in the query, but %s in %s",
                           NameStr(declared->attname), position, query_type, declared_type, declaration(spill)),
                    errhint("Cast the query's column %d to %s, or %s.", position, declared_type,
                            declaration_hint(spill, query_type))));
}

void column_count_mismatch(const RowSpill &spill, uint32_t query_columns, int declared_columns) {
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("the query returns %u columns, but %s has %d", query_columns, declaration(spill),
                           declared_columns),
                    spill.declared_by == DeclaredBy::RowTypeArgument
                        ? errhint("Select one column for each of the row type's columns, in its order.")
                        : errhint("Declare one column for each of the query's columns, in the query's order.")));
}

// Raises 42804 unless the stored rows convert to the caller's row type by
// position: the checks of convert_tuples_by_position (dropped columns of
// the row type are skipped; a declared typmod must match), made here so
// that the error names the column, both types and what declared the row.
void check_row_type(const ResultReader &rd, const RowSpill &spill) {
    TupleDesc expected = spill.expected;
    uint32_t q = 0;
    int declared = 0;
    for (int i = 0; i < expected->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(expected, i);
        if (att->attisdropped) continue;
        declared++;
        if (q >= rd.ncolumns()) continue;
        const ColumnType &col = rd.columns()[q++];
        if (att->atttypid != col.type_oid || (att->atttypmod >= 0 && att->atttypmod != col.typmod))
            column_mismatch(spill, declared, att, col);
    }
    if (uint32_t(declared) != rd.ncolumns()) column_count_mismatch(spill, rd.ncolumns(), declared);
}

}  // namespace

void put_rows_for_caller(const char *payload, uint32_t len, RowSpill *spill) {
    ResultReader rd(payload, len);
    if (!rd.valid() || rd.kind() != ResultKind::Rows) elog(ERROR, "pg_memo: corrupt row result");
    if (!spill->store) {
        if (!same_row_shape(rd, spill->expected)) {
            check_row_type(rd, *spill);
            spill->map = convert_tuples_by_position(stored_descriptor(rd), spill->expected,
                                                    "query result does not match the caller's row type");
        }
        // Under the caller's memory and resource owner: a miss path run in
        // a subtransaction (stale_on_error) must not take the store's
        // temporary files with it.
        MemoryContext old = MemoryContextSwitchTo(spill->context);
        ResourceOwner owner = CurrentResourceOwner;
        CurrentResourceOwner = spill->owner;
        spill->store = tuplestore_begin_heap(spill->random_access, false, work_mem);
        CurrentResourceOwner = owner;
        MemoryContextSwitchTo(old);
    }
    const char *data;
    uint32_t row_len;
    while (rd.next_row(&data, &row_len)) {
        HeapTupleData tuple;
        tuple.t_len = row_len;
        tuple.t_data = reinterpret_cast<HeapTupleHeader>(const_cast<char *>(data));
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        put_row_for_caller(spill, &tuple);
    }
}

namespace {

// Said once per session (memo.stats counts every one as too_large): a
// result that is computed on every call because it cannot be stored.
void warn_not_stored(const Shared &sh, uint32_t slot, uint64_t bytes, InsertStatus why) {
    if (!limit_message_due(Limit::ResultNotStored)) return;
    const char *name = sh.stats.slot(slot).name;
    unsigned long long kb = (bytes + 1023) / 1024;
    const char *detail = "It is computed on every call, and counted as too_large in memo.stats; this warning is "
                         "given once per session.";
    if (why == InsertStatus::NoSpace)
        ereport(limit_warning_level,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("a result of cache name \"%s\" is not stored: no room could be made for its %llu kB in "
                        "pg_memo.cache_size (%d kB)",
                        name, kb, guc_cache_size_kb),
                 errdetail("%s", detail),
                 errhint("The entries that take the arena are held by computations in progress; raise "
                         "pg_memo.cache_size in postgresql.conf and restart the server.")));
    else if (bytes > uint64_t(guc_max_result_size_kb) * 1024)
        ereport(limit_warning_level,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("a result of cache name \"%s\" is not stored: about %llu kB, larger than "
                        "pg_memo.max_result_size (%d kB)",
                        name, kb, guc_max_result_size_kb),
                 errdetail("%s", detail),
                 errhint("Raise pg_memo.max_result_size (as a superuser: SET, ALTER ROLE or "
                         "postgresql.conf), or make the result smaller (a page of it, with LIMIT).")));
    else
        ereport(limit_warning_level,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("a result of cache name \"%s\" is not stored: about %llu kB, more than half of "
                        "pg_memo.cache_size (%d kB)",
                        name, kb, guc_cache_size_kb),
                 errdetail("%s", detail),
                 errhint("Raise pg_memo.cache_size in postgresql.conf and restart the server, or make the "
                         "result smaller (a page of it, with LIMIT).")));
}

}  // namespace

namespace {

EntryParts entry_parts(uint32_t slot, const Encoded &key, const Analysis &a, const Result &r) {
    EntryParts parts;
    parts.hash = key.hash;
    parts.key = key.key;
    parts.key_len = key.key_len;
    parts.deps = a.deps;
    parts.ndeps = a.ndeps;
    parts.meta = a.meta;
    parts.meta_len = a.meta_len;
    parts.payload = r.payload;
    parts.payload_len = r.len;
    parts.stats_slot = slot;
    parts.stamped_at = a.stamped_at;
    parts.snapshot_print = a.snapshot_print;
    return parts;
}

bool fits(const Result &r) { return !r.spilled && r.len <= uint64_t(guc_max_result_size_kb) * 1024; }

}  // namespace

bool store_result(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const Result &r,
                  uint64_t *pinned) {
    if (!fits(r)) {
        sh.stats.add(slot, kTooLarge);
        warn_not_stored(sh, slot, r.spilled ? r.spilled_bytes : r.len, InsertStatus::TooLarge);
        return false;
    }
    EntryParts parts = entry_parts(slot, key, a, r);
    InsertStatus status = sh.store.insert(parts, ~uint64_t(0), pinned);
    if (status == InsertStatus::Stored) return true;
    sh.stats.add(slot, kTooLarge);
    warn_not_stored(sh, slot, Store::entry_size(parts), status);
    return false;
}

void hand_to_waiters(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const Result &r,
                     uint64_t &pinned) {
    if (!fits(r) || a.snapshot_print == 0) return;
    sh.store.insert_for_waiters(entry_parts(slot, key, a, r), ~uint64_t(0), pinned);
}

}  // namespace pgmemo
