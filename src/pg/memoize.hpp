// What the memo functions and the flight protocol share.
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "utils/array.h"
}

namespace pgmemo {

struct Call;  // the arguments of one memo call (memo_functions.cpp)

struct Encoded {
    char *key;
    uint32_t key_len;
    uint64_t hash;
};

// A result ready to hand over: a payload in ResultReader format.
struct Result {
    char *payload;
    uint32_t len;
};

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


// Computes the call uncached, counts it, and stores the result unless
// bypass is set or the result may not be cached. With pinned, a stored
// entry stays pinned for a flight's waiters (*pinned = 0 when not stored).
// Without wait_for_commits it does not wait for commits in progress (the
// call has already waited for them, through the flights it joined).
Result compute_and_store(const Call &call, const Encoded &key, uint32_t stats_slot, bool bypass,
                         uint64_t *pinned, bool wait_for_commits = true);

// The miss path with singleflight: lead or join the key's flight.
Result memoize_in_flight(const Call &call, const Encoded &key, uint32_t stats_slot);

// Whether this backend may use a flight now (not while leading one).
bool flight_allowed(const Encoded &key);

// What a key says, for memo.flights: the role it is for, the query text and
// the parameters (palloc'd). False if the bytes are not a key.
bool describe_key(const char *key, uint32_t len, Oid *userid, text **query, ArrayType **params);

// Releases whatever flight this backend still takes part in (abort, exit).
void flights_cleanup();

}  // namespace pgmemo
