// The settings a key holds (keyed_settings.hpp).
#include "compute/keyed_settings.hpp"

extern "C" {
#include "port/atomics.h"
#include "utils/memutils.h"
}

namespace pgmemo {

namespace {

// A backend runs a handful of statements over tables whose policies read
// settings; past this many, the oldest learned is forgotten (its next miss
// learns them again: settings_unknown).
constexpr int kRemembered = 64;

struct StatementSettings {
    uint64 statement_hash;  // encode_statement's hash; 0: a free slot
    char *settings;         // in TopMemoryContext
    uint32_t settings_len;
};
StatementSettings remembered[kRemembered];
int next_victim = 0;
int nremembered = 0;  // none until a statement reads settings: no lookup here

// The statements this backend analyzed that read none, by hash, so that a
// miss learns each statement once (settings_unknown).
constexpr int kReadingNone = 256;
uint64 reading_none[kReadingNone];
int next_none = 0;

// In shared memory: whether any backend has met a statement that reads
// settings since the server started. Until then no miss learns first (a
// cluster without such statements pays nothing for them). After a warm
// restart the first miss of such a statement computes (and sets it).
pg_atomic_uint32 *settings_met = nullptr;

bool reads_none(uint64 statement_hash) {
    for (uint64 h : reading_none)
        if (h == statement_hash) return true;
    return false;
}

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

bool settings_unknown(const Call &call) {
    if (!settings_met || pg_atomic_read_u32(settings_met) == 0) return false;
    uint64 statement_hash = encode_statement(call).hash;
    return !reads_none(statement_hash) && !(nremembered && find(statement_hash));
}

void learn_settings(const Encoded &statement_key, const Analysis &analysis) {
    StatementSettings *r = nremembered ? find(statement_key.hash) : nullptr;
    if (r && r->settings_len == analysis.settings_len &&
        memcmp(r->settings, analysis.settings, analysis.settings_len) == 0)
        return;
    if (r) forget(r);
    if (analysis.settings_len == 0) {
        if (!reads_none(statement_key.hash)) {
            reading_none[next_none] = statement_key.hash;
            next_none = (next_none + 1) % kReadingNone;
        }
        return;
    }
    for (uint64 &h : reading_none)
        if (h == statement_key.hash) h = 0;
    if (settings_met && pg_atomic_read_u32(settings_met) == 0) pg_atomic_write_u32(settings_met, 1);
    r = &remembered[next_victim];
    next_victim = (next_victim + 1) % kRemembered;
    if (r->settings) forget(r);
    r->settings = static_cast<char *>(MemoryContextAlloc(TopMemoryContext, analysis.settings_len));
    memcpy(r->settings, analysis.settings, analysis.settings_len);
    r->settings_len = analysis.settings_len;
    r->statement_hash = statement_key.hash;
    nremembered++;
}

size_t keyed_settings_shared_size() { return sizeof(pg_atomic_uint32); }

void keyed_settings_attach(char *mem, bool initialize) {
    settings_met = reinterpret_cast<pg_atomic_uint32 *>(mem);
    if (initialize) pg_atomic_init_u32(settings_met, 0);
}

bool key_holds_settings_of(const Encoded &key, const Analysis &analysis) {
    return key.settings_len == analysis.settings_len &&
           (key.settings_len == 0 || memcmp(key.settings, analysis.settings, key.settings_len) == 0);
}

}  // namespace pgmemo
