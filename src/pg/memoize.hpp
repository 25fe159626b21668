// What the memo functions and the flight protocol share: a call, its key,
// the miss path, copying a hit out, and flights.
#pragma once

#include "call.hpp"
#include "catalog_changes.hpp"
#include "compute.hpp"
#include "invalidation.hpp"
#include "privileges.hpp"
#include "result_format.hpp"

namespace pgmemo {

// Copies a hit out of shared memory. Runs under the partition lock, so it
// must not raise errors: it allocates with MCXT_ALLOC_NO_OOM.
class CopyOutSink final : public HitSink {
public:
    char *payload = nullptr;
    uint32_t payload_len = 0;
    char *meta = nullptr;
    uint32_t meta_len = 0;

    bool accept(const char *m, uint32_t ml, const char *p, uint32_t pl) noexcept override {
        size_t meta_at = MAXALIGN(size_t(pl));
        char *buf = static_cast<char *>(palloc_extended(meta_at + ml + 1, MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE));
        if (!buf) return false;
        memcpy(buf, p, pl);
        memcpy(buf + meta_at, m, ml);
        payload = buf;
        payload_len = pl;
        meta = buf + meta_at;
        meta_len = ml;
        return true;
    }

    // With want_stale, a stale entry kept by deltas is copied too, with its
    // dependencies, for carry_forward (delta_apply.hpp).
    bool want_stale = false;
    DepStamp *deps = nullptr;
    uint32_t ndeps = 0;

    bool accept_stale(const DepStamp *d, uint32_t nd, const char *m, uint32_t ml, const char *p,
                      uint32_t pl) noexcept override {
        if (!want_stale) return false;
        deps = static_cast<DepStamp *>(palloc_extended(sizeof(DepStamp) * nd, MCXT_ALLOC_NO_OOM));
        if (!deps || !accept(m, ml, p, pl)) return false;
        memcpy(deps, d, sizeof(DepStamp) * nd);
        ndeps = nd;
        return true;
    }
};


// The column types of a stored row result, as a descriptor.
TupleDesc stored_descriptor(const ResultReader &rd);

// The miss path with singleflight: lead or join the key's flight.
Result memoize_in_flight(const Call &call, const Encoded &key, uint32_t stats_slot);

// Whether this backend may use a flight now (not while leading one).
bool flight_allowed(const Encoded &key);

// Releases whatever flight this backend still takes part in (abort, exit).
void flights_cleanup();

}  // namespace pgmemo
