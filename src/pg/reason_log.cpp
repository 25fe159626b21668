// pg_memo.log_reasons (reason_log.hpp).
#include "reason_log.hpp"

#include "settings.hpp"

namespace pgmemo {

void log_reason(const text *cache_name, const char *what, Counter reason) {
    log_reason(VARDATA_ANY(cache_name), int(VARSIZE_ANY_EXHDR(cache_name)), what, reason);
}

void log_reason(const char *cache_name, int name_len, const char *what, Counter reason) {
    if (guc_log_reasons == 0) return;
    const char *name = reason_name(reason);
    ereport(guc_log_reasons, (errmsg("pg_memo: cache name \"%.*s\": %s: %s", name_len, cache_name, what,
                                     name ? name : "unknown")));
}

}  // namespace pgmemo
