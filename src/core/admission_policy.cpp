#include "core_only.hpp"  // first: no PostgreSQL in the core
#include "admission_policy.hpp"

namespace pgmemo {

uint64_t window_calls(ShapeState state, const AdmissionSettings &settings) noexcept {
    uint64_t n = settings.min_calls > 0 ? settings.min_calls : 1;
    return state == ShapeState::Admitted ? 4 * n : n;
}

double retry_after_s(const ShapeHistory &history, const AdmissionSettings &settings) noexcept {
    uint32_t doublings = history.demotions > 1 ? history.demotions - 1 : 0;
    if (doublings > 20) doublings = 20;
    return settings.retry_s * double(uint64_t(1) << doublings);
}

namespace {

// window_done: whether the executions counted so far are let go (a state
// that serves nothing waits for time, not for a window).
AdmissionDecision stay(const ShapeHistory &history, ShapeReason reason, bool window_done = false) {
    return AdmissionDecision{history.state, reason, history.uncached_mean_ms, 0, window_done};
}

AdmissionDecision observed(const ShapeHistory &history, const ShapeWindow &window, AdmissionRoom room,
                           const AdmissionSettings &settings) {
    if (window.calls < window_calls(ShapeState::Observing, settings)) return stay(history, ShapeReason::TooFewCalls);
    double mean = window.time_ms / double(window.calls);
    if (mean < settings.min_cost_ms) return AdmissionDecision{ShapeState::Observing, ShapeReason::Cheap, mean, 0, true};
    if (!room.shapes) return AdmissionDecision{ShapeState::Observing, ShapeReason::AdmittedFull, mean, 0, true};
    if (!room.memory) return AdmissionDecision{ShapeState::Observing, ShapeReason::MemoryFull, mean, 0, true};
    return AdmissionDecision{ShapeState::Admitted, ShapeReason::Admitted, mean, 0, true};
}

// What a window must save to keep its shape: the counters' resolution (a
// window whose every execution computed saves nothing, however its
// microseconds round).
constexpr double kLeastSaving_ms = 0.001;

// A served window: the executions that computed say what the statement
// costs now (a miss's overhead included); the saving is what the window's
// executions would have taken at that cost less what they took.
AdmissionDecision served(const ShapeHistory &history, const ShapeWindow &window, AdmissionRoom room,
                         const AdmissionSettings &settings) {
    if (window.served_calls < window_calls(ShapeState::Admitted, settings) ||
        window.seconds < settings.min_served_window_s)
        return stay(history, ShapeReason::Saving);
    double mean = window.computed > 0 ? window.computed_time_ms / double(window.computed) : history.uncached_mean_ms;
    double saved = double(window.served_calls) * mean - window.served_time_ms;
    // The admitted shapes hold more than their share of the cache: each
    // window's end gives some back, whatever it saved.
    if (!room.memory) {
        ShapeState to = history.demotions + 1 >= settings.max_demotions ? ShapeState::Retired : ShapeState::Demoted;
        return AdmissionDecision{to, ShapeReason::MemoryFull, mean, saved, true};
    }
    if (saved >= kLeastSaving_ms) return AdmissionDecision{ShapeState::Admitted, ShapeReason::Saving, mean, saved, true};
    if (history.demotions + 1 >= settings.max_demotions)
        return AdmissionDecision{ShapeState::Retired, ShapeReason::Retired, mean, saved, true};
    return AdmissionDecision{ShapeState::Demoted, ShapeReason::SavedNothing, mean, saved, true};
}

}  // namespace

AdmissionDecision decide(const ShapeHistory &history, const ShapeWindow &window, AdmissionRoom room,
                         const AdmissionSettings &settings) noexcept {
    switch (history.state) {
        case ShapeState::Observing: return observed(history, window, room, settings);
        case ShapeState::Admitted: return served(history, window, room, settings);
        case ShapeState::Refused:
            // Refused again and again (a table that stays unwatched): not
            // tried again.
            if (history.demotions >= settings.max_demotions) return stay(history, ShapeReason::None, true);
            [[fallthrough]];
        case ShapeState::Demoted:
            if (history.seconds_in_state < retry_after_s(history, settings))
                return stay(history, ShapeReason::None, true);
            return AdmissionDecision{ShapeState::Observing, ShapeReason::TooFewCalls, history.uncached_mean_ms, 0, true};
        case ShapeState::Retired: return stay(history, ShapeReason::Retired, true);
    }
    return stay(history, ShapeReason::None);
}

}  // namespace pgmemo
