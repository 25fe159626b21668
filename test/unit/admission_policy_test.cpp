#include "admission_policy.hpp"

#include <gtest/gtest.h>

using namespace pgmemo;

namespace {

AdmissionSettings settings() {
    AdmissionSettings s;
    s.min_cost_ms = 1.0;
    s.min_calls = 5;
    s.retry_s = 60;
    s.max_demotions = 3;
    s.min_served_window_s = 1.0;
    return s;
}

ShapeWindow observed(uint64_t calls, double mean_ms) {
    ShapeWindow w;
    w.calls = calls;
    w.time_ms = double(calls) * mean_ms;
    return w;
}

// A served window of 20 executions, misses of them recomputed at miss_ms,
// the others hits of hit_ms.
ShapeWindow served(uint64_t misses, double miss_ms, double hit_ms) {
    ShapeWindow w;
    w.served_calls = 20;
    w.computed = misses;
    w.computed_time_ms = double(misses) * miss_ms;
    w.served_time_ms = w.computed_time_ms + double(20 - misses) * hit_ms;
    w.seconds = 2;
    return w;
}

ShapeHistory in(ShapeState state, double mean_ms = 0, uint32_t demotions = 0, double seconds = 0) {
    ShapeHistory h;
    h.state = state;
    h.uncached_mean_ms = mean_ms;
    h.demotions = demotions;
    h.seconds_in_state = seconds;
    return h;
}

constexpr AdmissionRoom kRoom{true, true};

}  // namespace

TEST(AdmissionPolicy, WaitsForAWindowOfCalls) {
    auto d = decide(in(ShapeState::Observing), observed(4, 50), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Observing);
    EXPECT_EQ(d.reason, ShapeReason::TooFewCalls);
    EXPECT_FALSE(d.window_done);
}

TEST(AdmissionPolicy, AdmitsAnExpensiveShape) {
    auto d = decide(in(ShapeState::Observing), observed(5, 40), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Admitted);
    EXPECT_EQ(d.reason, ShapeReason::Admitted);
    EXPECT_DOUBLE_EQ(d.uncached_mean_ms, 40);
    EXPECT_TRUE(d.window_done);
}

TEST(AdmissionPolicy, LeavesACheapShapeAlone) {
    auto d = decide(in(ShapeState::Observing), observed(5, 0.08), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Observing);
    EXPECT_EQ(d.reason, ShapeReason::Cheap);
    EXPECT_TRUE(d.window_done);
}

TEST(AdmissionPolicy, AdmitsNoMoreThanTheBound) {
    auto d = decide(in(ShapeState::Observing), observed(5, 40), AdmissionRoom{false, true}, settings());
    EXPECT_EQ(d.state, ShapeState::Observing);
    EXPECT_EQ(d.reason, ShapeReason::AdmittedFull);
}

TEST(AdmissionPolicy, KeepsAShapeThatSaves) {
    // 2 misses of 41 ms, 18 hits of 0.05 ms: 20 * 41 - 82.9 saved.
    auto d = decide(in(ShapeState::Admitted, 40), served(2, 41, 0.05), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Admitted);
    EXPECT_EQ(d.reason, ShapeReason::Saving);
    EXPECT_NEAR(d.saved_ms, 20 * 41 - (2 * 41 + 18 * 0.05), 1e-9);
    EXPECT_DOUBLE_EQ(d.uncached_mean_ms, 41);
}

TEST(AdmissionPolicy, AllHitsMeasureAgainstTheObservedMean) {
    auto d = decide(in(ShapeState::Admitted, 40), served(0, 0, 0.05), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Admitted);
    EXPECT_NEAR(d.saved_ms, 20 * 40 - 20 * 0.05, 1e-9);
}

TEST(AdmissionPolicy, DemotesAWriteHotShape) {
    // Every execution recomputed: nothing saved.
    auto d = decide(in(ShapeState::Admitted, 40), served(20, 41, 0), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Demoted);
    EXPECT_EQ(d.reason, ShapeReason::SavedNothing);
    EXPECT_LE(d.saved_ms, 0);
}

TEST(AdmissionPolicy, RetiresAShapeDemotedAgainAndAgain) {
    auto d = decide(in(ShapeState::Admitted, 40, 2), served(20, 41, 0), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Retired);
    EXPECT_EQ(d.reason, ShapeReason::Retired);
    auto again = decide(in(ShapeState::Retired, 40, 3, 1e9), observed(100, 40), kRoom, settings());
    EXPECT_EQ(again.state, ShapeState::Retired);
}

TEST(AdmissionPolicy, WaitsForAFullServedWindow) {
    ShapeWindow w = served(20, 41, 0);
    w.served_calls = 19;
    auto d = decide(in(ShapeState::Admitted, 40), w, kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Admitted);
    EXPECT_FALSE(d.window_done);
}

TEST(AdmissionPolicy, ObservesADemotedShapeAgainLaterAndLaterStill) {
    EXPECT_DOUBLE_EQ(retry_after_s(in(ShapeState::Demoted, 40, 1), settings()), 60);
    EXPECT_DOUBLE_EQ(retry_after_s(in(ShapeState::Demoted, 40, 2), settings()), 120);
    auto early = decide(in(ShapeState::Demoted, 40, 2, 119), observed(5, 40), kRoom, settings());
    EXPECT_EQ(early.state, ShapeState::Demoted);
    auto later = decide(in(ShapeState::Demoted, 40, 2, 120), observed(5, 40), kRoom, settings());
    EXPECT_EQ(later.state, ShapeState::Observing);
    EXPECT_TRUE(later.window_done);
}

TEST(AdmissionPolicy, TriesARefusedShapeAgain) {
    auto d = decide(in(ShapeState::Refused, 40, 0, 61), observed(5, 40), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Observing);
}

TEST(AdmissionPolicy, GivesUpOnAShapeRefusedAgainAndAgain) {
    auto d = decide(in(ShapeState::Refused, 40, 3, 1e9), observed(5, 40), kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Refused);
}

TEST(AdmissionPolicy, AdmitsNothingPastTheMemoryShare) {
    auto d = decide(in(ShapeState::Observing), observed(5, 40), AdmissionRoom{true, false}, settings());
    EXPECT_EQ(d.state, ShapeState::Observing);
    EXPECT_EQ(d.reason, ShapeReason::MemoryFull);
}

TEST(AdmissionPolicy, DemotesAnAdmittedShapePastTheMemoryShare) {
    auto d = decide(in(ShapeState::Admitted, 40), served(2, 41, 0.05), AdmissionRoom{true, false}, settings());
    EXPECT_EQ(d.state, ShapeState::Demoted);
    EXPECT_EQ(d.reason, ShapeReason::MemoryFull);
    EXPECT_GT(d.saved_ms, 0);
}

TEST(AdmissionPolicy, WeighsAServedWindowOverItsShortestSpan) {
    // A burst of misses right after a write, within a fraction of a second:
    // not judged yet.
    ShapeWindow w = served(20, 41, 0);
    w.seconds = 0.05;
    auto d = decide(in(ShapeState::Admitted, 40), w, kRoom, settings());
    EXPECT_EQ(d.state, ShapeState::Admitted);
    EXPECT_FALSE(d.window_done);
}
