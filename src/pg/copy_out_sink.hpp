// A hit's copy of an entry, out of shared memory into the caller's memory.
#pragma once

#include "pg_memo.hpp"
#include "store.hpp"

namespace pgmemo {

// Copies a hit out of shared memory. Runs under the partition lock, so it
// must not raise errors: it allocates with MCXT_ALLOC_NO_OOM.
class CopyOutSink final : public HitSink {
public:
    char *payload = nullptr;
    uint32_t payload_len = 0;
    char *meta = nullptr;
    uint32_t meta_len = 0;
    Micros stamped_at = 0;
    uint64_t snapshot_print = 0;  // the entry's (EntryParts::snapshot_print)

    bool accept(const EntryView &e) noexcept override {
        size_t meta_at = MAXALIGN(size_t(e.payload_len));
        char *buf = static_cast<char *>(
            palloc_extended(meta_at + e.meta_len + 1, MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE));
        if (!buf) return false;
        memcpy(buf, e.payload, e.payload_len);
        memcpy(buf + meta_at, e.meta, e.meta_len);
        payload = buf;
        payload_len = e.payload_len;
        meta = buf + meta_at;
        meta_len = e.meta_len;
        stamped_at = e.stamped_at;
        snapshot_print = e.snapshot_print;
        return true;
    }

    // With want_stale, a stale entry kept by deltas is copied too, with its
    // dependencies, for carry_forward (compute/carry.hpp); with want_older, so
    // is one whose rows alone moved, for a caller that accepts an older
    // answer (pg_memo.max_staleness, pg_memo.stale_on_error).
    bool want_stale = false;
    bool want_older = false;
    DepStamp *deps = nullptr;
    uint32_t ndeps = 0;
    StaleInfo stale{};

    // Why the entry went stale, when this lookup was the first to find it
    // so (pg_memo.log_reasons); kCounterCount otherwise.
    Counter invalidated_by = kCounterCount;
    void invalidated(Counter reason) noexcept override { invalidated_by = reason; }

    bool accept_stale(const EntryView &e, const StaleInfo &info) noexcept override {
        if (!(info.kept_by_deltas ? want_stale || want_older : want_older)) return false;
        deps = static_cast<DepStamp *>(palloc_extended(sizeof(DepStamp) * e.ndeps, MCXT_ALLOC_NO_OOM));
        if (!deps || !accept(e)) return false;
        memcpy(deps, e.deps, sizeof(DepStamp) * e.ndeps);
        ndeps = e.ndeps;
        stale = info;
        return true;
    }
};

}  // namespace pgmemo
