// Which errors are the query's own (query_errors.hpp).
#include "pg_memo.hpp"
#include "compute/query_errors.hpp"

namespace pgmemo {

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

bool error_is_remembered(int sqlerrcode) {
    // A privilege error can end by a membership granted, which moves no
    // counter the entry depends on.
    return error_belongs_to_query(sqlerrcode) && sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE;
}

}  // namespace pgmemo
