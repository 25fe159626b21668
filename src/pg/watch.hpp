// Which trigger counts as pg_memo's, and whether a table is watched
// (docs/consistency.md, "What counts as watched").
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Whether this trigger is named and calls like pg_memo's (for noticing its
// drop), and whether it is exactly what memo.watch creates (for watching).
bool is_pg_memo_trigger(Oid trigger_oid);
bool is_watch_trigger(Oid trigger_oid);

// Whether rel carries pg_memo's trigger, and in which state. Reads the
// relcache's trigger descriptor: no catalog access.
enum class WatchState { NotWatched, Watched, Disabled };
WatchState relation_watch_state(Relation rel);

}  // namespace pgmemo
