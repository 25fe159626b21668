// The subtransaction runner and the classification of errors (query_errors.hpp).
#include "pg_memo.hpp"
#include "query_errors.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "utils/resowner.h"
}

namespace pgmemo {

ErrorData *error_of_subtransaction(FnRef<void()> fn) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    ErrorData *error = nullptr;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    PG_TRY();
    {
        fn();
        ReleaseCurrentSubTransaction();
    }
    PG_CATCH();
    {
        // Writes no shared memory: only the copy of the error and
        // PostgreSQL's own rollback.
        MemoryContextSwitchTo(context);
        error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
    }
    PG_END_TRY();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
    return error;
}

void point_into_text(void *arg) {
    const auto *t = static_cast<const TextErrors *>(arg);
    // A position in the outer statement (the raw parser's), or one SPI
    // already made internal to the text it parsed.
    int outer = geterrposition();
    int position = outer > 0 ? outer : getinternalerrposition();
    if (position <= 0) return;
    int in_text = position - t->skipped;
    if (in_text <= 0 || in_text > pg_mbstrlen(t->text)) return;  // in the wrapper: as SPI said
    if (outer > 0) errposition(0);
    internalerrposition(in_text);
    internalerrquery(t->text);
}

bool error_belongs_to_query(int sqlerrcode) {
    switch (ERRCODE_TO_CATEGORY(sqlerrcode)) {
        case ERRCODE_OPERATOR_INTERVENTION:             // 57: cancel, timeout, shutdown
        case ERRCODE_CONNECTION_EXCEPTION:              // 08
        case ERRCODE_INSUFFICIENT_RESOURCES:            // 53
        case ERRCODE_PROGRAM_LIMIT_EXCEEDED:            // 54
        case ERRCODE_TRANSACTION_ROLLBACK:              // 40: serialization, deadlock
        case ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE:  // 55: lock_timeout
        case ERRCODE_SYSTEM_ERROR:                      // 58
        case ERRCODE_INTERNAL_ERROR:                    // XX
        case ERRCODE_INVALID_TRANSACTION_STATE:         // 25
            return false;
        default: return true;
    }
}

bool error_explains_refusal(int sqlerrcode) {
    return error_belongs_to_query(sqlerrcode) || sqlerrcode == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE ||
           ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_PROGRAM_LIMIT_EXCEEDED;
}

bool error_is_remembered(int sqlerrcode) {
    // A privilege error can end by a membership granted, which moves no
    // counter the entry depends on.
    return error_belongs_to_query(sqlerrcode) && sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE;
}

bool error_is_interrupt(int sqlerrcode) {
    return sqlerrcode == ERRCODE_QUERY_CANCELED || sqlerrcode == ERRCODE_ADMIN_SHUTDOWN;
}

bool older_answer_may_replace(int sqlerrcode, bool statement_timeout_fired) {
    if (sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE) return true;
    if (sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE) return false;  // the caller's, not the query's
    if (sqlerrcode == ERRCODE_QUERY_CANCELED) return statement_timeout_fired;
    return error_belongs_to_query(sqlerrcode);
}

}  // namespace pgmemo
