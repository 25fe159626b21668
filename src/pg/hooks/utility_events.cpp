// The one hub of utility statements (utility_events.hpp). Each statement
// passes, in this order, through:
//   1. registered statements (registered/plan_hook.hpp): for a top-level
//      EXECUTE, its prepared statement's source text is what the planner
//      hook sees planned, while the statement runs (outermost, so that
//      every later step runs inside it);
//   2. catalog changes (invalidate/catalog_changes.hpp): a statement that
//      can change the catalogs makes its transaction a bypass from here on,
//      before anything of it runs;
//   3. two-phase commit (durability/two_phase.hpp): PREPARE TRANSACTION's
//      gid is noted; COMMIT PREPARED and ROLLBACK PREPARED run between the
//      announcement and the bump of the prepared transaction's counters;
//   4. catalog changes again: DROP DATABASE forgets its entries once it
//      ran; a statement that commits in steps keeps its marks for each;
// and then the statement itself: the hook installed before pg_memo's, or
// PostgreSQL's own.
#include "hooks/utility_events.hpp"

#include "durability/two_phase.hpp"
#include "invalidate/catalog_changes.hpp"
#include "registered/plan_hook.hpp"

namespace pgmemo {

ProcessUtility_hook_type utility_before_memo = nullptr;

void process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
                     ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *query_env,
                     DestReceiver *dest, QueryCompletion *qc) {
    Node *stmt = pstmt->utilityStmt;
    auto run_statement = [&] {
        if (utility_before_memo)
            utility_before_memo(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
        else
            standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
    };
    with_execute_source(stmt, context, [&] {
        note_utility_statement(stmt);
        if (IsA(stmt, TransactionStmt)) {
            const auto &transaction = *castNode(TransactionStmt, stmt);
            if (transaction.kind == TRANS_STMT_PREPARE) note_prepare_gid(transaction.gid);
            if (transaction.kind == TRANS_STMT_COMMIT_PREPARED || transaction.kind == TRANS_STMT_ROLLBACK_PREPARED)
                return finish_prepared(transaction, run_statement);
        }
        run_utility_statement(stmt, context, run_statement);
    });
}

}  // namespace pgmemo
