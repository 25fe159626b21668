// Which trigger counts as pg_memo's, and whether a table is watched
// (docs/consistency.md, "What counts as watched").
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Whether this trigger is exactly what memo.watch creates (for watching).
bool is_watch_trigger(Oid trigger_oid);

// Whether rel carries pg_memo's trigger, and in which state. Reads the
// relcache's trigger descriptor: no catalog access.
enum class WatchState { NotWatched, Watched, Disabled };
WatchState relation_watch_state(Relation rel);

// Whether rel's changed rows are captured (memo.watch(rel, deltas => true)):
// memo.delta_trigger() AFTER INSERT, UPDATE and DELETE, each with the
// transition tables of its event, enabled ALWAYS. Deciding only which
// entries may be kept by deltas: what a write captured is checked by the
// writer (delta_capture.cpp), whatever triggers the table has.
bool relation_keeps_deltas(Relation rel);

// memo.delta_trigger(), or InvalidOid before 1.1.
Oid delta_trigger_function();

}  // namespace pgmemo
