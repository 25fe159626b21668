// Singleflight across backends: N concurrent misses on one key, one
// computation, shared by all.
//
// Protocol (the flight table is src/core/flight.hpp, under the flight lock):
//   - miss -> find a Running/Abandoned flight with the same key bytes (the
//     caller's own copy): join it and sleep on its condition variable; or,
//     when there is none and a slot is free, copy the key into the arena
//     (without the flight lock: the allocation may evict), look again, and
//     claim a free slot and lead. Only a leader's key takes arena space.
//   - The leader looks in the store once more (double-check: a result, then
//     an error remembered under pg_memo.error_ttl), else computes
//     with the ordinary miss path, storing the entry PINNED, and publishes:
//     Done (with the pinned entry, or none when the result was not storable)
//     or Failed (an error of the query itself, shared with the waiters).
//   - A leader that is cancelled, times out or exits publishes Abandoned; a
//     waiter takes over as leader of the same flight.
//   - Waiters validate the published entry like a hit (generations still
//     current, privileges), so a commit that happened after the leader read
//     its generations is never hidden from them: they retry instead (once
//     when a commit is in progress, for a new leader that waits for it).
//   - A Failed flight's message is an arena block, allocated (before the
//     flight lock) only when a query fails; with no room for it the leader
//     publishes Abandoned instead, and a waiter takes over and meets the
//     error itself.
//   - The last participant to leave frees the slot, its key block, its
//     message block and the pin. Errors (PG_CATCH), transaction abort and
//     process exit all leave.
//   - No hangs: waits are interruptible and bounded by pg_memo.wait_timeout;
//     a backend leading a flight never waits on another one; a computation
//     that re-enters its own key gets an error.
#include "compute/carry.hpp"
#include "compute/flights.hpp"
#include "invalidate/catalog_changes.hpp"
#include "compute/compute.hpp"
#include "copy_out_sink.hpp"
#include "privileges.hpp"
#include "query_errors.hpp"
#include "invalidate/write_set.hpp"
#include "compute/remembered_errors.hpp"
#include "compute/statement_snapshot.hpp"
#include "compat.hpp"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "utils/memutils.h"
}

#include <cstring>

#include "flight.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

namespace pgmemo {

static_assert(sizeof(ConditionVariable) <= sizeof(FlightSlot::wait_handle), "condition variable fits");

namespace {

// The one flight this backend takes part in (nested calls never join one).
struct Participation {
    int32_t slot = -1;
    uint32_t incarnation = 0;
    bool leading = false;
    uint64_t hash = 0;
    const char *key = nullptr;  // the led key, to refuse re-entry
    uint32_t key_len = 0;
};
Participation current;
bool exit_callback_registered = false;

constexpr int kMaxAttempts = 8;  // flights joined per call before computing alone

ConditionVariable *flight_cv(FlightSlot &s) { return reinterpret_cast<ConditionVariable *>(s.wait_handle); }

void lock_flights(LWLockMode mode) { LWLockAcquire(flight_lock(), mode); }
void unlock_flights() { LWLockRelease(flight_lock()); }

// Leaves the current flight. The last one out frees the slot.
void leave_flight() {
    if (current.slot < 0) return;
    Shared &sh = shared_state();
    FlightLeftovers left;
    lock_flights(LW_EXCLUSIVE);
    FlightSlot &s = sh.flights.slot(current.slot);
    bool last = s.incarnation == current.incarnation && sh.flights.leave(current.slot, !current.leading, &left);
    unlock_flights();
    current = Participation{};
    if (last) {
        if (left.entry) sh.store.unpin(left.entry);
        if (left.key_block) sh.store.release_block(left.key_block);
        if (left.error_block) sh.store.release_block(left.error_block);
    }
}

// Publishes the leader's outcome and wakes the waiters. A failure's message
// (up to kFlightMessageLen - 1 bytes) goes to an arena block allocated here,
// before the flight lock; if the arena has no room for it, the flight is
// published Abandoned instead: a waiter takes over, runs the query and
// raises its error itself, so no waiter ever gets an error without its text.
void publish(FlightState state, uint64_t entry, int error_code, const char *message) {
    Shared &sh = shared_state();
    uint64_t error_block = 0;
    if (state == FlightState::Failed) {
        if (!message) message = "";
        size_t len = strnlen(message, kFlightMessageLen - 1);
        error_block = sh.store.allocate_block(len + 1);
        if (error_block) {
            char *text = sh.store.block(error_block);
            memcpy(text, message, len);
            text[len] = '\0';
        } else {
            state = FlightState::Abandoned;
            error_code = 0;
        }
    }
    lock_flights(LW_EXCLUSIVE);
    FlightSlot &s = sh.flights.slot(current.slot);
    uint64_t replaced = sh.flights.publish(current.slot, state, entry, error_code, error_block);
    unlock_flights();
    if (replaced) sh.store.release_block(replaced);
    ConditionVariableBroadcast(flight_cv(s));
}

// A pin the leader's double-check holds before any flight slot records it.
// flights_cleanup drops it: on error, and at exit (a FATAL, such as
// pg_terminate_backend during the privilege re-check, skips PG_CATCH).
uint64_t unrecorded_pin = 0;

void drop_unrecorded_pin() {
    if (unrecorded_pin) shared_state().store.unpin(unrecorded_pin);
    unrecorded_pin = 0;
}

// f(), but an error leaves the flight (and drops an unrecorded pin) before
// it propagates: a savepoint that catches it must not leave the flight
// Running for everyone else.
template <typename F>
auto leaving_flight_on_error(F f) -> decltype(f()) {
    decltype(f()) result{};
    PG_TRY();
    { result = f(); }
    PG_CATCH();
    {
        // Takes the flight table's LWLock: safe, as it is held over no call
        // that can raise (but by memo.flights' listing, which is in no
        // flight), so it is not held over from the error.
        flights_cleanup();
        PG_RE_THROW();
    }
    PG_END_TRY();
    return result;
}

void exit_callback(int, Datum) {
    LWLockReleaseAll();  // a FATAL exit may come before the transaction abort
    flights_cleanup();
}

void note_participation(int32_t slot, uint32_t incarnation, bool leading, const Encoded &key) {
    current.slot = slot;
    current.incarnation = incarnation;
    current.leading = leading;
    current.hash = key.hash;
    current.key = key.key;
    current.key_len = key.key_len;
}

// NoFlight: the flight table is full; NoRoom: the arena had no room for
// the key's copy.
enum class Role { Lead, Join, NoFlight, NoRoom };

// Joins the key's flight or claims a new one. The lookup uses the caller's
// own key bytes; only a caller about to lead copies them into the arena,
// without the flight lock (the allocation may evict entries), and then looks
// again, since another backend may have claimed the key meanwhile. A full
// table allocates nothing.
Role join_or_lead(const Encoded &key, uint32_t stats_slot) {
    Shared &sh = shared_state();
    // Before any slot is taken: registering can raise FATAL (no callback
    // slot left), which must not strand a flight that no exit leaves.
    if (!exit_callback_registered) {
        before_shmem_exit(exit_callback, 0);
        exit_callback_registered = true;
    }
    uint64_t block = 0;
    Role role = Role::NoFlight;
    for (;;) {
        lock_flights(LW_EXCLUSIVE);
        int32_t i = sh.flights.find(key.hash, key.key, key.key_len, sh.store);
        if (i >= 0) {
            sh.flights.join(i);
            role = Role::Join;
        } else if (block) {
            i = sh.flights.claim(key.hash, block, key.key_len, MyProcPid, stats_slot, MyDatabaseId,
                                 GetCurrentTimestamp());
            if (i >= 0) {
                role = Role::Lead;
                block = 0;  // owned by the flight now
            }
        } else if (!sh.flights.full()) {
            unlock_flights();
            block = sh.store.allocate_block(key.key_len);
            if (!block) return Role::NoRoom;
            memcpy(sh.store.block(block), key.key, key.key_len);
            continue;  // look again, then claim
        }
        if (i >= 0) note_participation(i, sh.flights.slot(i).incarnation, role == Role::Lead, key);
        unlock_flights();
        break;
    }
    if (block) sh.store.release_block(block);
    return role;
}

// Whether this backend leads a flight that others wait on now (one that
// joins later, after a result nobody could store, computes for itself).
bool leading_a_flight_with_waiters() {
    if (current.slot < 0 || !current.leading) return false;
    Shared &sh = shared_state();
    lock_flights(LW_SHARED);
    bool waiting = sh.flights.slot(current.slot).waiters > 0;
    unlock_flights();
    return waiting;
}

// Leads: double-check, compute, publish. Leaves the flight on every path.
Result lead(const Call &call, const Encoded &key, uint32_t stats_slot) {
    Shared &sh = shared_state();

    // The result may have been stored between our miss and our flight, or
    // be an entry kept by deltas that only needs carrying forward.
    CopyOutSink sink;
    sink.want_stale = true;
    uint64_t pinned = 0;
    LookupStatus status = sh.store.lookup(key.hash, key.key, key.key_len, own_writes(), sink, &pinned);
    if (status == LookupStatus::StaleKept)
        status = leaving_flight_on_error([&] { return carry_and_look_up(call, key, stats_slot, sink, &pinned); });
    if (status == LookupStatus::Hit) {
        // The check can raise (a relation gone): neither the pin nor the
        // flight may outlive it, even when a savepoint catches the error.
        unrecorded_pin = pinned;
        bool allowed = leaving_flight_on_error([&] { return privileges_still_hold(sink.meta, sink.meta_len); });
        if (allowed) {
            unrecorded_pin = 0;  // the flight slot holds it from here
            publish(FlightState::Done, pinned, 0, nullptr);
            leave_flight();
            // The waiters check the entry for themselves; a registered
            // statement whose snapshot is older computes its own answer.
            if (!answers_as_of_now(call))
                return compute_and_store(call, key, stats_slot, kBypassStatementSnapshot, nullptr);
            sh.stats.add(stats_slot, kDoubleCheckHits);
            sh.stats.add(stats_slot, kHits);
            return Result{sink.payload, sink.payload_len};
        }
        drop_unrecorded_pin();
    }

    MemoryContext caller_ctx = CurrentMemoryContext;
    Result r{};
    PG_TRY();
    {
        // Likewise an error remembered by a flight that ended between our
        // look (miss_path) and our claim: raised to us and our waiters,
        // not run again, or pg_memo.error_ttl would admit an execution per
        // such caller.
        raise_if_remembered(call, key, stats_slot);
        r = compute_and_store(call, key, stats_slot, kCounterCount, &pinned, true, leading_a_flight_with_waiters);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_ctx);
        // publish and leave_flight take the flight table's LWLock: safe, as
        // it is held over no call that can raise (see leaving_flight_on_error).
        ErrorData *edata = CopyErrorData();
        // A registered statement's error may come from a snapshot older
        // than its waiters': they compute for themselves (nothing here may
        // raise, so its snapshot is not compared). So may an error under
        // settings the key did not hold (a tenant's).
        if (error_belongs_to_query(edata->sqlerrcode) && call.as_of == InvalidSnapshot &&
            !computed_with_unkeyed_settings())
            publish(FlightState::Failed, 0, edata->sqlerrcode, edata->message);
        else
            publish(FlightState::Abandoned, 0, 0, nullptr);
        leave_flight();
        PG_RE_THROW();
    }
    PG_END_TRY();

    publish(FlightState::Done, pinned, 0, nullptr);
    leave_flight();
    return r;
}

enum class WaitOutcome { Settled, TimedOut };

// Sleeps until the flight is no longer Running or the wait budget is spent.
WaitOutcome wait_for_flight(uint32_t stats_slot, instr_time deadline_start, long budget_ms) {
    Shared &sh = shared_state();
    FlightSlot &s = sh.flights.slot(current.slot);
    ConditionVariable *cv = flight_cv(s);
    instr_time started;
    INSTR_TIME_SET_CURRENT(started);
    WaitOutcome outcome = WaitOutcome::Settled;
    const uint32 wait_event = compat_flight_wait_event();  // before the sleep: it may take a lock

    ConditionVariablePrepareToSleep(cv);
    for (;;) {
        lock_flights(LW_SHARED);
        bool running = s.state == FlightState::Running;
        unlock_flights();
        if (!running) break;
        instr_time now;
        INSTR_TIME_SET_CURRENT(now);
        INSTR_TIME_SUBTRACT(now, deadline_start);
        long remaining = budget_ms - long(INSTR_TIME_GET_MILLISEC(now));
        if (remaining <= 0) {
            outcome = WaitOutcome::TimedOut;
            break;
        }
        // Interruptible: cancel, statement_timeout and termination end the
        // wait with their usual error (see memoize_in_flight's PG_CATCH).
        ConditionVariableTimedSleep(cv, remaining, wait_event);
    }
    ConditionVariableCancelSleep();

    instr_time waited;
    INSTR_TIME_SET_CURRENT(waited);
    INSTR_TIME_SUBTRACT(waited, started);
    sh.stats.add(stats_slot, kWaitNanos, uint64_t(INSTR_TIME_GET_DOUBLE(waited) * 1e9));
    return outcome;
}

}  // namespace

bool lead_refresh(const Call &call, const Encoded &key, uint32_t stats_slot, Result *out) {
    // While a refresh runs, every reader of the key comes here: a shared
    // look first keeps them off the flight lock's exclusive mode.
    Shared &sh = shared_state();
    lock_flights(LW_SHARED);
    bool running = sh.flights.find(key.hash, key.key, key.key_len, sh.store) >= 0;
    unlock_flights();
    if (running) return false;
    switch (join_or_lead(key, stats_slot)) {
        case Role::Lead: *out = lead(call, key, stats_slot); return true;
        case Role::Join: leave_flight(); return false;  // someone is on it already
        case Role::NoFlight:
        case Role::NoRoom: return false;
    }
    return false;
}


bool flight_allowed(const Encoded &key) {
    if (current.slot < 0) return true;
    // Re-entering the very key we are computing can never finish.
    if (current.leading && current.hash == key.hash && current.key_len == key.key_len &&
        memcmp(current.key, key.key, key.key_len) == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_RECURSION),
                        errmsg("pg_memo: the computation of a cached query calls itself")));
    return false;  // never wait on another flight while taking part in one
}

void flights_cleanup() {
    drop_unrecorded_pin();
    if (current.slot < 0) return;
    ConditionVariableCancelSleep();
    if (current.leading) publish(FlightState::Abandoned, 0, 0, nullptr);
    leave_flight();
}

namespace {

// What a waiter found once its flight was no longer running.
struct Settled {
    FlightState state;
    uint64_t entry;  // the stored result, pinned for the waiters (Done)
    int error_code;  // the leader's error (Failed)
    char message[kFlightMessageLen];
    bool took_over;  // the leader went away and this backend leads now
};

// A waiter sleeps until its flight settles: Done, Failed, or Abandoned by a
// leader that went away, which the first waiter to see it takes over. A
// flight that another waiter took over is running again: keep waiting. Its
// own cancel or timeout leaves the flight and rethrows.
WaitOutcome wait_until_settled(uint32_t stats_slot, instr_time wait_start, Settled *out) {
    Shared &sh = shared_state();
    out->took_over = false;
    for (;;) {
        WaitOutcome outcome = leaving_flight_on_error(
            [&] { return wait_for_flight(stats_slot, wait_start, guc_wait_timeout_ms); });
        if (outcome == WaitOutcome::TimedOut) return outcome;

        lock_flights(LW_EXCLUSIVE);
        FlightSlot &s = sh.flights.slot(current.slot);
        out->state = s.state;
        out->entry = s.result_entry;
        out->error_code = s.error_code;
        strlcpy(out->message, sh.flights.error_message(current.slot, sh.store), sizeof out->message);
        if (out->state == FlightState::Abandoned) {
            s.state = FlightState::Running;
            s.leader_pid = MyProcPid;
            s.waiters--;
            current.leading = true;
            out->took_over = true;
        }
        unlock_flights();
        if (out->state != FlightState::Running) return WaitOutcome::Settled;
    }
}

// The leader's stored result, if it is still current and this caller may
// read it (a hit's checks, its snapshot's included). *got: what reading
// the pinned entry found.
bool take_shared_result(const Call &call, uint64_t entry, uint32_t stats_slot, LookupStatus *got, Result *out) {
    Shared &sh = shared_state();
    CopyOutSink sink;
    // A registered statement's snapshot may fall behind while it waits: an
    // entry as of what it sees is its answer still.
    if (!answers_as_of_now(call)) sink.as_of_print = as_of_print(call);
    *got = sh.store.read_pinned(entry, sink);
    // The check can raise: leave the flight, as on a cancel.
    bool allowed = leaving_flight_on_error(
        [&] { return entry_answers_call(call, *got, sink) && privileges_still_hold(sink.meta, sink.meta_len); });
    leave_flight();
    // Not current, and not this caller's: as a stale entry is.
    if (*got == LookupStatus::AsOfSnapshot && !allowed) *got = LookupStatus::Stale;
    if (!allowed) return false;
    sh.stats.add(stats_slot, kMisses);
    sh.stats.add(stats_slot, kShared);
    *out = Result{sink.payload, sink.payload_len};
    return true;
}

}  // namespace

namespace {

// Said once per session (memo.stats counts every one as flight_full): a
// miss that computes on its own, so that concurrent misses of its key
// compute it too.
void warn_flights_full() {
    if (!limit_message_due(Limit::FlightsFull)) return;
    ereport(limit_warning_level, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                      errmsg("pg_memo's flight table is full: this miss is computed without a flight"),
                      errdetail("All pg_memo.max_flights (%d) flights are in progress, so backends that miss the "
                                "same key meanwhile each compute it; memo.stats counts them as flight_full. This "
                                "warning is given once per session.",
                                guc_max_flights),
                      errhint("Raise pg_memo.max_flights in postgresql.conf and restart the server.")));
}

}  // namespace

Result memoize_in_flight(const Call &call, const Encoded &key, uint32_t stats_slot) {
    Shared &sh = shared_state();
    instr_time wait_start;
    INSTR_TIME_SET_CURRENT(wait_start);

    bool flew_again_for_commit = false;
    for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
        Role role = join_or_lead(key, stats_slot);
        if (role == Role::NoFlight || role == Role::NoRoom) {
            sh.stats.add(stats_slot, kFlightFull);
            if (role == Role::NoFlight) warn_flights_full();
            break;
        }
        if (role == Role::Lead) return lead(call, key, stats_slot);

        sh.stats.add(stats_slot, kWaits);
        Settled settled;
        if (wait_until_settled(stats_slot, wait_start, &settled) == WaitOutcome::TimedOut) {
            sh.stats.add(stats_slot, kWaitTimeouts);
            leave_flight();
            return compute_and_store(call, key, stats_slot, kCounterCount, nullptr, !flew_again_for_commit);
        }
        if (settled.took_over) {
            sh.stats.add(stats_slot, kTakeovers);
            return lead(call, key, stats_slot);
        }
        if (settled.state == FlightState::Failed) {
            leave_flight();
            // The leader's snapshot was newer than a registered statement's
            // older one, whose own answer may be no error at all.
            if (!answers_as_of_now(call))
                return compute_and_store(call, key, stats_slot, kBypassStatementSnapshot, nullptr);
            sh.stats.add(stats_slot, kMisses);
            ereport(ERROR, (errcode(settled.error_code), errmsg_internal("%s", settled.message),
                            errdetail("Raised by the computation another backend ran for this cache key.")));
        }
        if (settled.state == FlightState::Done && settled.entry) {
            LookupStatus got;
            Result r;
            if (take_shared_result(call, settled.entry, stats_slot, &got, &r)) return r;
            if (got == LookupStatus::Stale) continue;  // a commit since: fly again
            // A commit in progress hides the entry. The next leader waits for
            // it, so fly again, once: a commit that stays in progress (a
            // synchronous standby that does not answer) must not make every
            // waiter wait for round after round of leaders.
            if (got == LookupStatus::Miss && !flew_again_for_commit) {
                flew_again_for_commit = true;
                continue;
            }
            break;
        }
        // Done without a storable result: everyone computes for itself.
        leave_flight();
        break;
    }
    return compute_and_store(call, key, stats_slot, kCounterCount, nullptr, !flew_again_for_commit);
}

}  // namespace pgmemo
