// Admission by measured cost (docs/reference.md, "Automatic admission"):
// what pg_memo decides for one statement shape at the end of each window
// of its executions. Plain C++: no PostgreSQL headers, no allocation, no
// exception. The glue (src/pg/admission/) measures the windows in shared
// memory and applies the decision.
//
// A shape is observed while it is not served: its executions' mean time
// decides whether it is worth caching (a statement cheaper than
// min_cost_ms gains less from a hit than a miss costs it). Once admitted,
// each window of served executions measures what caching saved: the time
// those executions would have taken uncached (their count times the
// uncached mean) less the time they took. A window that saved nothing (a
// table written faster than the statement is read, so that most
// executions recompute) demotes the shape. A served window spans at least
// min_served_window_s too, so that the burst of misses after a write (a
// flight's waiters wait as long as its leader computes) is weighed with
// the hits that follow it. After max_demotions it is not
// admitted again. A refusal (the glue's check found the shape cannot be
// served exactly) counts as a demotion. A demoted or refused shape is
// observed again after retry_s times 2^(demotions - 1) seconds; a shape
// refused max_demotions times is not.
#pragma once

#include <cstdint>

namespace pgmemo {

// A shape's state, kept in shared memory as a uint32_t.
enum class ShapeState : uint32_t {
    Observing = 0,  // measured, not served
    Admitted,       // served (or, under pg_memo.admission = advise, would be)
    Refused,        // cannot be served exactly now (a reason text says why)
    Demoted,        // served, saved nothing; observed again later
    Retired,        // demoted max_demotions times: not admitted again
};

// Why a shape is in its state; the glue writes the sentence with the
// figures of the decision.
enum class ShapeReason : uint32_t {
    None = 0,
    TooFewCalls,   // fewer than min_calls executions observed yet
    Cheap,         // mean below min_cost_ms
    AdmittedFull,  // max_admitted shapes are admitted already
    MemoryFull,    // the admitted shapes' entries hold their share of the cache
    Admitted,      // mean at least min_cost_ms
    Saving,        // admitted and its last window saved time
    SavedNothing,  // its last window saved nothing: demoted
    Retired,       // demoted max_demotions times
    Refused,       // the analysis refused it (a message says why)
};

struct AdmissionSettings {
    double min_cost_ms = 1.0;     // pg_memo.admission_min_cost
    uint32_t min_calls = 5;       // pg_memo.admission_calls: executions per window
    double retry_s = 60.0;        // pg_memo.admission_retry
    uint32_t max_demotions = 3;   // pg_memo.admission_max_demotions
    double min_served_window_s = 1.0;  // pg_memo.admission_window: the shortest a served window spans
};

// One window of a shape's executions.
struct ShapeWindow {
    uint64_t calls = 0;          // executions not served (observed)
    double time_ms = 0;          // their time
    uint64_t served_calls = 0;   // executions served (admitted)
    double served_time_ms = 0;   // their time
    uint64_t computed = 0;       // served executions that computed (misses)
    double computed_time_ms = 0; // their time
    double seconds = 0;          // how long the window has lasted
};

// What the shape knows across windows.
struct ShapeHistory {
    ShapeState state = ShapeState::Observing;
    double uncached_mean_ms = 0;  // the last observed mean (0 until one is)
    uint32_t demotions = 0;
    double seconds_in_state = 0;  // since the state was entered
};

struct AdmissionDecision {
    ShapeState state;
    ShapeReason reason;
    double uncached_mean_ms;  // what the history keeps
    double saved_ms;          // what this window saved (served windows; may be negative)
    bool window_done;         // the window is consumed: the next one starts now
};

// How many executions a window of this state needs before decide() is
// called for it: min_calls observed, four times that served (a served
// window must hold misses and hits to measure a saving).
uint64_t window_calls(ShapeState state, const AdmissionSettings &settings) noexcept;

// The seconds a demoted or refused shape waits before it is observed again.
double retry_after_s(const ShapeHistory &history, const AdmissionSettings &settings) noexcept;

// Room for admitted shapes: fewer than max_admitted are admitted (shapes),
// and their entries hold less than their share of the cache (memory).
struct AdmissionRoom {
    bool shapes;
    bool memory;
};

// The decision at the end of a window. Without room for shapes, no shape
// is admitted; without memory, none is admitted and an admitted shape's
// window demotes it.
AdmissionDecision decide(const ShapeHistory &history, const ShapeWindow &window, AdmissionRoom room,
                         const AdmissionSettings &settings) noexcept;

}  // namespace pgmemo
