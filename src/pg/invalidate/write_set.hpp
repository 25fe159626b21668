// The counters the current transaction wrote: marked as it writes, bumped
// by its commit (invalidation.hpp, called by transaction_events.cpp) and
// forgotten at its end. Readers use it too: an entry that depends on a
// counter this transaction wrote is never served to it (its own writes are
// in no entry).
#pragma once

#include "pg_memo.hpp"
#include "generations.hpp"

namespace pgmemo {

// A set of counter slots in TopMemoryContext: it outlives transactions and
// errors, and reading it never allocates.
struct KeptSlotSet {
    uint32_t *slots = nullptr;
    uint32_t count = 0;
    uint32_t capacity = 0;
    uint64_t filter = 0;

    SlotSetView view() const { return SlotSetView{slots, count, filter}; }
    void add(uint32_t slot) {
        if (view().contains(slot)) return;
        append_kept(&slots, &count, &capacity, slot);
        filter |= SlotSetView::filter_bit(slot);
    }
    void clear() {
        count = 0;
        filter = 0;
    }
};

// Every counter this transaction marked.
SlotSetView own_writes();

// Those marked by anything but a watched table's statement trigger (DDL,
// memo.invalidate, a replication apply): their bumps carry no delta record.
SlotSetView coarse_writes();

// Marks a counter as written by this transaction: bumped at commit, and
// this transaction bypasses entries that depend on it until then. Coarse.
void mark_written(uint32_t slot);

// A watched table's trigger fired: its rows are being written. Unlike
// mark_written, this leaves the counter free to be bumped with a delta
// record (delta_capture.hpp).
void mark_rows_written(uint32_t slot);

// A relation's definition changed (DDL, memo.invalidate): its Relation and
// Definition counters are both marked, so no caller accepts an older answer
// over it (pg_memo.max_staleness).
void mark_relation_changed(Oid relid);

// The transaction ended (committed and bumped, prepared, or aborted).
void forget_writes();

}  // namespace pgmemo
