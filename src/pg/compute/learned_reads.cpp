// Reads a query's text does not name (see learned_reads.hpp).
//
// Why observing the executor's permission checks finds them: PostgreSQL
// checks the permissions of every relation of every plan it starts
// (ExecCheckPermissions, with ExecutorCheckPerms_hook), whichever way the
// plan came: the query's own, a SQL function's body inlined into it, the
// statements a SQL or PL/pgSQL function runs through SPI, a function folded
// into a constant while the query is planned. A relation read any other way
// (a C function reading a table with the heap access functions, a large
// object) is not seen: docs/reference.md says what a function in a cached
// query may do.
//
// Why the entry may depend on them only from the next computation on: a
// dependency's generation must be read before the snapshot
// (docs/consistency.md, "Generations before the snapshot"); these are known
// only after it. The computation that finds one stores nothing; the next
// analysis of the statement adds them like relations the text names.
//
// Locks: none. A parallel worker tells its leader that it ran statements of
// its own through the leader's flag in shared memory, a 32-bit atomic
// (fetch-or by workers, fetch-and by the leader when its miss ends);
// everything else observed is this backend's own.
#include "compute/learned_reads.hpp"
#include "shared_state.hpp"
#include "counter_slots.hpp"

extern "C" {
#include "access/parallel.h"
#include "catalog/pg_language_d.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "nodes/nodeFuncs.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

namespace pgmemo {

namespace {

ObservedReads *observing = nullptr;

// Per backend (by proc number), while it observes a computation: kObserving
// set by the backend; kWorkerStatements raised by a parallel worker of it
// that started a plan of its own beyond its share of the query's (a
// function's statement reading relations).
constexpr uint32 kObserving = 1, kWorkerStatements = 2;
pg_atomic_uint32 *leader_flags = nullptr;
int worker_plans = 0;  // in a parallel worker: plans started so far (the first is the query's)

pg_atomic_uint32 *my_flags() {
    int me = compat_my_proc_number();
    return leader_flags && me >= 0 && me < MaxBackends ? &leader_flags[me] : nullptr;
}

void note_worker_checks(int n) {
    if (++worker_plans == 1 || n == 0 || !leader_flags) return;
    int leader = compat_parallel_leader_number();
    if (leader < 0 || leader >= MaxBackends) return;
    if (pg_atomic_read_u32(&leader_flags[leader]) & kObserving)
        pg_atomic_fetch_or_u32(&leader_flags[leader], kWorkerStatements);
}

void add_check(List **checks, const RelationPermission &check) {
    ListCell *lc;
    foreach (lc, *checks) {
        auto *known = static_cast<RelationPermission *>(lfirst(lc));
        if (known->relid == check.relid && known->check_as_user == check.check_as_user) {
            // In place: a function called per row starts a plan per row.
            known->required |= check.required;
            if (!bms_is_subset(check.selected_cols, known->selected_cols))
                known->selected_cols = bms_add_members(known->selected_cols, check.selected_cols);
            return;
        }
    }
    auto *kept = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission)));
    *kept = check;
    kept->selected_cols = bms_copy(check.selected_cols);
    *checks = lappend(*checks, kept);
}

int planner_depth = 0;  // planning_begins / planning_ends

void note_origin(List **origins, Oid relid, bool own_plan) {
    RelationReads *found = nullptr;
    ListCell *lc;
    foreach (lc, *origins) {
        auto *known = static_cast<RelationReads *>(lfirst(lc));
        if (known->relid == relid) found = known;
    }
    if (!found) {
        found = static_cast<RelationReads *>(palloc0(sizeof(RelationReads)));
        found->relid = relid;
        *origins = lappend(*origins, found);
    }
    if (own_plan)
        found->by_own_plan = true;
    else
        found->elsewhere = true;
}

// ---- what each statement is known to read ----------------------------------

constexpr int kLearnedStatements = 32;

struct Learned {
    bool used;
    uint64_t hash;
    char *key;
    uint32_t key_len;
    MemoryContext context;  // the key and the checks
    RelationPermission *checks;
    int n;
    bool serial_plan;
    // The database's routines and names counters when it was learned: a
    // function replaced (it may read other relations now, or none) or a
    // relation created or dropped (an OID reused) since makes it unknown
    // again, to be learned anew.
    uint64_t routines_generation;
    uint64_t names_generation;
    uint64_t last_used;
};

Learned learned[kLearnedStatements];
uint64_t uses = 0;

void release(Learned &l) {
    if (l.used) MemoryContextDelete(l.context);
    l = Learned{};
}

Learned *find(const Encoded &key) {
    for (Learned &l : learned) {
        if (!l.used || l.hash != key.hash || l.key_len != key.key_len || memcmp(l.key, key.key, key.key_len) != 0)
            continue;
        Generations &gens = shared_state().gens;
        if (gens.read(routines_slot()) != l.routines_generation || gens.read(names_slot()) != l.names_generation) {
            release(l);
            return nullptr;
        }
        l.last_used = ++uses;
        return &l;
    }
    return nullptr;
}

// A free place, or the least recently used one.
Learned *place_for_new() {
    Learned *victim = &learned[0];
    for (Learned &l : learned) {
        if (!l.used) return &l;
        if (l.last_used < victim->last_used) victim = &l;
    }
    release(*victim);
    return victim;
}

}  // namespace

bool reads_observed_now() { return observing != nullptr || IsParallelWorker(); }

// The executor is about to start a plan. A check made as the current user
// inside a SECURITY DEFINER function is made as its owner: recorded so.
void observe_relation_checks(const RelationPermission *checks, int n) {
    if (IsParallelWorker()) return note_worker_checks(n);
    if (!observing) return;
    MemoryContext old = MemoryContextSwitchTo(observing->context);
    bool own_plan = !observing->own_plan_started && planner_depth == observing->planning_depth;
    if (own_plan) observing->own_plan_started = true;
    for (int i = 0; i < n; i++) {
        RelationPermission check = checks[i];
        if (!OidIsValid(check.check_as_user) && GetUserId() != observing->user) check.check_as_user = GetUserId();
        add_check(&observing->checks, check);
        note_origin(&observing->origins, check.relid, own_plan);
    }
    MemoryContextSwitchTo(old);
}

bool observing_computation() { return observing != nullptr; }

void begin_observing(ObservedReads *reads) {
    reads->checks = NIL;
    reads->origins = NIL;
    reads->own_plan_started = false;
    reads->planning_depth = planner_depth;
    reads->memo_call = false;
    reads->worker_statements = false;
    reads->context = CurrentMemoryContext;
    reads->user = GetUserId();
    reads->outer = observing;
    if (!observing && my_flags()) pg_atomic_write_u32(my_flags(), kObserving);
    observing = reads;
}

void end_observing(ObservedReads *reads) {
    // The workers of a parallel plan end before the plan does.
    if (pg_atomic_uint32 *flags = my_flags()) {
        reads->worker_statements = (pg_atomic_fetch_and_u32(flags, ~kWorkerStatements) & kWorkerStatements) != 0;
        if (!reads->outer) pg_atomic_write_u32(flags, 0);
    }
    observing = reads->outer;
    if (observing) observing->worker_statements |= reads->worker_statements;
}

void note_memo_call() {
    if (observing) observing->memo_call = true;
}

namespace {

// What the text itself reads of one relation: whether a range table entry
// of it, or of any query inside it (subqueries, CTEs, sublinks), names the
// relation, and whether it calls in FROM a SQL function the planner may
// inline into the own plan.
struct TextReads {
    Oid relid;
    bool names_it;
    bool inlinable_function_in_from;
};

// Whether the planner may inline a call of funcid in FROM into the plan
// (inline_set_returning_function's conditions on the function itself): a
// set-returning SQL function, not VOLATILE, not SECURITY DEFINER, without
// SET clauses. Any other runs its own plans, whose reads are elsewhere.
bool inlinable_in_from(Oid funcid) {
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple)) return false;
    auto *proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    bool inlinable = proc->prolang == SQLlanguageId && proc->proretset && !proc->prosecdef &&
                     proc->provolatile != PROVOLATILE_VOLATILE && heap_attisnull(tuple, Anum_pg_proc_proconfig, nullptr);
    ReleaseSysCache(tuple);
    return inlinable;
}

bool text_reads_walker(Node *node, void *context) {
    if (!node) return false;
    auto *text = static_cast<TextReads *>(context);
    if (IsA(node, Query)) {
        auto *q = reinterpret_cast<Query *>(node);
        ListCell *lc;
        foreach (lc, q->rtable) {
            auto *rte = static_cast<RangeTblEntry *>(lfirst(lc));
            if (rte->rtekind == RTE_RELATION && rte->relid == text->relid && compat_rte_is_checked(rte))
                text->names_it = true;
            if (rte->rtekind != RTE_FUNCTION) continue;
            ListCell *lf;
            foreach (lf, rte->functions) {
                Node *call = lfirst_node(RangeTblFunction, lf)->funcexpr;
                if (call && IsA(call, FuncExpr) && inlinable_in_from(reinterpret_cast<FuncExpr *>(call)->funcid))
                    text->inlinable_function_in_from = true;
            }
        }
        return query_tree_walker(q, as_tree_walker(text_reads_walker), context, 0);
    }
    return expression_tree_walker(node, as_tree_walker(text_reads_walker), context);
}

const RelationReads *origins_of(const ObservedReads &reads, Oid relid) {
    ListCell *lc;
    foreach (lc, reads.origins) {
        auto *known = static_cast<RelationReads *>(lfirst(lc));
        if (known->relid == relid) return known;
    }
    return nullptr;
}

}  // namespace

int reads_beyond_the_text(const ObservedReads &reads, Query *query, const Oid *relids, int nrelids,
                          RelationPermission *out) {
    int n = 0;
    for (int i = 0; i < nrelids; i++) {
        const RelationReads *origins = origins_of(reads, relids[i]);
        if (!origins) continue;
        TextReads text{relids[i], false, false};
        text_reads_walker(reinterpret_cast<Node *>(query), &text);
        bool beyond = origins->elsewhere || (origins->by_own_plan && (!text.names_it || text.inlinable_function_in_from));
        if (!beyond) continue;
        ListCell *lc;
        foreach (lc, reads.checks) {
            auto *check = static_cast<RelationPermission *>(lfirst(lc));
            if (check->relid == relids[i]) out[n++] = *check;
        }
    }
    return n;
}

void planning_begins() { planner_depth++; }
void planning_ends() { planner_depth--; }
bool planning_in_progress() { return planner_depth > 0; }

LearnedReads learned_reads(const Encoded &statement_key) {
    Learned *l = find(statement_key);
    if (!l) return LearnedReads{nullptr, 0, false};
    return LearnedReads{l->checks, l->n, l->serial_plan};
}

void learn_reads(const Encoded &statement_key, const RelationPermission *checks, int n, bool serial_plan) {
    Learned *l = find(statement_key);
    List *merged = NIL;
    MemoryContext context = AllocSetContextCreate(TopMemoryContext, "pg_memo learned reads", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(context);
    for (int i = 0; l && i < l->n; i++) add_check(&merged, l->checks[i]);
    for (int i = 0; i < n; i++) add_check(&merged, checks[i]);
    Learned fresh{};
    fresh.used = true;
    fresh.routines_generation = l ? l->routines_generation : shared_state().gens.read(routines_slot());
    fresh.names_generation = l ? l->names_generation : shared_state().gens.read(names_slot());
    fresh.last_used = ++uses;
    fresh.hash = statement_key.hash;
    fresh.key_len = statement_key.key_len;
    fresh.key = static_cast<char *>(palloc(statement_key.key_len));
    memcpy(fresh.key, statement_key.key, statement_key.key_len);
    fresh.context = context;
    fresh.n = list_length(merged);
    fresh.serial_plan = serial_plan || (l && l->serial_plan);
    fresh.checks = static_cast<RelationPermission *>(palloc(sizeof(RelationPermission) * (fresh.n ? fresh.n : 1)));
    for (int i = 0; i < fresh.n; i++) fresh.checks[i] = *static_cast<RelationPermission *>(list_nth(merged, i));
    MemoryContextSwitchTo(old);
    if (l)
        release(*l);
    else
        l = place_for_new();
    *l = fresh;
}

size_t learned_reads_shared_size() { return mul_size(sizeof(pg_atomic_uint32), size_t(MaxBackends)); }

void learned_reads_attach(char *mem, bool initialize) {
    leader_flags = reinterpret_cast<pg_atomic_uint32 *>(mem);
    if (initialize)
        for (int i = 0; i < MaxBackends; i++) pg_atomic_init_u32(&leader_flags[i], 0);
}

}  // namespace pgmemo
