// pg_memo's settings (GUCs), defined at _PG_init (docs/reference.md,
// "Settings").
#pragma once

namespace pgmemo {

extern int guc_cache_size_kb;       // pg_memo.cache_size
extern int guc_max_result_size_kb;  // pg_memo.max_result_size
extern int guc_max_cache_names;     // pg_memo.max_cache_names
extern int guc_max_flights;         // pg_memo.max_flights
extern bool guc_singleflight;       // pg_memo.singleflight
extern bool guc_enabled;            // pg_memo.enabled
extern bool guc_serve_statements;   // pg_memo.serve_statements
extern int guc_wait_timeout_ms;     // pg_memo.wait_timeout
extern int guc_commit_wait_ms;      // pg_memo.commit_wait_timeout
extern int guc_max_delta_rows;      // pg_memo.max_delta_rows
extern int guc_delta_log_size_kb;   // pg_memo.delta_log_size
extern int guc_max_staleness_ms;    // pg_memo.max_staleness
extern int guc_stale_on_error_ms;   // pg_memo.stale_on_error
extern int guc_error_ttl_ms;        // pg_memo.error_ttl
extern bool guc_save;               // pg_memo.save
extern bool guc_standby_records;    // pg_memo.standby_records

// pg_memo.unwatched_tables: what a call over a table that is not watched does.
enum UnwatchedTables { kUnwatchedError, kUnwatchedCompute };
extern int guc_unwatched_tables;

// pg_memo.log_reasons: 0 (off) or the elevel why a call is not a hit is
// logged at (reason_log.hpp).
extern int guc_log_reasons;

// The level of the once-per-session limit warnings (a result too large to
// store, a full statistics or flight table): WARNING for a memo call, LOG
// while a registered statement is served, whose application is unchanged
// and must see nothing of pg_memo (serve_statement sets it).
extern int limit_warning_level;

// Whether this session is still to be told of limit at limit_warning_level:
// once per session and level, so that a registered statement's LOG does not
// take the WARNING a later memo call gets (memo.stats counts every one).
enum class Limit { ResultNotStored, StatsFull, FlightsFull, Count };
bool limit_message_due(Limit limit);

// pg_memo.admission: whether statements nobody registered are observed,
// and served once their measured cost pays (admission/shapes_table.hpp).
enum Admission { kAdmissionOff, kAdmissionAdvise, kAdmissionAuto };
extern int guc_admission;
extern int guc_admission_shapes;          // pg_memo.admission_shapes
extern int guc_admission_max_admitted;    // pg_memo.admission_max_admitted
extern double guc_admission_min_cost_ms;  // pg_memo.admission_min_cost
extern int guc_admission_calls;           // pg_memo.admission_calls
extern int guc_admission_retry_s;         // pg_memo.admission_retry
extern int guc_admission_max_demotions;   // pg_memo.admission_max_demotions
extern int guc_admission_memory_share;    // pg_memo.admission_memory_share, percent
extern int guc_admission_window_ms;       // pg_memo.admission_window
// How often pg_memo.admission changed in this backend (its assign hook).
extern uint64 admission_setting_changes;

// Defines them; called from _PG_init.
void define_settings();

}  // namespace pgmemo
