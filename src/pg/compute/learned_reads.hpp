// Reads a query's text does not name: the relations that the statements
// its functions execute read (a function labelled IMMUTABLE that reads a
// table), observed while a miss computes, and depended on from the
// statement's next computation on (docs/consistency.md, "Functions that
// read tables").
#pragma once

#include "call.hpp"
#include "compat.hpp"

namespace pgmemo {

// What one computation observed: the permission checks of every plan the
// executor started while it ran (its own plan, and nested SPI), and whether
// a memo call was made inside it.
struct ObservedReads {
    List *checks;  // of RelationPermission *, in context
    List *origins;  // of RelationReads *: which plans checked each relation
    bool own_plan_started;  // the computation's own plan has been started
    int planning_depth;     // plans being made when it began (a memo call folded at plan time)
    bool memo_call;
    // A parallel worker of the computation ran a statement that reads
    // relations (a user's PARALLEL SAFE function): its checks are not seen
    // here, so the statement is planned without workers from now on.
    bool worker_statements;
    MemoryContext context;  // the caller's, at begin_observing
    Oid user;               // the computation's current user
    ObservedReads *outer;  // the computation this one runs inside, or nullptr
};

// Which plans read one relation while observed. The computation's own
// plan is the first the executor starts outside the planner; every other
// one (a function's statement, a function folded into a constant while
// the plan was made) reads "elsewhere".
struct RelationReads {
    Oid relid;
    bool by_own_plan;
    bool elsewhere;
};

// The checks of the relations among relids that were read by more than
// the text's own range table entries: read elsewhere, or by the own plan
// without an entry of the text for them (a set-returning SQL function the
// planner inlined; with one it may inline in the text, every relation of
// the own plan counts). Those a dependency covers only in part (a scope, deltas, ONLY)
// must be depended on whole (docs/consistency.md, "Functions that read
// tables"). Into out (room for list_length(reads.checks)); returns how
// many.
int reads_beyond_the_text(const ObservedReads &reads, Query *query, const Oid *relids, int nrelids,
                          RelationPermission *out);

// Plans being made, nested: the planner hook counts them (a plan the
// executor starts meanwhile is a function folded into a constant).
void planning_begins();
void planning_ends();
bool planning_in_progress();

// Observes from here until end_observing (nested computations push their
// own). An error in between must call end_observing too (compute.cpp).
void begin_observing(ObservedReads *reads);
void end_observing(ObservedReads *reads);

// Whether a computation is being observed: statements planned inside it
// are a miss's own (the planner hook does not serve them).
bool observing_computation();

// A memo call is starting: if a computation is being observed, its result
// holds what that call returned, whose dependencies it cannot know.
void note_memo_call();

// What is learned of a statement (the key of encode_statement): the
// relations its functions' statements read, as permission checks, and
// whether it must be planned without parallel workers.
struct LearnedReads {
    const RelationPermission *checks;
    int n;
    bool serial_plan;
};
LearnedReads learned_reads(const Encoded &statement_key);

// Adds to what is learned of the statement (kept in this backend, for its
// most recent statements).
void learn_reads(const Encoded &statement_key, const RelationPermission *checks, int n, bool serial_plan);

// The executor's permission checks, observed (ExecutorCheckPerms_hook,
// installed by _PG_init): reads_observed_now is the hook's one test on
// every plan (during a miss, or in a parallel worker);
// observe_relation_checks records a plan's checks.
bool reads_observed_now();
void observe_relation_checks(const RelationPermission *checks, int n);
using ReadObserverHook = CompatCheckPermsHook<reads_observed_now, observe_relation_checks>;

// The shared flags a parallel worker raises for its leader (part of
// pg_memo's region).
size_t learned_reads_shared_size();
void learned_reads_attach(char *mem, bool initialize);

}  // namespace pgmemo
