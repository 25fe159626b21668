// The planner hook of registered statements (plan_hook.hpp).
//
// Which statements it looks at: only those a client sent, planned at the
// top level (the planner's source text is the one the client's message
// carried, or the prepared statement's that a top-level EXECUTE runs).
// Statements of functions, triggers and DO blocks are not: their text
// names variables a miss could not bind.
#include "registered/plan_hook.hpp"

#include "admission/shapes_table.hpp"
#include "admission/statement_shape.hpp"
#include "call.hpp"
#include "compat.hpp"
#include "compute/analysis.hpp"
#include "compute/learned_reads.hpp"
#include "query_errors.hpp"
#include "registered/observed_executions.hpp"
#include "registered/statement_plans.hpp"
#include "registered/memo_scan.hpp"
#include "registered/registrations.hpp"
#include "registered/statement_text.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#include <cctype>

extern "C" {
#include "commands/prepare.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
}

namespace pgmemo {
namespace {

// The source text of the prepared statement a top-level EXECUTE runs.
const char *executing_source = nullptr;

bool top_level(const char *source) {
    // A plan made while planning (a function folded at plan time) is not top level.
    if (planning_in_progress() || !source) return false;
    if (source == executing_source) return true;
    return debug_query_string && (source == debug_query_string || strcmp(source, debug_query_string) == 0);
}

// Whether a registration reads a relation of the query (its subqueries and
// WITH queries included): the test every SELECT pays.
bool reads_registered(const Query *query) {
    ListCell *lc;
    foreach (lc, query->rtable) {
        auto *rte = lfirst_node(RangeTblEntry, lc);
        if (rte->rtekind == RTE_RELATION && registration_reads(rte->relid)) return true;
        // A view expanded by the rewriter: from PostgreSQL 16 on its
        // subquery no longer names the view, its entry still does.
        if (rte->rtekind == RTE_SUBQUERY && OidIsValid(rte->relid) && registration_reads(rte->relid)) return true;
        if (rte->rtekind == RTE_SUBQUERY && rte->subquery && reads_registered(rte->subquery)) return true;
    }
    foreach (lc, query->cteList) {
        auto *cte = lfirst_node(CommonTableExpr, lc);
        if (IsA(cte->ctequery, Query) && reads_registered(castNode(Query, cte->ctequery))) return true;
    }
    return false;
}

// The parameter types a query's Params have, by number (0 where unused).
struct ParamTypes {
    Oid *types;
    int n;
};
bool collect_param_types(Node *node, void *arg) {
    auto *p = static_cast<ParamTypes *>(arg);
    if (!node) return false;
    if (IsA(node, Param)) {
        auto *param = castNode(Param, node);
        if (param->paramkind == PARAM_EXTERN && param->paramid > 0 && param->paramid <= kMaxParams) {
            if (param->paramid > p->n) {
                p->types = static_cast<Oid *>(repalloc(p->types, sizeof(Oid) * (param->paramid + 1)));
                for (int i = p->n; i < param->paramid; i++) p->types[i] = InvalidOid;
                p->n = param->paramid;
            }
            p->types[param->paramid - 1] = param->paramtype;
        }
        return false;
    }
    if (IsA(node, Query))
        return query_tree_walker(castNode(Query, node), as_tree_walker(collect_param_types), p, 0);
    return expression_tree_walker(node, as_tree_walker(collect_param_types), p);
}

// What a miss would check of the statement, raised as an error in a
// subtransaction: one SELECT, cacheable; a text cut past a prefix must
// parse back to the statement planned.
struct Candidate {
    Query *query;
    const char *source;
    const char *text;
    bool after_prefix;
    uint64 query_id;
};

void check_candidate(Candidate *c) {
    char *statement = nullptr;
    check_single_select(c->text, &statement);
    // White space after the statement (a client's "SELECT ... \n") would
    // make another key for the same statement.
    size_t len = strlen(statement);
    while (len > 0 && isspace(static_cast<unsigned char>(statement[len - 1]))) statement[--len] = '\0';
    c->text = statement;
    if (c->after_prefix) {
        ParamTypes p{static_cast<Oid *>(palloc(sizeof(Oid))), 0};
        collect_param_types(reinterpret_cast<Node *>(c->query), &p);
        for (int i = 0; i < p.n; i++)
            if (!OidIsValid(p.types[i])) p.types[i] = TEXTOID;
        List *raw = pg_parse_query(statement);
        Query *again = parse_analyze_fixedparams(linitial_node(RawStmt, raw), statement, p.types, p.n, nullptr);
        if (planned_query_id(again, statement) != c->query_id)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("pg_memo could not find the text of the statement")));
    }
    Oid path[kMaxSearchPath];
    int path_len = effective_search_path(path);
    Analysis analysis{};
    analyze_query(static_cast<Query *>(copyObjectImpl(c->query)), c->source, path, path_len, nullptr, 0, &analysis);
}

// A registered statement pg_memo does not serve, counted under its cache
// name for every planning (memo.bypass_reasons: refused_plans).
void count_refusal(const Registration &r) {
    if (r.admitted_shape != 0) return;  // memo.admission says why an admitted shape is not served
    shared_state().stats.add(stats_slot_for(r.cache_name, strlen(r.cache_name)), kRefusedPlans);
}

// Shapes of the statements this backend planned, by query identifier: two
// statements with one identifier differ only in constants (and in how a
// cast was written, which the shape does not see either), and so have one
// shape, until a relation's definition changes (a view replaced keeps the
// identifier of a statement over it): a statement planned at every
// execution (simple protocol) over a registered table pays for its shape
// once. Direct-mapped. (An operator family changed under a kept shape
// could make it match another registration than it now would; matching
// decides only whether pg_memo serves, and a served statement is checked
// as a miss would check it.)
struct KnownShape {
    uint64 query_id, shape_id;
};
KnownShape known_shapes[256];

uint64 known_shape(Query *parse, const char *source, uint64 query_id) {
    KnownShape &k = known_shapes[query_id % 256];
    if (k.query_id != query_id || query_id == 0) k = KnownShape{query_id, statement_shape(parse, source)};
    return k.shape_id;
}

// What the planner hook found for a statement.
struct Serving {
    Registration registration;  // a copy: planning may read the registry again, which frees what it held
    const char *text;           // the text it is served by
    PlannedStmt *kept;          // a plan kept for the text: no check, no planning
    const char *keep_as;        // otherwise, the text the plan made may be kept under, or nullptr
    uint64 query_id;            // the statement's own identifier (a shape's match has another)
    KeptPlanEpoch epoch;        // what a plan or a refusal kept now is valid for
    ShapeSlot observed;         // the shape automatic admission observes, if it does
    bool named;                 // a top-level SELECT planned under pg_memo.admission
    Registration admitted_as;   // the registration automatic admission makes for its shape

    // Served by automatic admission, not by a registration.
    bool admitted() const { return registration.admitted_shape != 0; }
};

// The registration that serves the statement, or nullptr.
const Registration *registration_of(Query *parse, Candidate *c) {
    if (!any_registrations() || !reads_registered(parse)) return nullptr;
    c->query_id = compat_query_id(parse, c->source);
    const Registration *found = find_registration(c->query_id);
    // The same statement sent another way (a literal for a parameter, a
    // bigint parameter for an integer one): served by its registration.
    if (!found && any_registration_shapes())
        found = find_registration_by_shape(known_shape(parse, c->source, c->query_id));
    return found;
}

// Whether a query reads a table (or materialized view) that is not a
// system catalog and over which a top-level SELECT took at least
// pg_memo.admission_min_cost (observed_executions.hpp), its subqueries and
// WITH queries included: pg_memo's own views, over functions, are not read
// as tables; statements over tables only cheap statements read pay for no
// shape.
bool reads_slow_table(const Query *query) {
    ListCell *lc;
    foreach (lc, query->rtable) {
        auto *rte = lfirst_node(RangeTblEntry, lc);
        if (admission_table(rte) && relation_seen_slow(rte->relid)) return true;
        if (rte->rtekind == RTE_SUBQUERY && rte->subquery && reads_slow_table(rte->subquery)) return true;
    }
    foreach (lc, query->cteList) {
        auto *cte = lfirst_node(CommonTableExpr, lc);
        if (IsA(cte->ctequery, Query) && reads_slow_table(castNode(Query, cte->ctequery))) return true;
    }
    return false;
}

// Whether automatic admission observes the statement: pg_memo 1.3 is
// installed in the database, and it reads a slow table (catalog statements
// are not candidates) without locking rows.
bool observable(Query *parse) {
    return guc_admission != kAdmissionOff && parse->rowMarks == NIL && !parse->hasModifyingCTE &&
           reads_slow_table(parse) && admission_installed();
}

// A blocked shape (memo.block_statement) is neither observed nor served;
// one admitted before its block gives its place back.
void release_blocked(uint64 shape) {
    ShapeSlot slot = find_shape_slot(shape, false, nullptr, 0, 0);
    if (shape_state(slot) == ShapeState::Admitted &&
        note_shape_refused(slot, "blocked by memo.block_statement", nullptr, false))
        replan_after_admission_change();
}

// Automatic admission of the statement's shape: observed from now on
// (s->observed), and served while admitted under pg_memo.admission = auto
// by a registration of its own, "auto:" and the shape's identifier.
const Registration *admission_of(Query *parse, Candidate *c, Serving *s) {
    if (!observable(parse)) return nullptr;
    if (c->query_id == 0) c->query_id = compat_query_id(parse, c->source);
    uint64 shape = known_shape(parse, c->source, c->query_id);
    if (shape_blocked(shape)) {
        release_blocked(shape);
        return nullptr;
    }
    // The statement as its client sent it (its slice of a multi-statement
    // text) is kept as a sample of its shape when the shape is new.
    int location = parse->stmt_location > 0 ? parse->stmt_location : 0;
    s->observed = find_shape_slot(shape, true, c->source + location, parse->stmt_len, c->query_id);
    if (shape_state(s->observed) != ShapeState::Admitted) return nullptr;
    // Exact (no session's staleness reaches it), as a registration made
    // with no option is.
    s->admitted_as = Registration{c->query_id,
                                  psprintf("%s%016llx", kAdmittedNamePrefix, static_cast<unsigned long long>(shape)),
                                  StatementOptions{}, shape};
    return &s->admitted_as;
}

// An admitted shape refused by the check: observed, not served, until
// pg_memo.admission_retry has passed.
void refuse_admitted(const Serving &s, const ErrorData *refusal) {
    if (note_shape_refused(s.observed, refusal->message, refusal->hint)) replan_after_admission_change();
}

// The check of an admitted statement: the check a miss makes, with a table
// that is not watched a refusal whatever pg_memo.unwatched_tables says (it
// would be computed at every execution, and warn a client that asked
// nothing of pg_memo).
ErrorData *check_admitted(Candidate *c) {
    int unwatched = guc_unwatched_tables;
    ErrorData *refusal = nullptr;
    guc_unwatched_tables = kUnwatchedError;
    PG_TRY();
    { refusal = error_of_subtransaction([&] { check_candidate(c); }); }
    PG_FINALLY();
    { guc_unwatched_tables = unwatched; }
    PG_END_TRY();
    return refusal;
}

// Whether a registration, or automatic admission, serves this statement
// (filling *s). A refusal is kept like a plan, so that a statement planned
// at every execution is not checked again each time.
bool serving_statement(Query *parse, const char *source, int cursor_options, Serving *s) {
    if (!guc_enabled || !guc_serve_statements || parse->commandType != CMD_SELECT || parse->utilityStmt ||
        !top_level(source) || observing_computation())
        return false;
    s->named = guc_admission != kAdmissionOff;
    Candidate c{parse, source, nullptr, false, 0};
    const Registration *found = registration_of(parse, &c);
    if (!found) found = admission_of(parse, &c, s);
    if (!found) return false;
    // A name memo.statements' check should have refused (63 bytes at
    // most): never served, and planning must not fail for it.
    if (strlen(found->cache_name) > kMaxCacheNameLen) return false;
    s->epoch = kept_plan_epoch();
    s->registration = *found;
    if (found != &s->admitted_as) s->registration.cache_name = pstrdup(found->cache_name);
    c.text = statement_source(source, parse, &c.after_prefix);
    if (!c.text) {
        count_refusal(s->registration);
        return false;
    }
    // Under pg_memo.admission = advise an admitted shape is checked once,
    // so that memo.admission says whether it could be served, and never
    // served.
    bool advise_only = s->admitted() && guc_admission != kAdmissionAuto;
    if (advise_only && shape_checked(s->observed)) return false;
    // EXPLAIN, DECLARE and PREPARE are planned once; EXPLAIN shows the
    // plan PostgreSQL makes now, which a kept plan does not hold.
    s->query_id = c.query_id;
    KeptPlanKey key{c.text, c.query_id, cursor_options};
    if (!c.after_prefix && !advise_only) {
        if (find_kept_plan(key, &s->kept)) {
            if (!s->kept) count_refusal(s->registration);
            return s->kept != nullptr;
        }
        s->keep_as = c.text;
    }
    bool admitted = s->admitted();
    ErrorData *refusal = admitted ? check_admitted(&c) : error_of_subtransaction([&] { check_candidate(&c); });
    if (refusal) {
        // An admitted statement's client asked nothing of pg_memo: whatever
        // its check raised but an interrupt only means it is not served.
        if (admitted ? error_is_interrupt(refusal->sqlerrcode) : !error_explains_refusal(refusal->sqlerrcode))
            ReThrowError(refusal);
        ereport(guc_log_reasons ? guc_log_reasons : DEBUG1,
                (errmsg_internal("pg_memo does not serve %s statement %s: %s", admitted ? "admitted" : "registered",
                                 s->registration.cache_name, refusal->message)));
        count_refusal(s->registration);
        // Only a refusal's reason refuses an admitted shape; another error
        // (a deadlock, a lock timeout, memory) only this planning. Its
        // refusal is not kept: once the shape is refused, the next
        // planning does not reach the check (and a kept one's epoch would
        // be past already); if another backend was deciding, the next
        // planning tries again.
        if (admitted && error_explains_refusal(refusal->sqlerrcode)) refuse_admitted(*s, refusal);
        if (!c.after_prefix && !advise_only && !admitted) keep_refusal(key, s->epoch);
        return false;
    }
    if (advise_only) {
        note_shape_checked(s->observed);
        return false;
    }
    s->text = c.text;
    return true;
}

// A top-level EXECUTE (or EXPLAIN EXECUTE): the prepared statement's source
// text is the one its plans are made from.
const char *prepared_source(Node *statement) {
    if (IsA(statement, ExplainStmt)) statement = castNode(ExplainStmt, statement)->query;
    if (IsA(statement, Query) && castNode(Query, statement)->utilityStmt)
        statement = castNode(Query, statement)->utilityStmt;
    if (!IsA(statement, ExecuteStmt)) return nullptr;
    PreparedStatement *prepared = FetchPreparedStatement(castNode(ExecuteStmt, statement)->name, false);
    return prepared ? prepared->plansource->query_string : nullptr;
}

}  // namespace

planner_hook_type planner_before_memo = nullptr;

void forget_known_shapes(Datum, Oid) { memset(known_shapes, 0, sizeof known_shapes); }

PlannedStmt *plan_statement(Query *parse, const char *source, int cursor_options, ParamListInfo params) {
    Serving s{};
    bool serving = serving_statement(parse, source, cursor_options, &s);
    // Under pg_memo.admission a top-level SELECT is named with its shape's
    // slot, or with none (registered, blocked, no longer observable, a
    // full table): an earlier planning of the same text must not go on
    // counting for a shape.
    bool name_it = s.named;
    if (s.kept) {
        // Kept for the statement's own text: where it stands in this
        // source text is this planning's.
        s.kept->stmt_location = parse->stmt_location;
        s.kept->stmt_len = parse->stmt_len;
        if (name_it) observe_plan(s.kept, source, s.observed);
        return s.kept;
    }
    PlannedStmt *stmt;
    planning_begins();
    PG_TRY();
    {
        stmt = planner_before_memo ? planner_before_memo(parse, source, cursor_options, params)
                            : standard_planner(parse, source, cursor_options, params);
    }
    PG_FINALLY();
    { planning_ends(); }
    PG_END_TRY();
    if (stmt->commandType != CMD_SELECT || planning_in_progress()) return stmt;
    // A registration made later must reach this plan if it is kept
    // (a prepared statement): its change to memo.statements invalidates it.
    Oid table = statements_table();
    if (OidIsValid(table)) stmt->relationOids = lappend_oid(stmt->relationOids, table);
    if (serving) {
        stmt->planTree = memo_scan_over(stmt->planTree, s.registration, s.text);
        // The child runs only inside a computation, which plans its own.
        stmt->parallelModeNeeded = false;
        stmt->jitFlags = 0;
        if (s.keep_as) keep_plan(KeptPlanKey{s.keep_as, s.query_id, cursor_options}, stmt, s.epoch);
    }
    if (name_it) observe_plan(stmt, source, s.observed);
    return stmt;
}

void with_execute_source(Node *stmt, ProcessUtilityContext context, FnRef<void()> run) {
    const char *saved = executing_source;
    if (context == PROCESS_UTILITY_TOPLEVEL) executing_source = prepared_source(stmt);
    PG_TRY();
    { run(); }
    PG_FINALLY();
    { executing_source = saved; }
    PG_END_TRY();
}

}  // namespace pgmemo
