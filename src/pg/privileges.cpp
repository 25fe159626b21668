// The privilege checks a hit repeats, encoded with each entry.
#include "privileges.hpp"

extern "C" {
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/rls.h"
#include "utils/syscache.h"
}

#include "compat.hpp"

namespace pgmemo {

namespace {

// One SELECT privilege check of the executor, as stored for hits.
struct PermItem {
    Oid relid;
    Oid check_as_user;
    uint32_t required_perms;  // with kPoliciesApplied
    int32_t nwords;  // words of selectedCols that follow
};

// In required_perms: row level security applied to the relation. No ACL
// bit is this high (PostgreSQL has 14 rights, and a check never requires a
// grant option), and entries stored before 1.3 do not have it: they were
// stored only where it did not apply.
constexpr uint32_t kPoliciesApplied = 0x80000000u;

// Whether row level security applies to the relation now as it did when
// the result was computed. It can start or stop applying without a change
// to the table (ALTER ROLE ... BYPASSRLS, a membership in the owner): the
// policies the result went through are then not the caller's. Where it
// applies, row_security = off makes the query fail, as it must here too.
bool policies_apply_as_stored(const PermItem &item) {
    bool applies = check_enable_rls(item.relid, item.check_as_user, true) == RLS_ENABLED;
    return applies == ((item.required_perms & kPoliciesApplied) != 0) && (!applies || row_security);
}

void append_bytes(StringInfo buf, const void *data, size_t len) {
    appendBinaryStringInfo(buf, static_cast<const char *>(data), int(len));
}

// Whether the current user still holds a stored object privilege. A schema
// or function that is gone fails the check (the computation then raises).
bool object_privilege_holds(const PrivilegeItem &item) {
    if (item.kind == PrivilegeKind::SchemaUsage)
        return SearchSysCacheExists1(NAMESPACEOID, ObjectIdGetDatum(item.oid)) &&
               compat_schema_usage_ok(item.oid, GetUserId());
    return SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(item.oid)) &&
           compat_function_execute_ok(item.oid, GetUserId());
}

}  // namespace

// The executor's relation checks, then the object privileges.
char *encode_privilege_checks(List *permissions, List *privileges, uint32_t *len) {
    StringInfoData buf;
    initStringInfo(&buf);
    uint32_t n = uint32_t(list_length(permissions));
    append_bytes(&buf, &n, sizeof n);
    ListCell *lc;
    foreach (lc, permissions) {
        auto *perm = static_cast<RelationPermission *>(lfirst(lc));
        PermItem item{perm->relid, perm->check_as_user,
                      uint32_t(perm->required) | (perm->policies_applied ? kPoliciesApplied : 0),
                      perm->selected_cols ? perm->selected_cols->nwords : 0};
        append_bytes(&buf, &item, sizeof item);
        if (item.nwords) append_bytes(&buf, perm->selected_cols->words, sizeof(bitmapword) * item.nwords);
    }
    n = uint32_t(list_length(privileges));
    append_bytes(&buf, &n, sizeof n);
    foreach (lc, privileges) append_bytes(&buf, lfirst(lc), sizeof(PrivilegeItem));
    *len = uint32_t(buf.len);
    return buf.data;
}

// Whether an object's ACL grants mode to PUBLIC. A NULL ACL is the kind's
// default: functions grant EXECUTE to PUBLIC, schemas grant nothing.
bool public_holds(Datum acl_datum, bool acl_is_null, bool default_holds, AclMode mode) {
    if (acl_is_null) return default_holds;
    Acl *acl = DatumGetAclP(acl_datum);
    const AclItem *items = ACL_DAT(acl);
    for (int i = 0; i < ACL_NUM(acl); i++)
        if (items[i].ai_grantee == ACL_ID_PUBLIC && (ACLITEM_GET_PRIVS(items[i]) & mode)) return true;
    return false;
}

int checked_relations(const char *meta, uint32_t meta_len, Oid *relids, int max) {
    uint32_t n;
    if (meta_len < sizeof n) return -1;
    memcpy(&n, meta, sizeof n);
    const char *p = meta + sizeof n;
    const char *end = meta + meta_len;
    for (uint32_t i = 0; i < n; i++) {
        PermItem item;
        if (size_t(end - p) < sizeof item) return -1;
        memcpy(&item, p, sizeof item);
        p += sizeof item;
        if (item.nwords < 0 || size_t(end - p) < sizeof(bitmapword) * size_t(item.nwords)) return -1;
        p += sizeof(bitmapword) * size_t(item.nwords);
        if (int(i) < max) relids[i] = item.relid;
    }
    return int(n);
}

bool privileges_still_hold(const char *meta, uint32_t meta_len) {
    uint32_t n;
    if (meta_len < sizeof n) return false;
    memcpy(&n, meta, sizeof n);
    const char *p = meta + sizeof n;
    const char *end = meta + meta_len;
    auto *perms = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (n ? n : 1)));
    for (uint32_t i = 0; i < n; i++) {
        PermItem item;
        if (size_t(end - p) < sizeof item) return false;
        memcpy(&item, p, sizeof item);
        p += sizeof item;
        perms[i] = RelationPermission{item.relid, item.check_as_user,
                                      AclMode(item.required_perms & ~kPoliciesApplied), nullptr};
        if (item.nwords > 0) {
            size_t words = sizeof(bitmapword) * size_t(item.nwords);
            if (size_t(end - p) < words) return false;
            auto *cols = static_cast<Bitmapset *>(palloc(offsetof(Bitmapset, words) + words));
            cols->nwords = item.nwords;
            memcpy(cols->words, p, words);
            p += words;
            perms[i].selected_cols = cols;
        }
        if (!policies_apply_as_stored(item)) return false;
    }
    if (!compat_check_permissions(perms, int(n))) return false;

    uint32_t nprivileges;
    if (size_t(end - p) < sizeof nprivileges) return false;
    memcpy(&nprivileges, p, sizeof nprivileges);
    p += sizeof nprivileges;
    for (uint32_t i = 0; i < nprivileges; i++) {
        PrivilegeItem item;
        if (size_t(end - p) < sizeof item) return false;
        memcpy(&item, p, sizeof item);
        p += sizeof item;
        if (!object_privilege_holds(item)) return false;
    }
    return true;
}

}  // namespace pgmemo
