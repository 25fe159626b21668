// This backend's prepared statements (call_plans.hpp).
//
// Why reuse is exact: the analysis and the plan depend on the catalogs, the
// search path, the role and the settings that change what the text means.
// The last four are the statement's key. The catalogs, as other sessions
// committed them, reach this backend only as invalidation messages, which
// SharedInvalidMessageCounter counts; the miss path receives them before it
// looks a statement up, so an unchanged counter means an unchanged analysis.
// This transaction's own uncommitted DDL is not counted there: the miss path
// does not use this cache at all in a transaction that ran DDL.
#include "compute/call_plans.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/memutils.h"
}

namespace pgmemo {

namespace {

constexpr int kStatements = 32;

struct Slot {
    bool used;
    bool in_use;  // found or kept by this transaction: not freed until it ends
    uint64_t hash;
    char *key;
    uint32_t key_len;
    MemoryContext context;  // the key, the parameter types and the analysis
    PreparedStatement statement;
};

Slot slots[kStatements];
int next_victim = 0;
bool any_in_use = false;  // some slot's in_use is set: clear them at the end

void release(Slot &s) {
    if (!s.used) return;
    if (s.statement.plan) SPI_freeplan(s.statement.plan);
    MemoryContextDelete(s.context);
    s = Slot{};
}

Slot *free_slot() {
    for (int tries = 0; tries < kStatements; tries++) {
        Slot &s = slots[next_victim];
        next_victim = (next_victim + 1) % kStatements;
        if (!s.in_use) {
            release(s);
            return &s;
        }
    }
    return nullptr;
}

}  // namespace

PreparedStatement *find_statement(const Encoded &key, uint64 invalidations_now) {
    for (Slot &s : slots) {
        if (!s.used || !s.statement.plan || s.hash != key.hash || s.key_len != key.key_len ||
            memcmp(s.key, key.key, key.key_len) != 0)
            continue;
        if (s.statement.invalidations_at != invalidations_now) {
            if (!s.in_use) release(s);  // the catalogs moved: prepare again
            continue;
        }
        s.in_use = any_in_use = true;
        return &s.statement;
    }
    return nullptr;
}

void release_statements_in_use() {
    if (!any_in_use) return;  // the transaction used no statement: most do not
    for (Slot &s : slots) s.in_use = false;
    any_in_use = false;
}

void forget_statement(const PreparedStatement *statement) {
    for (Slot &s : slots)
        if (s.used && &s.statement == statement) s.statement.invalidations_at = ~uint64(0);  // never matches
}

PreparedStatement *keep_statement(const Encoded &key, SPIPlanPtr plan, const Oid *param_types, int nparams,
                                  const Analysis &analysis, uint64 invalidations_at) {
    Slot *s = free_slot();
    if (!s) return nullptr;
    s->context = AllocSetContextCreate(TopMemoryContext, "pg_memo statement", ALLOCSET_SMALL_SIZES);
    s->used = true;  // from here on release() frees the context, if an allocation below fails
    s->key = static_cast<char *>(MemoryContextAlloc(s->context, key.key_len));
    memcpy(s->key, key.key, key.key_len);
    s->key_len = key.key_len;
    s->hash = key.hash;
    PreparedStatement &st = s->statement;
    st.plan = nullptr;  // set once saved
    st.nparams = nparams;
    st.param_types = static_cast<Oid *>(MemoryContextAlloc(s->context, sizeof(Oid) * (nparams ? nparams : 1)));
    memcpy(st.param_types, param_types, sizeof(Oid) * nparams);
    st.analysis = analysis;
    st.analysis.deps = static_cast<DepStamp *>(
        MemoryContextAlloc(s->context, sizeof(DepStamp) * analysis.ndeps));
    memcpy(st.analysis.deps, analysis.deps, sizeof(DepStamp) * analysis.ndeps);
    st.analysis.meta = static_cast<char *>(
        MemoryContextAlloc(s->context, analysis.meta_len ? analysis.meta_len : 1));
    memcpy(st.analysis.meta, analysis.meta, analysis.meta_len);
    st.analysis.relids = static_cast<Oid *>(
        MemoryContextAlloc(s->context, sizeof(Oid) * (analysis.nrelids ? analysis.nrelids : 1)));
    memcpy(st.analysis.relids, analysis.relids, sizeof(Oid) * analysis.nrelids);
    MemoryContext outer = MemoryContextSwitchTo(s->context);
    st.analysis.scope_values = static_cast<List *>(copyObjectImpl(analysis.scope_values));
    MemoryContextSwitchTo(outer);
    st.analysis.settings = nullptr;
    if (analysis.settings_len) {
        st.analysis.settings = static_cast<char *>(MemoryContextAlloc(s->context, analysis.settings_len));
        memcpy(st.analysis.settings, analysis.settings, analysis.settings_len);
    }
    st.invalidations_at = invalidations_at;
    st.context = s->context;
    st.delta_evaluator = nullptr;
    if (SPI_keepplan(plan) != 0) {  // last: nothing above may leave a saved plan behind
        release(*s);
        return nullptr;
    }
    st.plan = plan;
    s->in_use = any_in_use = true;
    return &st;
}

}  // namespace pgmemo
