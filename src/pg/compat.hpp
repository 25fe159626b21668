// Calls whose form depends on the PostgreSQL version, in one place, so that a
// port to another major version touches this file (PG_VERSION_NUM guards).
// Include after pg_memo.hpp (inside the glue, never from the core).
//
// Built and tested on PostgreSQL 15, 17 and 18 (scripts/test.sh,
// scripts/test-all-versions.sh); the branches for 16 follow its documented
// APIs and are compiled with 17's.
#pragma once

#include "function_ref.hpp"

extern "C" {
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_subscription_rel.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc_tables.h"
#include "utils/lsyscache.h"
#include "utils/wait_event.h"
#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"
#else
#include "utils/queryjumble.h"
#endif
#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"
#endif
// ExplainProperty* moved to their own header in 18.
#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#endif
}

namespace pgmemo {

// USAGE on a schema, as the parser checks it for a qualified name.
inline bool compat_schema_usage_ok(Oid schema, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(NamespaceRelationId, schema, role, ACL_USAGE) == ACLCHECK_OK;
#else
    return pg_namespace_aclcheck(schema, role, ACL_USAGE) == ACLCHECK_OK;
#endif
}

// EXECUTE on a function, as the executor checks it.
inline bool compat_function_execute_ok(Oid function, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(ProcedureRelationId, function, role, ACL_EXECUTE) == ACLCHECK_OK;
#else
    return pg_proc_aclcheck(function, role, ACL_EXECUTE) == ACLCHECK_OK;
#endif
}

// Whether role has the privileges of a relation's owner.
inline bool compat_relation_owner_ok(Oid relid, Oid role) {
#if PG_VERSION_NUM >= 160000
    return object_ownercheck(RelationRelationId, relid, role);
#else
    return pg_class_ownercheck(relid, role);
#endif
}

// The permission check the executor makes for one relation a query reads.
// PostgreSQL 16 moved these fields from the RangeTblEntry into the query's
// list of RTEPermissionInfo.
struct RelationPermission {
    Oid relid;
    Oid check_as_user;  // InvalidOid: the current user
    AclMode required;
    Bitmapset *selected_cols;
    // Row level security applied to it when the result was computed: a hit
    // must find it applying again (privileges.hpp).
    bool policies_applied = false;
};

// The check for an RTE_RELATION of query.
inline RelationPermission compat_relation_permission(const Query *query, RangeTblEntry *rte) {
#if PG_VERSION_NUM >= 160000
    if (rte->perminfoindex == 0) return RelationPermission{rte->relid, InvalidOid, 0, nullptr};
    RTEPermissionInfo *p = getRTEPermissionInfo(query->rteperminfos, rte);
    return RelationPermission{p->relid, p->checkAsUser, p->requiredPerms, p->selectedCols};
#else
    (void)query;
    return RelationPermission{rte->relid, rte->checkAsUser, rte->requiredPerms, rte->selectedCols};
#endif
}

// Whether the executor checks the permissions of this RTE_RELATION, so
// that it is among the checks ExecutorCheckPerms_hook sees (16 on: it has
// an RTEPermissionInfo; before: it requires a permission; an inheritance
// child, a view's placeholder entries do not).
inline bool compat_rte_is_checked(const RangeTblEntry *rte) {
#if PG_VERSION_NUM >= 160000
    return rte->perminfoindex != 0;
#else
    return rte->requiredPerms != 0;
#endif
}

// Whether a range table entry of a rewritten query names a relation whose
// permissions the executor checks. From 16 on, the rewriter turns a view's
// entry into an RTE_SUBQUERY that keeps the view's relid, relkind and
// RTEPermissionInfo (15 kept them in an extra RTE_RELATION inside the
// view's subquery instead).
inline bool compat_rte_names_relation(const RangeTblEntry *rte) {
#if PG_VERSION_NUM >= 160000
    if (rte->rtekind == RTE_SUBQUERY && rte->relkind == RELKIND_VIEW && OidIsValid(rte->relid)) return true;
#endif
    return rte->rtekind == RTE_RELATION;
}

// The executor's own check of SELECT privileges (table and columns), as
// the current user, against the catalogs as they are now. False if any
// fails.
inline bool compat_check_permissions(const RelationPermission *perms, int n) {
    List *rtable = NIL;
#if PG_VERSION_NUM >= 160000
    List *perminfos = NIL;
#endif
    for (int i = 0; i < n; i++) {
        RangeTblEntry *rte = makeNode(RangeTblEntry);
        rte->rtekind = RTE_RELATION;
        rte->relid = perms[i].relid;
#if PG_VERSION_NUM >= 160000
        RTEPermissionInfo *p = makeNode(RTEPermissionInfo);
        p->relid = perms[i].relid;
        p->checkAsUser = perms[i].check_as_user;
        p->requiredPerms = perms[i].required;
        p->selectedCols = perms[i].selected_cols;
        perminfos = lappend(perminfos, p);
        rte->perminfoindex = list_length(perminfos);
#else
        rte->checkAsUser = perms[i].check_as_user;
        rte->requiredPerms = perms[i].required;
        rte->selectedCols = perms[i].selected_cols;
#endif
        rtable = lappend(rtable, rte);
    }
#if PG_VERSION_NUM >= 160000
    return ExecCheckPermissions(rtable, perminfos, false);
#else
    return ExecCheckRTPerms(rtable, false);
#endif
}

// PostgreSQL's hook on the permission checks of every plan the executor
// starts (nested SPI and the statements of functions included), in one
// form: the plan's relation checks. 16 moved them into a list of
// RTEPermissionInfo and gave the hook that list. observe is called only
// when wanted() (during a miss), so every other statement pays one test.
// _PG_init installs hook, after keeping the hook it replaces in before.
using RelationChecksObserver = void (*)(const RelationPermission *checks, int n);
template <bool (*wanted)(), RelationChecksObserver observe>
struct CompatCheckPermsHook {
    static inline ExecutorCheckPerms_hook_type before = nullptr;

#if PG_VERSION_NUM >= 160000
    static bool hook(List *rtable, List *perminfos, bool ereport_on_violation) {
        if (wanted()) {
            int n = list_length(perminfos), i = 0;
            auto *checks = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (n ? n : 1)));
            ListCell *lc;
            foreach (lc, perminfos) {
                auto *p = lfirst_node(RTEPermissionInfo, lc);
                checks[i++] = RelationPermission{p->relid, p->checkAsUser, p->requiredPerms, p->selectedCols};
            }
            observe(checks, n);
            pfree(checks);
        }
        return before ? before(rtable, perminfos, ereport_on_violation) : true;
    }
#else
    static bool hook(List *rtable, bool ereport_on_violation) {
        if (wanted()) {
            int n = 0;
            auto *checks =
                static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (list_length(rtable) + 1)));
            ListCell *lc;
            foreach (lc, rtable) {
                auto *rte = lfirst_node(RangeTblEntry, lc);
                if (rte->rtekind == RTE_RELATION && rte->requiredPerms != 0)
                    checks[n++] =
                        RelationPermission{rte->relid, rte->checkAsUser, rte->requiredPerms, rte->selectedCols};
            }
            observe(checks, n);
            pfree(checks);
        }
        return before ? before(rtable, ereport_on_violation) : true;
    }
#endif
};

// This backend's number in the proc array, and that of the leader of the
// parallel query this process is a worker of (-1 if none). 17 replaced
// PGPROC's pgprocno with GetNumberFromPGProc.
inline int compat_my_proc_number() {
#if PG_VERSION_NUM >= 170000
    return MyProcNumber;
#else
    return MyProc->pgprocno;
#endif
}
inline int compat_parallel_leader_number() {
    PGPROC *leader = MyProc ? MyProc->lockGroupLeader : nullptr;
    if (!leader || leader == MyProc) return -1;
#if PG_VERSION_NUM >= 170000
    return GetNumberFromPGProc(leader);
#else
    return leader->pgprocno;
#endif
}

// The variable behind a built-in string setting, found by a scan of the
// setting table (GetConfigOption looks a setting up by name on every call);
// nullptr if there is none.
inline char **compat_string_setting_variable(const char *name) {
#if PG_VERSION_NUM >= 160000
    int n;
    struct config_generic **settings = get_guc_variables(&n);
#else
    struct config_generic **settings = get_guc_variables();
    int n = GetNumConfigOptions();
#endif
    for (int i = 0; i < n; i++)
        if (settings[i]->vartype == PGC_STRING && pg_strcasecmp(settings[i]->name, name) == 0)
            return reinterpret_cast<struct config_string *>(settings[i])->variable;
    return nullptr;
}

// The wait events of pg_memo's own waits. From 17 on, pg_memo's own names in
// pg_stat_activity.wait_event (type Extension), registered on first use in
// each backend (WaitEventExtensionNew takes a lock: call it before a sleep,
// never inside a critical section); before 17, the generic "Extension".
inline uint32 compat_wait_event(uint32 *cache, const char *name) {
#if PG_VERSION_NUM >= 170000
    if (*cache == 0) *cache = WaitEventExtensionNew(name);
    return *cache;
#else
    (void)cache;
    (void)name;
    return PG_WAIT_EXTENSION;
#endif
}
// A backend waiting on another backend's flight (the same call, computing).
inline uint32 compat_flight_wait_event() {
    static uint32 event = 0;
    return compat_wait_event(&event, "pg_memo flight");
}
// A miss waiting for a commit in progress on what it reads.
inline uint32 compat_commit_wait_event() {
    static uint32 event = 0;
    return compat_wait_event(&event, "pg_memo commit");
}

// Every table a subscription replicates, whatever its state
// (SubscriptionRelState). PostgreSQL 16 added the not_ready filter.
inline List *compat_subscription_relations(Oid subid) {
#if PG_VERSION_NUM >= 160000
    return GetSubscriptionRelations(subid, false);
#else
    return GetSubscriptionRelations(subid);
#endif
}

// PostgreSQL 15's tree walkers take an untyped function pointer; 16's
// a typed one.
#if PG_VERSION_NUM >= 160000
using TreeWalker = tree_walker_callback;
inline TreeWalker as_tree_walker(bool (*walker)(Node *, void *)) { return walker; }
#else
using TreeWalker = bool (*)();
inline TreeWalker as_tree_walker(bool (*walker)(Node *, void *)) {
    return reinterpret_cast<TreeWalker>(reinterpret_cast<void (*)()>(walker));
}
#endif

// The same for tree mutators.
#if PG_VERSION_NUM >= 160000
using TreeMutator = tree_mutator_callback;
inline TreeMutator as_tree_mutator(Node *(*mutator)(Node *, void *)) { return mutator; }
#else
using TreeMutator = Node *(*)();
inline TreeMutator as_tree_mutator(Node *(*mutator)(Node *, void *)) {
    return reinterpret_cast<TreeMutator>(reinterpret_cast<void (*)()>(mutator));
}
#endif

// A comparison operator's B-tree interpretation: its operator family, its
// strategy (1 to 5; 6 for <>, which a B-tree knows only as the negator of
// its =) and its input types. 18 widened the lookup to every ordering
// index method and named the strategy a comparison type (the same numbers
// for B-trees).
struct CompatBtreeInterpretation {
    Oid opfamily;
    int strategy;
    Oid lefttype;
    Oid righttype;
};
constexpr int kCompatNotEqualStrategy = 6;
inline bool compat_btree_interpretation(Oid opno, CompatBtreeInterpretation *out) {
#if PG_VERSION_NUM >= 180000
    ListCell *lc;
    foreach (lc, get_op_index_interpretation(opno)) {
        auto *i = static_cast<OpIndexInterpretation *>(lfirst(lc));
        if (get_opfamily_method(i->opfamily_id) != BTREE_AM_OID) continue;
        *out = CompatBtreeInterpretation{i->opfamily_id, int(i->cmptype), i->oplefttype, i->oprighttype};
        return true;
    }
    return false;
#else
    List *interpretations = get_op_btree_interpretation(opno);
    if (interpretations == NIL) return false;
    auto *i = static_cast<OpBtreeInterpretation *>(linitial(interpretations));
    *out = CompatBtreeInterpretation{i->opfamily_id, int(i->strategy), i->oplefttype, i->oprighttype};
    return true;
#endif
}

// ExecutorRun_hook: 18 dropped its execute_once argument. around(qd,
// count, run) runs the executor (the hook it replaced, or PostgreSQL's) by
// calling run; count is the rows asked for (0: all).
template <void (*around)(QueryDesc *, uint64, FnRef<void()>)>
struct CompatExecutorRunHook {
    static inline ExecutorRun_hook_type before = nullptr;

#if PG_VERSION_NUM >= 180000
    static void hook(QueryDesc *qd, ScanDirection direction, uint64 count) {
        around(qd, count, [&] {
            if (before)
                before(qd, direction, count);
            else
                standard_ExecutorRun(qd, direction, count);
        });
    }
#else
    static void hook(QueryDesc *qd, ScanDirection direction, uint64 count, bool execute_once) {
        around(qd, count, [&] {
            if (before)
                before(qd, direction, count, execute_once);
            else
                standard_ExecutorRun(qd, direction, count, execute_once);
        });
    }
#endif
};

// PostgreSQL's identifier of an analyzed query, the one pg_stat_statements
// shows (the same for every constant's value and for white space). 16 moved
// the jumble to nodes/queryjumble.h and dropped its text argument.
// JumbleQuery expects identifiers to be enabled and sets query->queryId:
// both are put back, so that compute_query_id stays the DBA's.
inline uint64 compat_query_id(Query *query, const char *text) {
    if (query->queryId != UINT64CONST(0)) return query->queryId;
    int saved_setting = compute_query_id;
    bool saved_enabled = query_id_enabled;
    uint64 id = 0;
    PG_TRY();
    {
        compute_query_id = COMPUTE_QUERY_ID_ON;
#if PG_VERSION_NUM >= 160000
        (void)text;
        JumbleQuery(query);
#else
        JumbleQuery(query, text);
#endif
        id = query->queryId;
    }
    PG_FINALLY();
    {
        compute_query_id = saved_setting;
        query_id_enabled = saved_enabled;
        query->queryId = UINT64CONST(0);
    }
    PG_END_TRY();
    return id;
}

}  // namespace pgmemo
