// What the memo functions and the flight protocol share: a call, its key,
// the miss path, copying a hit out, and flights.
#pragma once

#include "call.hpp"
#include "catalog_changes.hpp"
#include "compute.hpp"
#include "invalidation.hpp"
#include "privileges.hpp"

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
};


// The miss path with singleflight: lead or join the key's flight.
Result memoize_in_flight(const Call &call, const Encoded &key, uint32_t stats_slot);

// Whether this backend may use a flight now (not while leading one).
bool flight_allowed(const Encoded &key);

// Releases whatever flight this backend still takes part in (abort, exit).
void flights_cleanup();

}  // namespace pgmemo
