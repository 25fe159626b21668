// The counters the current transaction wrote (write_set.hpp).
#include "invalidate/write_set.hpp"

#include "counter_slots.hpp"

namespace pgmemo {

namespace {

// Grown in a trigger or a hook, where failing is still allowed; read by the
// commit's bump, which must not allocate.
KeptSlotSet written;
KeptSlotSet coarse;  // marked by anything but a watched table's trigger

}  // namespace

SlotSetView own_writes() { return written.view(); }

SlotSetView coarse_writes() { return coarse.view(); }

void mark_rows_written(uint32_t slot) { written.add(slot); }

void mark_written(uint32_t slot) {
    written.add(slot);
    coarse.add(slot);
}

void mark_relation_changed(Oid relid) {
    mark_written(relation_slot(relid));
    mark_written(definition_slot(relid));
}

void forget_writes() {
    written.clear();
    coarse.clear();
}

}  // namespace pgmemo
