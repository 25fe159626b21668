// The counters the current transaction wrote (write_set.hpp).
#include "invalidate/write_set.hpp"

#include "counter_slots.hpp"

namespace pgmemo {

namespace {

// In TopMemoryContext, so that the commit's bump can read them without
// allocating. Grown in a trigger or a hook, where failing is still allowed.
uint32_t *written_slots = nullptr;
uint32_t written_count = 0;
uint32_t written_capacity = 0;
uint64_t written_filter = 0;
uint32_t *coarse_slots = nullptr;
uint32_t coarse_count = 0;
uint32_t coarse_capacity = 0;
uint64_t coarse_filter = 0;

}  // namespace

SlotSetView own_writes() { return SlotSetView{written_slots, written_count, written_filter}; }

SlotSetView coarse_writes() { return SlotSetView{coarse_slots, coarse_count, coarse_filter}; }

void mark_rows_written(uint32_t slot) {
    if (own_writes().contains(slot)) return;
    append_kept(&written_slots, &written_count, &written_capacity, slot);
    written_filter |= SlotSetView::filter_bit(slot);
}

void mark_written(uint32_t slot) {
    mark_rows_written(slot);
    if (coarse_writes().contains(slot)) return;
    append_kept(&coarse_slots, &coarse_count, &coarse_capacity, slot);
    coarse_filter |= SlotSetView::filter_bit(slot);
}

void mark_relation_changed(Oid relid) {
    mark_written(relation_slot(relid));
    mark_written(definition_slot(relid));
}

void forget_writes() {
    written_count = 0;
    written_filter = 0;
    coarse_count = 0;
    coarse_filter = 0;
}

}  // namespace pgmemo
