// The one subtransaction runner, and the one classification of an error
// raised while pg_memo runs something of the query's (its computation, its
// analysis, deltas evaluated over its expressions): which errors are the
// query's own, and which the caller's situation.
#pragma once

#include "pg_memo.hpp"
#include "function_ref.hpp"

namespace pgmemo {

// Runs fn in an internal subtransaction, committed when fn returns and
// rolled back when it raises: nullptr then, or its error, copied into the
// caller's memory context (the caller decides whether to raise it again).
// The caller's memory context and resource owner are current again after.
// fn must hold no pg_memo LWLock over a call that can raise, so that the
// rollback has nothing of pg_memo's to undo.
ErrorData *error_of_subtransaction(FnRef<void()> fn);

// An error raised while a query's text is parsed or analyzed points into
// that text (QUERY and its caret, as PostgreSQL reports one inside a
// function's body), not into the statement that passed the text. skipped:
// how many characters the parsed text has before the query's (a count's
// wrapper around it); a position in them is left as it is.
struct TextErrors {
    const char *text;
    int skipped;
};
// An ErrorContextCallback; its arg is a TextErrors.
void point_into_text(void *text_errors);

// Errors of the query itself, which every caller of the key would get
// too: shared with a flight's waiters. Not those of the caller's situation
// (cancels, timeouts, shortages, serialization): its waiters take over.
bool error_belongs_to_query(int sqlerrcode);

// Errors that say why a statement is not cached (memo.explain_cache): the
// query's own, and a table not watched (55000) or a limit (54). Not those
// of the caller's situation (cancels, shortages, lock timeouts, ...).
bool error_explains_refusal(int sqlerrcode);

// Those of them stored under the key for pg_memo.error_ttl.
bool error_is_remembered(int sqlerrcode);

// A cancel or a shutdown: raised again to the caller whatever pg_memo was
// doing, never taken for an answer ("cannot tell", an older answer).
bool error_is_interrupt(int sqlerrcode);

// The failures an older answer may replace (pg_memo.stale_on_error): the
// query's own errors, a lock timeout, a statement timeout (a cancel when
// statement_timeout_fired). Never another cancel, a termination, a
// shortage of the server's own resources, or a privilege the caller lacks.
bool older_answer_may_replace(int sqlerrcode, bool statement_timeout_fired);

}  // namespace pgmemo
