// Plans of registered statements kept by their text (statement_plans.hpp).
#include "registered/statement_plans.hpp"

#include "call.hpp"
#include "hash.hpp"
#include "invalidate/catalog_changes.hpp"
#include "admission/shapes_table.hpp"
#include "registered/registrations.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/sinval.h"
#include "utils/memutils.h"
}

namespace pgmemo {
namespace {

// Few: a backend serves a handful of hot statements; beyond that the
// oldest is replaced.
constexpr int kKeptPlans = 32;

struct KeptPlan {
    MemoryContext context;  // holds text and plan; nullptr for a free slot
    uint64 hash;
    char *text;
    uint64 query_id;
    int cursor_options;
    Oid userid;
    Oid path[kMaxSearchPath];
    int path_len;
    uint64 invalidations;  // SharedInvalidMessageCounter when kept
    uint64 registrations;  // registry_version() when kept
    uint64 admissions;     // admission_version() when kept
    PlannedStmt *plan;  // nullptr: refused
};
KeptPlan kept[kKeptPlans];
int next_victim = 0;

struct Lookup {
    uint64 hash;
    Oid path[kMaxSearchPath];
    int path_len;
};

Lookup lookup_of(const KeptPlanKey &key) {
    Lookup l;
    l.hash = hash_bytes(key.text, strlen(key.text));
    l.path_len = effective_search_path(l.path);
    return l;
}

bool matches(const KeptPlan &k, const KeptPlanKey &key, const Lookup &l) {
    return k.context && k.hash == l.hash && k.query_id == key.query_id && k.cursor_options == key.cursor_options &&
           k.userid == GetUserId() &&
           k.path_len == l.path_len && memcmp(k.path, l.path, sizeof(Oid) * l.path_len) == 0 &&
           strcmp(k.text, key.text) == 0;
}

bool still_valid(const KeptPlan &k) {
    return k.invalidations == SharedInvalidMessageCounter && k.registrations == registry_version() &&
           k.admissions == admission_version();
}

void forget(KeptPlan &k) {
    if (k.context) MemoryContextDelete(k.context);
    k.context = nullptr;
}

}  // namespace

KeptPlanEpoch kept_plan_epoch() {
    return KeptPlanEpoch{SharedInvalidMessageCounter, registry_version(), admission_version()};
}

bool find_kept_plan(const KeptPlanKey &key, PlannedStmt **plan) {
    *plan = nullptr;
    if (transaction_changed_catalogs()) return false;
    Lookup l = lookup_of(key);
    for (KeptPlan &k : kept) {
        if (!matches(k, key, l)) continue;
        if (!still_valid(k)) {
            forget(k);
            return false;
        }
        if (k.plan) *plan = static_cast<PlannedStmt *>(copyObjectImpl(k.plan));
        return true;
    }
    return false;
}

namespace {

// Keeps for key what stmt holds of the pg_memo node, or a refusal.
void keep(const KeptPlanKey &key, const PlannedStmt *stmt, const KeptPlanEpoch &epoch) {
    if (transaction_changed_catalogs()) return;
    Lookup l = lookup_of(key);
    KeptPlan *slot = nullptr;
    for (KeptPlan &k : kept)
        if (!k.context || matches(k, key, l)) {
            slot = &k;
            break;
        }
    if (!slot) {
        slot = &kept[next_victim];
        next_victim = (next_victim + 1) % kKeptPlans;
    }
    forget(*slot);
    MemoryContext context = AllocSetContextCreate(TopMemoryContext, "pg_memo kept plan", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(context);
    slot->text = pstrdup(key.text);
    slot->plan = nullptr;
    if (stmt) {
        auto *plan = static_cast<PlannedStmt *>(copyObjectImpl(stmt));
        // PostgreSQL's plan and its subplans: EXPLAIN's, which never comes here.
        outerPlan(plan->planTree) = nullptr;
        plan->subplans = NIL;
        slot->plan = plan;
    }
    MemoryContextSwitchTo(old);
    slot->context = context;
    slot->hash = l.hash;
    slot->query_id = key.query_id;
    slot->cursor_options = key.cursor_options;
    slot->userid = GetUserId();
    memcpy(slot->path, l.path, sizeof(Oid) * l.path_len);
    slot->path_len = l.path_len;
    slot->invalidations = epoch.invalidations;
    slot->registrations = epoch.registrations;
    slot->admissions = epoch.admissions;
}

}  // namespace

void keep_plan(const KeptPlanKey &key, const PlannedStmt *stmt, const KeptPlanEpoch &epoch) {
    keep(key, stmt, epoch);
}

void keep_refusal(const KeptPlanKey &key, const KeptPlanEpoch &epoch) { keep(key, nullptr, epoch); }

}  // namespace pgmemo
