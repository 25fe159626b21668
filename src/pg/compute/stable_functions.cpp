// STABLE built-in functions a cached query may call after all
// (stable_functions.hpp). Built-in function OIDs are fixed across
// PostgreSQL versions (pg_proc.dat), so they are listed by number.
#include "compute/stable_functions.hpp"

#include <algorithm>
#include <iterator>

namespace pgmemo {

namespace {

// Results that depend only on the arguments and on TimeZone, DateStyle,
// IntervalStyle or lc_monetary, all in the key (call.cpp).
constexpr Oid kKeyedSettingsOnly[] = {
    887,   // cash_out(money): lc_monetary
    939,   // generate_series(timestamptz, timestamptz, interval): TimeZone
    1085,  // date_out(date): DateStyle
    1151,  // timestamptz_out(timestamptz): DateStyle, TimeZone
    1161,  // interval_out(interval): IntervalStyle
    1171,  // date_part(text, timestamptz): TimeZone
    1174,  // timestamptz(date): TimeZone
    1178,  // date(timestamptz): TimeZone
    1189,  // timestamptz_pl_interval (timestamptz + interval): TimeZone
    1190,  // timestamptz_mi_interval (timestamptz - interval): TimeZone
    1217,  // date_trunc(text, timestamptz): TimeZone
    1284,  // date_trunc(text, timestamptz, text): the named zone
    1313,  // timestamp_out(timestamp): DateStyle
    2027,  // timestamp(timestamptz): TimeZone
    2028,  // timestamptz(timestamp): TimeZone
    3462,  // make_timestamptz(int, int, int, int, int, float8): TimeZone
    3463,  // make_timestamptz(..., text): the named zone
    6203,  // extract(text, timestamptz): TimeZone
    // A date or a timestamp compared with a timestamptz (lt, le, eq, gt, ge,
    // ne, cmp), read in TimeZone: date_lt_timestamptz ...
    2351, 2352, 2353, 2354, 2355, 2356, 2357,  // date vs timestamptz
    2377, 2378, 2379, 2380, 2381, 2382, 2383,  // timestamptz vs date
    2520, 2521, 2522, 2523, 2524, 2525, 2526,  // timestamp vs timestamptz
    2527, 2528, 2529, 2530, 2531, 2532, 2533,  // timestamptz vs timestamp
};

// Input functions of date/time types: from a value computed at run time
// (a text parameter cast on, '...'::text::timestamptz) the text may name
// the clock ('now', 'today'), which only a parameter of the type itself is
// checked for.
constexpr Oid kClockReadingInputs[] = {
    1084,  // date_in
    1143,  // time_in
    1150,  // timestamptz_in
    1312,  // timestamp_in
    1350,  // timetz_in
};

// Formatting with TM patterns reads lc_time, which the key does not hold.
constexpr Oid kLcTimeFormatting[] = {
    1768,  // to_char(interval, text)
    1770,  // to_char(timestamptz, text)
    1778,  // to_timestamp(text, text)
    1780,  // to_date(text, text)
    2049,  // to_char(timestamp, text)
};

template <size_t N>
bool listed(const Oid (&list)[N], Oid funcid) {
    return std::find(std::begin(list), std::end(list), funcid) != std::end(list);
}

}  // namespace

bool depends_only_on_keyed_settings(Oid funcid) { return listed(kKeyedSettingsOnly, funcid); }

const char *mutable_function_hint(Oid funcid) {
    if (listed(kClockReadingInputs, funcid))
        return "Its input text may name the clock ('now'). Cast the parameter to the type itself ($1::timestamptz), "
               "whose text pg_memo checks, or pass a typed parameter.";
    if (listed(kLcTimeFormatting, funcid))
        return "With TM patterns it depends on lc_time, which the cache key does not hold. Pass the value as a "
               "typed parameter ($1::date), or format it outside the query.";
    return "Pass such values (for example now()) as parameters instead.";
}

}  // namespace pgmemo
