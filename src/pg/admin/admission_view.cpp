// memo.admission (1.3): each shape automatic admission observes in this
// database, its state, and why, in a sentence with the figures of the
// decision (docs/reference.md, "Automatic admission"); and
// memo.admission_reset().
//
// Locks: none but each slot's spinlock, taken while its texts are copied
// (admission/shapes_table.hpp).
#include "admin/views.hpp"
#include "admission/shapes_table.hpp"
#include "registered/registrations.hpp"
#include "settings.hpp"

extern "C" {
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_memo_admission_1_3);
PG_FUNCTION_INFO_V1(pg_memo_admission_reset_1_3);
Datum pg_memo_admission_1_3(PG_FUNCTION_ARGS);
Datum pg_memo_admission_reset_1_3(PG_FUNCTION_ARGS);
}

namespace pgmemo {
namespace {

constexpr int kAdmissionColumns = 13;

const char *state_name(ShapeState state) {
    switch (state) {
        case ShapeState::Observing: return "observing";
        case ShapeState::Admitted: return "admitted";
        case ShapeState::Refused: return "refused";
        case ShapeState::Demoted: return "demoted";
        case ShapeState::Retired: return "retired";
    }
    return "unknown";
}

// The sentence of a shape's reason, with the figures of its last decision
// (and the settings of the backend that made it).
char *reason_of(const ShapeRow &r, bool shown) {
    const double *f = r.reason_figures;
    switch (r.reason) {
        case ShapeReason::None:
        case ShapeReason::TooFewCalls:
            return pstrdup("observing: judged after a window of pg_memo.admission_calls executions");
        case ShapeReason::Cheap:
            return psprintf("cheap: mean %.3f ms, below pg_memo.admission_min_cost (%g ms)", f[0], f[1]);
        case ShapeReason::AdmittedFull:
            return psprintf("worth caching (mean %.3f ms), but pg_memo.admission_max_admitted (%d) shapes are admitted",
                            f[0], int(f[2]));
        case ShapeReason::MemoryFull:
            return psprintf("worth caching (mean %.3f ms), but the admitted shapes' entries hold "
                            "pg_memo.admission_memory_share (%d %%) of the cache%s",
                            f[0], int(f[2]), r.state == ShapeState::Observing ? "" : ": demoted");
        case ShapeReason::Admitted:
            return psprintf("admitted: mean %.3f ms, at least pg_memo.admission_min_cost (%g ms); served where "
                            "pg_memo.admission is auto",
                            f[0], f[1]);
        case ShapeReason::Saving:
            return psprintf("admitted: its last window saved time (%.1f recomputations/s against %.1f calls/s, "
                            "%.3f ms a computation)",
                            f[1], f[2], f[0]);
        case ShapeReason::SavedNothing:
            if (f[1] == 0)
                return psprintf("saved nothing: %.1f calls/s, none recomputed, but its hits took as long as "
                                "computing it (%.3f ms); demoted, observed again after pg_memo.admission_retry",
                                f[2], f[0]);
            return psprintf("saved nothing: %.1f recomputations/s against %.1f calls/s (its tables are written about "
                            "as often as it is read, or its calls seldom repeat their values); demoted, observed "
                            "again after pg_memo.admission_retry",
                            f[1], f[2]);
        case ShapeReason::Retired:
            return psprintf("demoted %u times: not admitted again (memo.admission_reset() forgets it; "
                            "memo.cache_statement serves it)",
                            r.demotions);
        case ShapeReason::Refused:
            // The check's message names tables and values of the statement:
            // shown as its text is.
            return psprintf("cannot be served: %s (served, it would save up to %.3f ms a call; %llu calls observed%s)",
                            shown ? r.refusal : "the check's reason is shown to the role that sent it", r.mean_ms,
                            static_cast<unsigned long long>(r.calls),
                            r.demotions >= uint32(guc_admission_max_demotions) ? "; refused too often: not tried again"
                                                                               : "");
    }
    return pstrdup("unknown");
}

struct Fill {
    ReturnSetInfo *rsinfo;
    bool all_stats;
};

void add_row(const ShapeRow &r, void *arg) {
    auto *fill = static_cast<Fill *>(arg);
    Datum values[kAdmissionColumns];
    bool nulls[kAdmissionColumns] = {false};
    values[0] = Int64GetDatum(int64(r.shape_id));
    values[1] = CStringGetTextDatum(state_name(r.state));
    // A statement's text may hold its values: shown to the role that sent
    // it and to those who read all statistics, as pg_stat_statements does.
    bool shown = fill->all_stats || has_privs_of_role(GetUserId(), r.role);
    values[2] = CStringGetTextDatum(reason_of(r, shown));
    values[3] = Int64GetDatum(int64(r.calls));
    values[4] = Float8GetDatum(r.calls ? r.time_ms / double(r.calls) : 0);
    values[5] = Int64GetDatum(int64(r.served_calls));
    values[6] = Int64GetDatum(int64(r.computed));
    values[7] = Float8GetDatum(r.saved_ms);
    values[8] = Int32GetDatum(int32(r.demotions));
    values[9] = TimestampTzGetDatum(r.state_since);
    values[10] = ObjectIdGetDatum(r.role);
    values[11] = Int64GetDatum(int64(r.query_id));
    values[12] = CStringGetTextDatum(r.sample);
    nulls[11] = nulls[12] = !shown;
    tuplestore_putvalues(fill->rsinfo->setResult, fill->rsinfo->setDesc, values, nulls);
}

}  // namespace
}  // namespace pgmemo

Datum pg_memo_admission_1_3(PG_FUNCTION_ARGS) {
    using namespace pgmemo;
    check_result_columns(fcinfo, kAdmissionColumns);
    InitMaterializedSRF(fcinfo, 0);
    Fill fill{reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo), reads_all_stats()};
    for_each_shape(MyDatabaseId, add_row, &fill);
    return (Datum)0;
}

Datum pg_memo_admission_reset_1_3(PG_FUNCTION_ARGS) {
    pgmemo::reset_shapes(pgmemo::statements_table());
    PG_RETURN_VOID();
}
