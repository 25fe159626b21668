// Older answers and remembered errors: what a caller may opt into instead
// of an exact result (older_answers.hpp; docs/consistency.md, "Opting out
// of exactness").
#include "serve/older_answers.hpp"
#include "compute/statement_snapshot.hpp"
#include "settings.hpp"
#include "reason_log.hpp"
#include "shared_state.hpp"
#include "privileges.hpp"
#include "compute/query_errors.hpp"
#include "invalidate/write_set.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
#include "utils/timeout.h"
}

namespace pgmemo {

namespace {

Micros now_micros() { return GetCurrentTimestamp(); }

const char *cache_name_of(uint32_t stats_slot) { return shared_state().stats.slot(stats_slot).name; }

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

// The failures an older answer may replace: the query's own errors, a lock
// timeout, a statement timeout. Never a cancel, a termination, a shortage
// of the server's own resources, or a privilege the caller lacks.
bool older_answer_may_replace(int sqlerrcode, const StatementTimer &timer) {
    if (sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE) return true;
    if (sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE) return false;  // the caller's, not the query's
    if (sqlerrcode == ERRCODE_QUERY_CANCELED) return statement_timeout_fired(timer);
    return error_belongs_to_query(sqlerrcode);
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
    return older.present && bound_ms > 0 && now_micros() - older.invalidated_after <= Micros(bound_ms) * 1000;
}

// The last tenth of the bound is left for the refresh to finish in.
constexpr int kRefreshAtTenths = 9;

bool refresh_due(const OlderAnswer &older) {
    return now_micros() - older.stamped_at >= Micros(guc_max_staleness_ms) * 1000 * kRefreshAtTenths / 10;
}

bool serve_older(const OlderAnswer &older, uint32_t stats_slot, Counter counter, Result *out) {
    if (!privileges_still_hold(older.meta, older.meta_len)) return false;
    shared_state().stats.add(stats_slot, counter);
    *out = older.result;
    return true;
}

namespace {
struct MissRun {
    Result (*miss_path)(void *);
    void *arg;
    Result result;
};
void run_miss(void *run) {
    auto *r = static_cast<MissRun *>(run);
    r->result = r->miss_path(r->arg);
}
}  // namespace

Result older_on_error(const OlderAnswer &older, uint32_t stats_slot, Result (*miss_path)(void *), void *arg) {
    if (!within_bound(older, guc_stale_on_error_ms)) return miss_path(arg);

    StatementTimer timer = statement_timer();
    MissRun run{miss_path, arg, {}};
    ErrorData *error = error_of_subtransaction(run_miss, &run);
    if (!error) return run.result;

    Result older_result;
    if (!older_answer_may_replace(error->sqlerrcode, timer) || !within_bound(older, guc_stale_on_error_ms) ||
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

namespace {

// A remembered error older than the caller's error_ttl: the call computes
// again. Removed, so that the reason is counted once, by the call that
// removed it (a newer error stored meanwhile has another stamp and stays).
void forget_outlived_error(const Encoded &error_key, Micros stamped_at, uint32_t stats_slot) {
    Shared &sh = shared_state();
    if (!sh.store.remove_stamped(error_key.hash, error_key.key, error_key.key_len, stamped_at)) return;
    sh.stats.add(stats_slot, kRecomputeErrorExpired);
    const char *name = cache_name_of(stats_slot);
    log_reason(name, int(strlen(name)), "remembered error outlived", kRecomputeErrorExpired);
}

}  // namespace

void raise_if_remembered(const Call &call, const Encoded &key, uint32_t stats_slot) {
    if (guc_error_ttl_ms <= 0) return;
    Encoded error_key = remembered_error_key(key);
    CopyOutSink sink;
    if (shared_state().store.lookup(error_key.hash, error_key.key, error_key.key_len, own_writes(), sink) !=
        LookupStatus::Hit)
        return;
    ResultReader rd(sink.payload, sink.payload_len);
    if (!rd.valid() || rd.kind() != ResultKind::Error) return;
    if (now_micros() - sink.stamped_at >= Micros(guc_error_ttl_ms) * 1000) {
        forget_outlived_error(error_key, sink.stamped_at, stats_slot);
        return;
    }
    if (!privileges_still_hold(sink.meta, sink.meta_len)) return;
    if (!answers_as_of_now(call)) return;
    shared_state().stats.add(stats_slot, kErrorHits);
    ereport(ERROR, (errcode(rd.error_code()), errmsg_internal("%s", rd.error_message()),
                    rd.error_detail()[0] ? errdetail_internal("%s", rd.error_detail()) : 0,
                    rd.error_hint()[0] ? errhint("%s", rd.error_hint()) : 0,
                    errcontext("pg_memo: error remembered for \"%s\" (pg_memo.error_ttl)",
                               cache_name_of(stats_slot))));
}

}  // namespace pgmemo
