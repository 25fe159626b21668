// Which scope a statement's result depends on (scope_reads.hpp).
//
// The rules hold only where the scopes' rows are all the result can see of
// the table: for every range table entry that reads it in the whole
// statement (its subqueries, CTEs and sublinks included), a top-level
// conjunct of that selection's WHERE filters its rows to a scope. One read
// without, an ON clause, an OR, or a function reading tables leaves the
// entry on the table's Relation counter.
#include "compute/scope_reads.hpp"

extern "C" {
#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "compat.hpp"
#include "counter_slots.hpp"
#include "invalidate/scope_columns.hpp"
#include "query_errors.hpp"

namespace pgmemo {

namespace {

// How many distinct values one entry's scope may have: past it, the
// table's counter is cheaper to keep than that many stamps.
constexpr int kMaxScopeValues = 16;

// Every read of a relation in a statement: where it is.
struct RelationUse {
    Oid relid;
    Query *query;
    Index rtindex;
};
struct Uses {
    List *found = NIL;  // of RelationUse *
};

void note_use(Uses *u, Oid relid, Query *q, Index rtindex) {
    auto *r = static_cast<RelationUse *>(palloc(sizeof(RelationUse)));
    *r = RelationUse{relid, q, rtindex};
    u->found = lappend(u->found, r);
}

bool uses_walker(Node *node, void *context) {
    if (!node) return false;
    auto *u = static_cast<Uses *>(context);
    if (IsA(node, Query)) {
        auto *q = reinterpret_cast<Query *>(node);
        Index i = 0;
        ListCell *lc;
        foreach (lc, q->rtable) {
            auto *rte = static_cast<RangeTblEntry *>(lfirst(lc));
            i++;
            if (rte->rtekind == RTE_RELATION) note_use(u, rte->relid, q, i);
        }
        return query_tree_walker(q, as_tree_walker(uses_walker), context, 0);
    }
    return expression_tree_walker(node, as_tree_walker(uses_walker), context);
}

// A value as the operator reads it, past relabelings: a varchar read as
// text is the same datum.
Node *strip_relabel(Node *node) {
    while (node && IsA(node, RelabelType)) node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
    return node;
}

// The table's column the conjunct pins, as the scope needs it: a plain
// Var of this selection's entry (relabeled or not: a varchar column
// compared as text).
bool is_scope_var(Node *node, Index rtindex, const ScopeColumns &columns, AttrNumber *attnum) {
    node = strip_relabel(node);
    if (!node || !IsA(node, Var)) return false;
    auto *v = reinterpret_cast<Var *>(node);
    if (v->varno != int(rtindex) || v->varlevelsup != 0 || !columns.contains(v->varattno)) return false;
    *attnum = v->varattno;
    return true;
}

// Whether a value is computed from settings alone: constants, the settings
// current_setting reads and the functions the analysis let through (in the
// key, or read through: a policy's auth.uid()), with no column, parameter
// or subquery. Its value is the same all through one call.
bool settings_value_walker(Node *node, void *) {
    if (!node) return false;
    if (IsA(node, Var) || IsA(node, Param) || IsA(node, SubLink) || IsA(node, Aggref) || IsA(node, WindowFunc) ||
        IsA(node, Query))
        return true;
    return expression_tree_walker(node, as_tree_walker(settings_value_walker), nullptr);
}

bool is_settings_value(Node *node) {
    return !IsA(node, Const) && !settings_value_walker(node, nullptr) &&
           !contain_volatile_functions(node);
}

// Adds the values of a constant (hashed now), a parameter or a value from
// settings (per call), each hashed by h (of the type the operator reads
// them as, h.value_type); as_array: it holds an array of them.
// needs_every: a null value or element, or an empty array, makes the rule
// unusable. values: where a value from settings is kept.
bool add_source(ScopeRule *rule, const ScopeHasher &h, Node *node, bool as_array, List **values) {
    Oid type = as_array ? get_array_type(h.value_type) : h.value_type;
    if (!node || exprType(node) != type) return false;
    node = strip_relabel(node);  // a varchar parameter read as text: the same datum
    if (IsA(node, Param)) {
        auto *p = reinterpret_cast<Param *>(node);
        if (p->paramkind != PARAM_EXTERN || rule->nsources == ScopeRule::kMaxSources) return false;
        rule->sources[rule->nsources++] = ScopeRule::Source{int16(p->paramid), as_array, p->paramtype, 0, h.value_type};
        return true;
    }
    if (IsA(node, Const)) {
        auto *c = reinterpret_cast<Const *>(node);
        ScopeHasher each = h;
        each.is_array = as_array;
        ScopeHashes hashes;
        if (c->constisnull) return !rule->needs_every_value;
        if (as_array) {
            ArrayType *array = DatumGetArrayTypeP(c->constvalue);
            if (rule->needs_every_value && (array_contains_nulls(array) || ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array)) == 0))
                return false;
        }
        add_scope_values(each, c->constvalue, false, &hashes);
        for (int i = 0; i < hashes.count; i++) {
            if (rule->nsources == ScopeRule::kMaxSources) return false;
            rule->sources[rule->nsources++] = ScopeRule::Source{0, false, type, hashes.values[i], h.value_type};
        }
        return true;
    }
    if (IsA(node, ArrayExpr) && as_array) {
        auto *a = reinterpret_cast<ArrayExpr *>(node);
        if (a->multidims || (rule->needs_every_value && a->elements == NIL)) return false;
        ListCell *lc;
        foreach (lc, a->elements)
            if (!add_source(rule, h, static_cast<Node *>(lfirst(lc)), false, values)) return false;
        return true;
    }
    if (is_settings_value(node) && !as_array && rule->nsources < ScopeRule::kMaxSources &&
        list_length(*values) < PG_INT16_MAX) {
        *values = lappend(*values, node);
        rule->sources[rule->nsources++] =
            ScopeRule::Source{int16(-list_length(*values)), false, type, 0, h.value_type};
        return true;
    }
    return false;
}

// col = v, v = col, col IN (...), col = ANY(v), arr @> v, v = ANY(arr).
bool match_conjunct(Node *clause, Index rtindex, const ScopeColumns &columns, Relation rel, ScopeRule *rule,
                    List **values) {
    AttrNumber attnum;
    List *args;
    Oid opno, inputcollid;
    bool array_op;
    if (IsA(clause, OpExpr)) {
        auto *op = reinterpret_cast<OpExpr *>(clause);
        args = op->args, opno = op->opno, inputcollid = op->inputcollid, array_op = false;
    } else if (IsA(clause, ScalarArrayOpExpr)) {
        auto *op = reinterpret_cast<ScalarArrayOpExpr *>(clause);
        if (!op->useOr) return false;
        args = op->args, opno = op->opno, inputcollid = op->inputcollid, array_op = true;
    } else {
        return false;
    }
    if (list_length(args) != 2) return false;
    Node *left = static_cast<Node *>(linitial(args)), *right = static_cast<Node *>(lsecond(args));
    bool var_left = is_scope_var(left, rtindex, columns, &attnum);
    if (!var_left && !is_scope_var(right, rtindex, columns, &attnum)) return false;
    Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
    ScopeHasher h;
    if (!scope_hasher_for(att->atttypid, att->attcollation, &h) || inputcollid != att->attcollation) return false;
    ScopeRule r{};
    r.relid = RelationGetRelid(rel);
    r.attnum = attnum;
    r.column_type = att->atttypid;
    r.collation = att->attcollation;
    Node *value = var_left ? right : left;
    // The type the operator reads the value as: the column's, or another
    // of its hash family (an int4 literal against a bigint column).
    Oid value_type = exprType(value);
    if (array_op && var_left) value_type = get_element_type(value_type);
    ScopeHasher v;
    bool ok = false;
    if (!h.is_array && !array_op) {
        ok = scope_value_hasher(h, opno, var_left, value_type, &v) && add_source(&r, v, value, false, values);  // col = v
    } else if (!h.is_array && array_op) {
        ok = var_left && scope_value_hasher(h, opno, true, value_type, &v) &&
             add_source(&r, v, value, true, values);  // col IN (...), col = ANY(v)
    } else if (h.is_array && !array_op) {
        r.needs_every_value = true;
        ok = var_left && opno == OID_ARRAY_CONTAINS_OP && add_source(&r, h, value, true, values);  // arr @> v
    } else {
        ok = !var_left && scope_value_hasher(h, opno, false, value_type, &v) &&
             add_source(&r, v, value, false, values);  // v = ANY(arr)
    }
    if (!ok || r.nsources == 0) return false;
    *rule = r;
    return true;
}

// The scope of one read of a table with scope columns, or false: from a
// conjunct of the selection's WHERE, or of the policies row level security
// applies to the read (its security quals, which filter the rows first: a
// restrictive policy's, or the only permissive one's).
bool scope_of_use(const RelationUse &use, Relation rel, const ScopeColumns &columns, ScopeRule *rule,
                  List **values) {
    List *conjuncts = NIL;
    if (use.query->jointree && use.query->jointree->quals)
        conjuncts = make_ands_implicit(reinterpret_cast<Expr *>(use.query->jointree->quals));
    ListCell *lc;
    foreach (lc, rt_fetch(use.rtindex, use.query->rtable)->securityQuals)
        conjuncts = list_concat(conjuncts, make_ands_implicit(static_cast<Expr *>(lfirst(lc))));
    foreach (lc, conjuncts) {
        int kept = list_length(*values);
        if (match_conjunct(static_cast<Node *>(lfirst(lc)), use.rtindex, columns, rel, rule, values)) return true;
        *values = list_truncate(*values, kept);  // a conjunct that failed half way
    }
    return false;
}

// The scopes of every read of relid into analysis, or none.
bool scopes_of_relation(Oid relid, List *uses, Analysis *analysis) {
    if (get_rel_relkind(relid) != RELKIND_RELATION || has_subclass(relid) || has_superclass(relid)) return false;
    Relation rel = table_open(relid, NoLock);  // locked by the parser
    ScopeColumns columns = scope_columns_of(rel);
    bool all = columns.count > 0;
    analysis->nscopes = 0;
    ListCell *lc;
    foreach (lc, uses) {
        auto *use = static_cast<RelationUse *>(lfirst(lc));
        if (!all || use->relid != relid) continue;
        all = analysis->nscopes < Analysis::kMaxScopeRules &&
              scope_of_use(*use, rel, columns, &analysis->scopes[analysis->nscopes++], &analysis->scope_values);
    }
    table_close(rel, NoLock);
    if (!all) {
        analysis->nscopes = 0;
        analysis->scope_values = NIL;
    }
    return all;
}

// Adds the hashes of a value from settings, evaluated now, as the query
// evaluates it in this call (its settings do not change within it). A
// value that fails (app.tenant_id = 'abc' read as an int) may fail the
// query too, or not (no row to compare): then the rule is not used, and the
// query meets the failure itself.
bool hash_settings_value(Node *expr, const ScopeHasher &h, ScopeHashes *hashes) {
    ErrorData *error = error_of_subtransaction([&] {
        ExprContext *econtext = CreateStandaloneExprContext();
        // Planned as the executor needs it: a call's default arguments
        // filled in (the parser leaves them out), SQL functions inlined.
        Expr *planned = expression_planner(static_cast<Expr *>(copyObjectImpl(expr)));
        ExprState *state = ExecInitExpr(planned, nullptr);
        bool isnull;
        Datum value = ExecEvalExprSwitchContext(state, econtext, &isnull);
        add_scope_values(h, value, isnull, hashes);
        FreeExprContext(econtext, true);
    });
    if (error && error_is_interrupt(error->sqlerrcode)) ReThrowError(error);
    return error == nullptr;
}

// The hashes of one call's values, or false when they cannot be told.
bool hash_call_values(const ScopeRule &rule, ParamListInfo params, List *values, ScopeHashes *hashes) {
    ScopeHasher h;
    if (!scope_hasher_for(rule.column_type, rule.collation, &h)) return false;
    for (int i = 0; i < rule.nsources; i++) {
        const ScopeRule::Source &s = rule.sources[i];
        if (s.paramid == 0) {
            hashes->add(s.hash);
            continue;
        }
        if (s.paramid < 0) {
            ScopeHasher each = h;
            if (-s.paramid > list_length(values) || !scope_hasher_as(h, s.hashed_as, &each) ||
                !hash_settings_value(static_cast<Node *>(list_nth(values, -s.paramid - 1)), each, hashes))
                return false;
            continue;
        }
        if (!params || s.paramid > params->numParams) return false;
        const ParamExternData &p = params->params[s.paramid - 1];
        if (p.ptype != s.type) return false;
        if (p.isnull) {
            if (rule.needs_every_value) return false;
            continue;
        }
        ScopeHasher each = h;
        if (!scope_hasher_as(h, s.hashed_as, &each)) return false;
        each.is_array = s.is_array;
        if (s.is_array && rule.needs_every_value) {
            ArrayType *array = DatumGetArrayTypeP(p.value);
            if (array_contains_nulls(array) || ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array)) == 0) return false;
        }
        add_scope_values(each, p.value, false, hashes);
        if (hashes->count > kMaxScopeValues) return false;
    }
    return hashes->count > 0 && hashes->count <= kMaxScopeValues;
}

// Adds slot to deps, or makes the stamp already on it a guarding one.
void add_guarding_stamp(DepStamp *deps, uint32_t *ndeps, uint32_t slot, uint32_t flags) {
    for (uint32_t i = 0; i < *ndeps; i++)
        if (deps[i].slot == slot) {
            deps[i].flags &= ~kCarryPosition;
            return;
        }
    deps[(*ndeps)++] = DepStamp{slot, flags, 0};
}

}  // namespace

void find_scopes(Query *query, Analysis *analysis) {
    analysis->nscopes = 0;
    analysis->scope_values = NIL;
    Uses uses;
    uses_walker(reinterpret_cast<Node *>(query), &uses);
    List *tried = NIL;
    ListCell *lc;
    foreach (lc, uses.found) {
        Oid relid = static_cast<RelationUse *>(lfirst(lc))->relid;
        if (list_member_oid(tried, relid)) continue;
        tried = lappend_oid(tried, relid);
        if (scopes_of_relation(relid, uses.found, analysis)) return;
    }
}

void add_scope_stamps(Analysis *analysis, ParamListInfo params) {
    if (analysis->nscopes == 0) return;
    // Each rule's values, hashed: all of them, or the table's counter.
    ScopeHashes hashes[Analysis::kMaxScopeRules];
    int total = 0;
    for (int r = 0; r < analysis->nscopes; r++) {
        if (!hash_call_values(analysis->scopes[r], params, analysis->scope_values, &hashes[r])) return;
        total += hashes[r].count;
    }
    if (total > kMaxScopeValues) return;
    Oid relid = analysis->scopes[0].relid;
    uint32_t table = relation_slot(relid);
    auto *deps = static_cast<DepStamp *>(palloc(sizeof(DepStamp) * (analysis->ndeps + 1 + total)));
    uint32_t ndeps = analysis->ndeps;
    memcpy(deps, analysis->deps, sizeof(DepStamp) * ndeps);
    for (uint32_t i = 0; i < ndeps; i++)
        if (deps[i].slot == table) deps[i].flags |= kCarryPosition;
    add_guarding_stamp(deps, &ndeps, any_scope_slot(relid), kDataStamp);
    for (int r = 0; r < analysis->nscopes; r++)
        for (int i = 0; i < hashes[r].count; i++)
            add_guarding_stamp(deps, &ndeps, scope_slot(relid, analysis->scopes[r].attnum, hashes[r].values[i]),
                               kScopeStamp | kDataStamp);
    analysis->deps = deps;
    analysis->ndeps = ndeps;
}

}  // namespace pgmemo
