// The shapes automatic admission observes (shapes_table.hpp, whose header
// gives the locking rules).
#include "admission/shapes_table.hpp"

#include "hash.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#include <cstring>
#include <initializer_list>

extern "C" {
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/s_lock.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

namespace pgmemo {
namespace {

constexpr int kSampleLen = 256;
constexpr int kRefusalLen = 256;

struct SharedShape {
    pg_atomic_uint64 key;  // the shape and its database, mixed; 0: free
    pg_atomic_uint32 state;
    pg_atomic_uint32 reason;
    pg_atomic_uint32 demotions;
    pg_atomic_uint32 checked;
    pg_atomic_flag deciding;
    pg_atomic_uint64 state_since;   // TimestampTz
    pg_atomic_uint64 window_start;  // TimestampTz
    // Counted by every execution, from the slot's claim on.
    pg_atomic_uint64 calls, time_us, served_calls, served_time_us, computed, computed_time_us;
    // The counts as of the current window's start (written by the decider).
    pg_atomic_uint64 base_calls, base_time_us, base_served_calls, base_served_time_us, base_computed,
        base_computed_time_us;
    pg_atomic_uint64 mean_ns;   // the uncached mean the policy keeps
    pg_atomic_uint64 saved_us;  // an int64: what served windows saved, summed
    pg_atomic_uint64 figures[3];  // doubles: the figures of the last reason
    slock_t text_lock;
    uint64 shape_id;
    Oid database;
    Oid role;
    uint64 query_id;
    char sample[kSampleLen];
    char refusal[kRefusalLen];
};

// Relations a top-level SELECT took at least pg_memo.admission_min_cost
// over, by (database, relation) hashed to a bit: only statements over one
// of them are observed, so that a workload of cheap statements pays for
// no statement's shape (a collision observes a statement for nothing).
constexpr int kSlowRelationWords = 64;

struct ShapesHeader {
    pg_atomic_uint64 slow_relations[kSlowRelationWords];
    pg_atomic_uint32 epoch;
    pg_atomic_uint32 admitted;  // slots in state Admitted
    pg_atomic_uint64 version;
    uint32 capacity;
};

ShapesHeader *header = nullptr;
SharedShape *slots = nullptr;

uint64 bits_of(double d) {
    uint64 u;
    memcpy(&u, &d, sizeof u);
    return u;
}

double double_of(uint64 u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

uint32 slow_relation_bit(Oid relid) {
    return uint32(hash_mix(MyDatabaseId, relid) % (kSlowRelationWords * 64));
}

uint64 key_of(uint64 shape_id, Oid database) {
    uint64 k = hash_mix(shape_id, database);
    return k ? k : 1;
}

// The slot of a current slot number, or nullptr.
SharedShape *slot_of(ShapeSlot s) {
    if (!header || s.index == kNoShapeSlot || s.index >= header->capacity) return nullptr;
    if (pg_atomic_read_u32(&header->epoch) != s.epoch) return nullptr;
    return &slots[s.index];
}

// Every 64-bit field but the key.
template <typename Fn>
void for_each_counter(SharedShape *s, Fn fn) {
    for (pg_atomic_uint64 *c :
         {&s->state_since, &s->window_start, &s->calls, &s->time_us, &s->served_calls, &s->served_time_us,
          &s->computed, &s->computed_time_us, &s->base_calls, &s->base_time_us, &s->base_served_calls,
          &s->base_served_time_us, &s->base_computed, &s->base_computed_time_us, &s->mean_ns, &s->saved_us,
          &s->figures[0], &s->figures[1], &s->figures[2]})
        fn(c);
}

// A free slot's state: Observing, nothing counted (an admitted one gives
// its place back).
void clear_slot(SharedShape *s) {
    if (ShapeState(pg_atomic_exchange_u32(&s->state, uint32(ShapeState::Observing))) == ShapeState::Admitted)
        pg_atomic_fetch_sub_u32(&header->admitted, 1);
    pg_atomic_write_u32(&s->reason, uint32(ShapeReason::TooFewCalls));
    pg_atomic_write_u32(&s->demotions, 0);
    pg_atomic_write_u32(&s->checked, 0);
    for_each_counter(s, [](pg_atomic_uint64 *c) { pg_atomic_write_u64(c, 0); });
}

void init_slot(SharedShape *s) {
    pg_atomic_init_u64(&s->key, 0);
    pg_atomic_init_u32(&s->state, 0);
    pg_atomic_init_u32(&s->reason, 0);
    pg_atomic_init_u32(&s->demotions, 0);
    pg_atomic_init_u32(&s->checked, 0);
    pg_atomic_init_flag(&s->deciding);
    for_each_counter(s, [](pg_atomic_uint64 *c) { pg_atomic_init_u64(c, 0); });
    clear_slot(s);
    SpinLockInit(&s->text_lock);
    s->shape_id = 0;
    s->database = InvalidOid;
    s->role = InvalidOid;
    s->query_id = 0;
    s->sample[0] = '\0';
    s->refusal[0] = '\0';
}

AdmissionSettings admission_settings() {
    AdmissionSettings a;
    a.min_cost_ms = guc_admission_min_cost_ms;
    a.min_calls = uint32(guc_admission_calls);
    a.retry_s = double(guc_admission_retry_s);
    a.max_demotions = uint32(guc_admission_max_demotions);
    a.min_served_window_s = double(guc_admission_window_ms) / 1000.0;
    return a;
}

double since_ms(pg_atomic_uint64 *now, pg_atomic_uint64 *base, double scale) {
    return double(pg_atomic_read_u64(now) - pg_atomic_read_u64(base)) * scale;
}

ShapeWindow window_of(SharedShape *s) {
    ShapeWindow w;
    w.calls = pg_atomic_read_u64(&s->calls) - pg_atomic_read_u64(&s->base_calls);
    w.time_ms = since_ms(&s->time_us, &s->base_time_us, 1e-3);
    w.served_calls = pg_atomic_read_u64(&s->served_calls) - pg_atomic_read_u64(&s->base_served_calls);
    w.served_time_ms = since_ms(&s->served_time_us, &s->base_served_time_us, 1e-3);
    w.computed = pg_atomic_read_u64(&s->computed) - pg_atomic_read_u64(&s->base_computed);
    w.computed_time_ms = since_ms(&s->computed_time_us, &s->base_computed_time_us, 1e-3);
    return w;
}

void start_window(SharedShape *s, TimestampTz now) {
    pg_atomic_write_u64(&s->window_start, uint64(now));
    pg_atomic_write_u64(&s->base_calls, pg_atomic_read_u64(&s->calls));
    pg_atomic_write_u64(&s->base_time_us, pg_atomic_read_u64(&s->time_us));
    pg_atomic_write_u64(&s->base_served_calls, pg_atomic_read_u64(&s->served_calls));
    pg_atomic_write_u64(&s->base_served_time_us, pg_atomic_read_u64(&s->served_time_us));
    pg_atomic_write_u64(&s->base_computed, pg_atomic_read_u64(&s->computed));
    pg_atomic_write_u64(&s->base_computed_time_us, pg_atomic_read_u64(&s->computed_time_us));
}

// The figures each reason's sentence needs (admission_view.cpp writes
// it), with the settings of the backend that decided.
void keep_figures(SharedShape *s, const AdmissionDecision &d, const ShapeWindow &w) {
    double f[3] = {d.uncached_mean_ms, guc_admission_min_cost_ms, 0};
    if (d.reason == ShapeReason::AdmittedFull) f[2] = guc_admission_max_admitted;
    if (d.reason == ShapeReason::MemoryFull) f[2] = guc_admission_memory_share;
    if (d.reason == ShapeReason::SavedNothing || d.reason == ShapeReason::Retired || d.reason == ShapeReason::Saving) {
        // recomputed per second against served per second, over the window
        double seconds = w.seconds > 0.001 ? w.seconds : 0.001;
        f[1] = double(w.computed) / seconds;
        f[2] = double(w.served_calls) / seconds;
    }
    for (int i = 0; i < 3; i++) pg_atomic_write_u64(&s->figures[i], bits_of(f[i]));
}

// Moves the slot to state; true when whether it is served changed. A
// refusal counts as a demotion unless counts is false (a DBA's block).
bool enter_state(SharedShape *s, ShapeState from, ShapeState to, TimestampTz now, bool counts = true) {
    if (from == to) return false;
    pg_atomic_write_u32(&s->state, uint32(to));
    pg_atomic_write_u64(&s->state_since, uint64(now));
    pg_atomic_write_u32(&s->checked, 0);
    // A refusal counts as a demotion: it is tried again later and later,
    // and not after pg_memo.admission_max_demotions.
    if (to == ShapeState::Demoted || to == ShapeState::Retired || (to == ShapeState::Refused && counts))
        pg_atomic_fetch_add_u32(&s->demotions, 1);
    if (to == ShapeState::Admitted) pg_atomic_fetch_add_u32(&header->admitted, 1);
    if (from == ShapeState::Admitted) pg_atomic_fetch_sub_u32(&header->admitted, 1);
    bool serving_changed = from == ShapeState::Admitted || to == ShapeState::Admitted;
    if (serving_changed) pg_atomic_fetch_add_u64(&header->version, 1);
    return serving_changed;
}

// Copies src (len bytes, or to its end when len <= 0) into dst (cap bytes),
// cut at a character's boundary: memo.admission returns it as text.
// Raises nothing (valid text, the server's encoding).
void copy_whole_characters(char *dst, int cap, const char *src, int len) {
    if (!src) src = "";
    int n = len > 0 ? len : int(strnlen(src, size_t(cap) + MAX_MULTIBYTE_CHAR_LEN));
    n = pg_mbcliplen(src, n, cap - 1);
    memcpy(dst, src, size_t(n));
    dst[n] = '\0';
}

// The arena bytes the entries of admitted shapes ("auto:" cache names)
// hold in this database: read from memo.stats' gauges at a window's end
// (a walk over pg_memo.max_cache_names rows, no lock).
uint64 admitted_bytes() {
    StatsTable &stats = shared_state().stats;
    uint64 bytes = 0;
    for (uint32 i = 0; i < stats.size(); i++) {
        const StatsSlot &slot = stats.slot(i);
        if (!stats.ready(i) || slot.dbid != MyDatabaseId ||
            strncmp(slot.name, kAdmittedNamePrefix, strlen(kAdmittedNamePrefix)) != 0)
            continue;
        bytes += stats.get(i, kBytes);
    }
    return bytes;
}

// The end of a window, decided by the backend holding s->deciding.
bool decide_window(SharedShape *s) {
    auto state = ShapeState(pg_atomic_read_u32(&s->state));
    TimestampTz now = GetCurrentTimestamp();
    auto since = TimestampTz(pg_atomic_read_u64(&s->state_since));
    ShapeHistory h;
    h.state = state;
    h.uncached_mean_ms = double(pg_atomic_read_u64(&s->mean_ns)) * 1e-6;
    h.demotions = pg_atomic_read_u32(&s->demotions);
    h.seconds_in_state = double(now - since) / 1e6;
    ShapeWindow w = window_of(s);
    w.seconds = double(now - TimestampTz(pg_atomic_read_u64(&s->window_start))) / 1e6;
    AdmissionSettings settings = admission_settings();
    AdmissionRoom room{int(pg_atomic_read_u32(&header->admitted)) < guc_admission_max_admitted, true};
    AdmissionDecision d = decide(h, w, room, settings);
    // The memory of the admitted shapes' entries is a walk over the stats
    // table: read only where it decides (a shape admitted, or kept).
    if (d.window_done && (d.state == ShapeState::Admitted || state == ShapeState::Admitted)) {
        room.memory = admitted_bytes() < uint64(guc_cache_size_kb) * 1024 / 100 * uint64(guc_admission_memory_share);
        if (!room.memory) d = decide(h, w, room, settings);
    }
    if (!d.window_done) return false;
    start_window(s, now);
    pg_atomic_write_u64(&s->mean_ns, uint64(d.uncached_mean_ms * 1e6));
    if (d.saved_ms != 0) pg_atomic_fetch_add_u64(&s->saved_us, uint64(int64(d.saved_ms * 1e3)));
    if (d.reason != ShapeReason::None) {
        pg_atomic_write_u32(&s->reason, uint32(d.reason));
        keep_figures(s, d, w);
    }
    return enter_state(s, state, d.state, now);
}

}  // namespace

// A slot being claimed: its key is this until the slot is cleared and
// its texts written (a backend that finds it probes on).
constexpr uint64 kClaiming = UINT64_MAX;

// How far a lookup probes: past it a shape is not observed, so that a full
// table costs a planning a bounded lookup.
constexpr uint32 kMaxProbes = 32;

// A slot's key once its claim, if one is under way, is published: a claim
// clears the slot and copies two texts, raising nothing, so the wait is a
// few hundred instructions (bounded by PostgreSQL's spin delay, which
// reports a stuck claim as it reports a stuck spinlock). Waiting keeps one
// shape from taking two slots.
uint64 published_key(SharedShape *s) {
    uint64 k = pg_atomic_read_u64(&s->key);
    if (k != kClaiming) return k;
    SpinDelayStatus delay;
    init_local_spin_delay(&delay);
    while ((k = pg_atomic_read_u64(&s->key)) == kClaiming) perform_spin_delay(&delay);
    finish_spin_delay(&delay);
    return k;
}

ShapeSlot find_shape_slot(uint64 shape_id, bool create, const char *sample, int sample_len, uint64 query_id) {
    if (!header || header->capacity == 0 || shape_id == 0) return ShapeSlot{};
    uint64 key = key_of(shape_id, MyDatabaseId);
    if (key == kClaiming) key = 1;
    uint32 epoch = pg_atomic_read_u32(&header->epoch);
    uint32 n = header->capacity;
    uint32 probes = Min(n, kMaxProbes);
    for (uint32 probe = 0, i = uint32(key % n); probe < probes; probe++, i = (i + 1) % n) {
        SharedShape *s = &slots[i];
        uint64 k = published_key(s);
        if (k == key) return ShapeSlot{i, epoch};
        if (k != 0) continue;
        if (!create) return ShapeSlot{};
        uint64 expected = 0;
        if (!pg_atomic_compare_exchange_u64(&s->key, &expected, kClaiming)) {
            // Another claimed it meanwhile: for this shape, or another.
            if (published_key(s) == key) return ShapeSlot{i, epoch};
            continue;
        }
        // Claimed: cleared (a slot a reset freed may hold a late count),
        // its texts written, then published under its key.
        char text[kSampleLen];
        copy_whole_characters(text, kSampleLen, sample, sample_len);
        clear_slot(s);
        TimestampTz now = GetCurrentTimestamp();
        pg_atomic_write_u64(&s->state_since, uint64(now));
        pg_atomic_write_u64(&s->window_start, uint64(now));
        SpinLockAcquire(&s->text_lock);
        s->shape_id = shape_id;
        s->database = MyDatabaseId;
        s->role = GetUserId();
        s->query_id = query_id;
        memcpy(s->sample, text, kSampleLen);
        s->refusal[0] = '\0';
        SpinLockRelease(&s->text_lock);
        expected = kClaiming;
        pg_atomic_compare_exchange_u64(&s->key, &expected, key);
        return ShapeSlot{i, epoch};
    }
    return ShapeSlot{};
}

bool admitted_shape_serves(uint64 shape_id) {
    return guc_admission == kAdmissionAuto &&
           shape_state(find_shape_slot(shape_id, false, nullptr, 0, 0)) == ShapeState::Admitted;
}

ShapeState shape_state(ShapeSlot slot) {
    SharedShape *s = slot_of(slot);
    return s ? ShapeState(pg_atomic_read_u32(&s->state)) : ShapeState::Observing;
}

bool shape_checked(ShapeSlot slot) {
    SharedShape *s = slot_of(slot);
    return s && pg_atomic_read_u32(&s->checked) != 0;
}

void note_shape_checked(ShapeSlot slot) {
    if (SharedShape *s = slot_of(slot)) pg_atomic_write_u32(&s->checked, 1);
}

bool note_shape_execution(ShapeSlot slot, const ShapeExecution &e) {
    SharedShape *s = slot_of(slot);
    if (!s) return false;
    uint64 us = e.elapsed_ms > 0 ? uint64(e.elapsed_ms * 1e3) : 0;
    uint64 done;
    auto state = ShapeState(pg_atomic_read_u32(&s->state));
    if (e.served) {
        done = pg_atomic_add_fetch_u64(&s->served_calls, 1) - pg_atomic_read_u64(&s->base_served_calls);
        pg_atomic_fetch_add_u64(&s->served_time_us, us);
        if (e.computed) {
            pg_atomic_fetch_add_u64(&s->computed, 1);
            pg_atomic_fetch_add_u64(&s->computed_time_us, us);
        }
    } else {
        done = pg_atomic_add_fetch_u64(&s->calls, 1) - pg_atomic_read_u64(&s->base_calls);
        pg_atomic_fetch_add_u64(&s->time_us, us);
    }
    // A served execution of a shape no longer admitted (a plan kept
    // across its demotion) or the reverse counts, and decides nothing.
    if (e.served != (state == ShapeState::Admitted)) return false;
    // At each window's worth of executions (a served window that has not
    // lasted long enough is looked at again a window's worth later).
    uint64 need = window_calls(state, admission_settings());
    if (done < need || done % need != 0) return false;
    if (!pg_atomic_test_set_flag(&s->deciding)) return false;
    bool changed = decide_window(s);
    pg_atomic_clear_flag(&s->deciding);
    return changed;
}

bool note_shape_refused(ShapeSlot slot, const char *message, const char *hint, bool counts) {
    SharedShape *s = slot_of(slot);
    if (!s || !pg_atomic_test_set_flag(&s->deciding)) return false;
    auto state = ShapeState(pg_atomic_read_u32(&s->state));
    bool changed = false;
    if (state == ShapeState::Admitted) {
        char full[4 * kRefusalLen], text[kRefusalLen];
        snprintf(full, sizeof full, "%s%s%s", message, hint ? ". " : "", hint ? hint : "");
        copy_whole_characters(text, kRefusalLen, full, 0);
        SpinLockAcquire(&s->text_lock);
        memcpy(s->refusal, text, kRefusalLen);
        SpinLockRelease(&s->text_lock);
        pg_atomic_write_u32(&s->reason, uint32(ShapeReason::Refused));
        TimestampTz now = GetCurrentTimestamp();
        start_window(s, now);
        changed = enter_state(s, state, ShapeState::Refused, now, counts);
    }
    pg_atomic_clear_flag(&s->deciding);
    return changed;
}

void note_slow_relation(Oid relid) {
    if (!header) return;
    uint32 bit = slow_relation_bit(relid);
    pg_atomic_uint64 *word = &header->slow_relations[bit / 64];
    uint64 mask = UINT64CONST(1) << (bit % 64);
    // The backend that marks it has the plans over it made again (a
    // prepared statement planned before is observed from its next
    // planning on).
    if (!(pg_atomic_read_u64(word) & mask) && !(pg_atomic_fetch_or_u64(word, mask) & mask))
        send_relcache_invalidation(relid);
}

bool relation_seen_slow(Oid relid) {
    if (!header) return false;
    uint32 bit = slow_relation_bit(relid);
    return (pg_atomic_read_u64(&header->slow_relations[bit / 64]) & (UINT64CONST(1) << (bit % 64))) != 0;
}

bool admission_table(const RangeTblEntry *rte) {
    return rte->rtekind == RTE_RELATION && rte->relid >= FirstNormalObjectId &&
           (rte->relkind == RELKIND_RELATION || rte->relkind == RELKIND_PARTITIONED_TABLE ||
            rte->relkind == RELKIND_MATVIEW);
}

// Both counters only grow: their sum moves when either does.
uint64 admission_version() {
    return (header ? pg_atomic_read_u64(&header->version) : 0) + admission_setting_changes;
}

void reset_shapes(Oid statements_table) {
    if (!header) return;
    // A backend's slot numbers of the old epoch find nothing from now on.
    pg_atomic_fetch_add_u32(&header->epoch, 1);
    for (uint32 i = 0; i < header->capacity; i++) {
        SharedShape *s = &slots[i];
        if (published_key(s) == 0) continue;
        // A decider holds the flag for a few reads and writes, raising nothing.
        while (!pg_atomic_test_set_flag(&s->deciding)) {
            CHECK_FOR_INTERRUPTS();
            pg_spin_delay();
        }
        clear_slot(s);
        pg_atomic_write_u64(&s->key, 0);
        pg_atomic_clear_flag(&s->deciding);
    }
    // A slot number taken while the slots were freed finds nothing either.
    pg_atomic_fetch_add_u32(&header->epoch, 1);
    for (auto &word : header->slow_relations) pg_atomic_write_u64(&word, 0);
    pg_atomic_fetch_add_u64(&header->version, 1);
    // Plans made for admitted shapes are made again (this database's;
    // another's run their statements uncached until then).
    if (OidIsValid(statements_table)) send_relcache_invalidation(statements_table);
}

size_t shapes_shared_size() {
    return add_size(MAXALIGN(sizeof(ShapesHeader)), mul_size(sizeof(SharedShape), size_t(guc_admission_shapes)));
}

void shapes_attach(char *mem, bool initialize) {
    header = reinterpret_cast<ShapesHeader *>(mem);
    slots = reinterpret_cast<SharedShape *>(mem + MAXALIGN(sizeof(ShapesHeader)));
    if (!initialize) return;
    for (auto &word : header->slow_relations) pg_atomic_init_u64(&word, 0);
    pg_atomic_init_u32(&header->epoch, 1);
    pg_atomic_init_u32(&header->admitted, 0);
    pg_atomic_init_u64(&header->version, 0);
    header->capacity = uint32(guc_admission_shapes);
    for (int i = 0; i < guc_admission_shapes; i++) init_slot(&slots[i]);
}

void for_each_shape(Oid database, void (*fn)(const ShapeRow &row, void *arg), void *arg) {
    if (!header) return;
    for (uint32 i = 0; i < header->capacity; i++) {
        SharedShape *s = &slots[i];
        uint64 key = pg_atomic_read_u64(&s->key);
        if (key == 0 || key == kClaiming) continue;
        ShapeRow r{};
        SpinLockAcquire(&s->text_lock);
        r.shape_id = s->shape_id;
        r.database = s->database;
        r.role = s->role;
        r.query_id = s->query_id;
        memcpy(r.sample, s->sample, sizeof r.sample);
        memcpy(r.refusal, s->refusal, sizeof r.refusal);
        SpinLockRelease(&s->text_lock);
        if (r.database != database || r.shape_id == 0) continue;
        r.state = ShapeState(pg_atomic_read_u32(&s->state));
        r.reason = ShapeReason(pg_atomic_read_u32(&s->reason));
        r.demotions = pg_atomic_read_u32(&s->demotions);
        r.calls = pg_atomic_read_u64(&s->calls);
        r.served_calls = pg_atomic_read_u64(&s->served_calls);
        r.computed = pg_atomic_read_u64(&s->computed);
        r.time_ms = double(pg_atomic_read_u64(&s->time_us)) * 1e-3;
        r.mean_ms = double(pg_atomic_read_u64(&s->mean_ns)) * 1e-6;
        r.saved_ms = double(int64(pg_atomic_read_u64(&s->saved_us))) * 1e-3;
        for (int f = 0; f < 3; f++) r.reason_figures[f] = double_of(pg_atomic_read_u64(&s->figures[f]));
        r.state_since = TimestampTz(pg_atomic_read_u64(&s->state_since));
        fn(r, arg);
    }
}

}  // namespace pgmemo
