// The settings a key holds (keyed_settings.hpp).
#include "compute/keyed_settings.hpp"

extern "C" {
#include "utils/memutils.h"
}

namespace pgmemo {

namespace {

// A backend runs a handful of statements over tables whose policies read
// settings; past this many, the oldest learned is forgotten (its next call
// is keyed without settings, computes and stores under its own key, and
// learns them again).
constexpr int kRemembered = 64;

struct StatementSettings {
    uint64 statement_hash;  // encode_statement's hash; 0: a free slot
    char *settings;         // in TopMemoryContext
    uint32_t settings_len;
};
StatementSettings remembered[kRemembered];
int next_victim = 0;
int nremembered = 0;  // none until a statement reads settings: no lookup here

StatementSettings *find(uint64 statement_hash) {
    for (int i = 0; i < kRemembered; i++)
        if (remembered[i].statement_hash == statement_hash && remembered[i].settings) return &remembered[i];
    return nullptr;
}

void forget(StatementSettings *r) {
    pfree(r->settings);
    *r = StatementSettings{0, nullptr, 0};
    nremembered--;
}

}  // namespace

Encoded key_with_settings(const Call &call) {
    const StatementSettings *r = nremembered ? find(encode_statement(call).hash) : nullptr;
    return r ? encode_call(call, r->settings, r->settings_len) : encode_call(call);
}

void learn_settings(const Encoded &statement_key, const Analysis &analysis) {
    StatementSettings *r = nremembered ? find(statement_key.hash) : nullptr;
    if (r && r->settings_len == analysis.settings_len &&
        memcmp(r->settings, analysis.settings, analysis.settings_len) == 0)
        return;
    if (r) forget(r);
    if (analysis.settings_len == 0) return;
    r = &remembered[next_victim];
    next_victim = (next_victim + 1) % kRemembered;
    if (r->settings) forget(r);
    r->settings = static_cast<char *>(MemoryContextAlloc(TopMemoryContext, analysis.settings_len));
    memcpy(r->settings, analysis.settings, analysis.settings_len);
    r->settings_len = analysis.settings_len;
    r->statement_hash = statement_key.hash;
    nremembered++;
}

bool key_holds_settings_of(const Encoded &key, const Analysis &analysis) {
    return key.settings_len == analysis.settings_len &&
           (key.settings_len == 0 || memcmp(key.settings, analysis.settings, key.settings_len) == 0);
}

}  // namespace pgmemo
