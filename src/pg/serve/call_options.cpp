// The relaxations given as intervals (call_options.hpp).
#include "serve/call_options.hpp"
#include "settings.hpp"

extern "C" {
#include "datatype/timestamp.h"
#include "utils/timestamp.h"
}

namespace pgmemo {

int interval_option_ms(Datum interval) {
    Interval *v = DatumGetIntervalP(interval);
    double ms = (double(v->month) * DAYS_PER_MONTH * SECS_PER_DAY + double(v->day) * SECS_PER_DAY) * 1000.0 +
                double(v->time) / 1000.0;
    if (ms <= 0) return 0;
    return ms >= double(PG_INT32_MAX) ? PG_INT32_MAX : int(ms);
}

void check_option_not_negative(Datum interval, const char *name) {
    Interval *v = DatumGetIntervalP(interval);
    if (v->month < 0 || v->day < 0 || v->time < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must not be negative", name),
                        errhint("Give an interval of zero or more.")));
}

namespace {

int option_ms(FunctionCallInfo fcinfo, int arg, const char *name, int setting_ms) {
    if (PG_ARGISNULL(arg)) return setting_ms;
    check_option_not_negative(PG_GETARG_DATUM(arg), name);
    return interval_option_ms(PG_GETARG_DATUM(arg));
}

}  // namespace

StatementOptions call_options(FunctionCallInfo fcinfo, int first) {
    StatementOptions o;
    o.max_staleness_ms = option_ms(fcinfo, first, "max_staleness", guc_max_staleness_ms);
    o.stale_on_error_ms = option_ms(fcinfo, first + 1, "stale_on_error", guc_stale_on_error_ms);
    o.error_ttl_ms = option_ms(fcinfo, first + 2, "error_ttl", guc_error_ttl_ms);
    return o;
}

}  // namespace pgmemo
