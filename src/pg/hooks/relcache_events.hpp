// The one relcache callback of pg_memo, which passes each relcache
// invalidation to the subsystems in the order its source file's header
// writes down. (PostgreSQL has a few callback slots for every extension
// loaded: one is taken.)
#pragma once

#include "pg_memo.hpp"

namespace pgmemo {

// Registered by _PG_init with CacheRegisterRelcacheCallback.
void on_relcache_invalidation(Datum arg, Oid relid);

}  // namespace pgmemo
