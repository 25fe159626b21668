// Which errors are the query's own: the one classification of an error
// raised while a call is computed.
#pragma once

namespace pgmemo {

// Errors of the query itself, which every caller of the key would get
// too: shared with a flight's waiters. Not those of the caller's situation
// (cancels, timeouts, shortages, serialization): its waiters take over.
bool error_belongs_to_query(int sqlerrcode);

// Those of them stored under the key for pg_memo.error_ttl.
bool error_is_remembered(int sqlerrcode);

}  // namespace pgmemo
