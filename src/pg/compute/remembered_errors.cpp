// Remembered errors (remembered_errors.hpp).
#include "compute/remembered_errors.hpp"
#include "compute/results.hpp"
#include "copy_out_sink.hpp"
#include "compute/statement_snapshot.hpp"
#include "invalidate/write_set.hpp"
#include "privileges.hpp"
#include "reason_log.hpp"
#include "result_format.hpp"
#include "settings.hpp"

namespace pgmemo {

void remember_error(Shared &sh, uint32_t slot, const Encoded &key, const Analysis &a, const ErrorData *e) {
    Result r{};
    r.len = uint32_t(error_result_size(strlen(e->message ? e->message : ""), strlen(e->detail ? e->detail : ""),
                                       strlen(e->hint ? e->hint : "")));
    r.payload = static_cast<char *>(palloc(r.len));
    ResultWriter w(r.payload, r.len);
    if (!w.write_error(e->sqlerrcode, e->message, e->detail, e->hint)) return;
    Analysis remembered = a;
    remembered.snapshot_print = 0;  // an error answers as of now only
    store_result(sh, slot, remembered_error_key(key), remembered, r, nullptr);
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
    if (GetCurrentTimestamp() - sink.stamped_at >= Micros(guc_error_ttl_ms) * 1000) {
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
