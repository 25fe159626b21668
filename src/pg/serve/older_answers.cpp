// Older answers: what a caller may opt into instead of an exact result
// (older_answers.hpp; docs/consistency.md, "Opting out of exactness").
// Remembered errors, the third option, are compute's
// (compute/remembered_errors.hpp): a flight's leader raises them too.
#include "serve/older_answers.hpp"
#include "settings.hpp"
#include "shared_state.hpp"
#include "privileges.hpp"
#include "query_errors.hpp"
#include "invalidate/write_set.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
#include "utils/timeout.h"
}

namespace pgmemo {

namespace {

// A statement_timeout cancels with the same SQLSTATE as a user's cancel.
// Told apart by the timer: armed before the call, fired (no longer active)
// and past its deadline now.
struct StatementTimer {
    bool armed;
    TimestampTz deadline;
};

StatementTimer statement_timer() {
    bool armed = get_timeout_active(STATEMENT_TIMEOUT);
    return StatementTimer{armed, armed ? get_timeout_finish_time(STATEMENT_TIMEOUT) : 0};
}

bool statement_timeout_fired(const StatementTimer &t) {
    return t.armed && !get_timeout_active(STATEMENT_TIMEOUT) && GetCurrentTimestamp() >= t.deadline;
}

}  // namespace

bool older_answers_wanted() { return guc_max_staleness_ms > 0 || guc_stale_on_error_ms > 0; }

OlderAnswer older_answer(const CopyOutSink &sink, LookupStatus status) {
    OlderAnswer older{};
    if (status != LookupStatus::StaleKept && status != LookupStatus::StaleCopied) return older;
    // An entry kept by deltas is offered even when DDL moved it: not older,
    // just wrong.
    if (!sink.stale.data_only) return older;
    // This transaction's own writes are in no stored entry.
    if (own_writes().intersects(sink.deps, sink.ndeps)) return older;
    older.present = true;
    older.result = Result{sink.payload, sink.payload_len};
    older.meta = sink.meta;
    older.meta_len = sink.meta_len;
    older.stamped_at = sink.stamped_at;
    older.invalidated_after = sink.stale.invalidated_after;
    return older;
}

bool within_bound(const OlderAnswer &older, int bound_ms) {
    return older.present && bound_ms > 0 && GetCurrentTimestamp() - older.invalidated_after <= Micros(bound_ms) * 1000;
}

// The last tenth of the bound is left for the refresh to finish in.
constexpr int kRefreshAtTenths = 9;

bool refresh_due(const OlderAnswer &older) {
    return GetCurrentTimestamp() - older.stamped_at >= Micros(guc_max_staleness_ms) * 1000 * kRefreshAtTenths / 10;
}

bool serve_older(const OlderAnswer &older, uint32_t stats_slot, Counter counter, Result *out) {
    if (!privileges_still_hold(older.meta, older.meta_len)) return false;
    shared_state().stats.add(stats_slot, counter);
    *out = older.result;
    return true;
}

Result older_on_error(const OlderAnswer &older, uint32_t stats_slot, FnRef<Result()> miss_path) {
    if (!within_bound(older, guc_stale_on_error_ms)) return miss_path();

    StatementTimer timer = statement_timer();
    Result result{};
    ErrorData *error = error_of_subtransaction([&] { result = miss_path(); });
    if (!error) return result;

    Result older_result;
    if (!older_answer_may_replace(error->sqlerrcode, statement_timeout_fired(timer)) || !within_bound(older, guc_stale_on_error_ms) ||
        !serve_older(older, stats_slot, kStaleOnErrorHits, &older_result))
        ReThrowError(error);
    ereport(WARNING,
            (errcode(ERRCODE_WARNING),
             errmsg("pg_memo served an older result of \"%s\": computing the current one failed",
                    cache_name_of(stats_slot)),
             errdetail("The computation failed with SQLSTATE %s: %s. The result served misses the commits "
                       "made since it was computed, none longer ago than pg_memo.stale_on_error.",
                       unpack_sql_state(error->sqlerrcode), error->message),
             errhint("pg_memo.stale_on_error allows this; set it to 0 to get the error instead.")));
    return older_result;
}

}  // namespace pgmemo
