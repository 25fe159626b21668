// The settings a key holds (keyed_settings.hpp).
#include "compute/keyed_settings.hpp"

extern "C" {
#include "utils/memutils.h"
}

namespace pgmemo {

namespace {

// Few: a backend runs a handful of statements over tables with policies;
// beyond that the oldest is replaced (its next call is keyed without
// settings known, and computes once without storing).
constexpr int kRemembered = 64;

struct StatementSettings {
    uint64 statement_hash;  // encode_statement's hash; 0: a free slot
    char *settings;         // in TopMemoryContext, or nullptr
    uint32_t settings_len;
};
StatementSettings remembered[kRemembered];
int next_victim = 0;
// Until a statement reads a setting, no statement does: keys need no
// lookup here, and every one is known to hold what it must (none).
bool settings_read = false;

StatementSettings *find(uint64 statement_hash) {
    for (auto &r : remembered)
        if (r.statement_hash == statement_hash) return &r;
    return nullptr;
}

}  // namespace

Encoded key_with_settings(const Call &call) {
    if (!settings_read) return encode_call(call);
    const StatementSettings *r = find(encode_statement(call).hash);
    if (r && r->settings_len) return encode_call(call, r->settings, r->settings_len);
    Encoded key = encode_call(call);
    key.settings_known = r != nullptr;
    return key;
}

void learn_settings(const Encoded &statement_key, const Analysis &analysis) {
    if (!settings_read && analysis.settings_len == 0) return;
    settings_read = true;
    StatementSettings *r = find(statement_key.hash);
    if (!r) {
        r = &remembered[next_victim];
        next_victim = (next_victim + 1) % kRemembered;
        r->statement_hash = statement_key.hash;
    }
    if (r->settings) pfree(r->settings);
    r->settings = nullptr;
    r->settings_len = analysis.settings_len;
    if (analysis.settings_len) {
        r->settings = static_cast<char *>(MemoryContextAlloc(TopMemoryContext, analysis.settings_len));
        memcpy(r->settings, analysis.settings, analysis.settings_len);
    }
}

bool key_holds_settings_of(const Encoded &key, const Analysis &analysis) {
    return key.settings_len == analysis.settings_len &&
           (key.settings_len == 0 || memcmp(key.settings, analysis.settings, key.settings_len) == 0);
}

}  // namespace pgmemo
