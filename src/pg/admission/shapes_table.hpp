// The shapes automatic admission observes (pg_memo.admission), in a
// bounded shared-memory table of pg_memo.admission_shapes slots, one per
// (database, statement shape): what its executions cost, served or not,
// and the state the policy (src/core/admission_policy.hpp) gives it.
//
// Locking: none on any path a statement takes. A slot is claimed by a
// compare-and-swap of its key and never given back (until
// memo.admission_reset(), which bumps the table's epoch: a backend's slot
// number taken before it is looked up again). Executions are counted with
// atomic adds. The end of a window is decided by the one backend that
// wins the slot's `deciding` flag with a test-and-set; another that finds
// it taken goes on without deciding (the execution that ends the next
// window decides). The
// texts (a sample statement, a refusal's message) are written and read
// under the slot's spinlock, taken only where a slot is claimed or
// refused and by memo.admission(), never by a served or observed
// execution.
#pragma once

#include "pg_memo.hpp"
#include "admission_policy.hpp"

namespace pgmemo {

constexpr uint32 kNoShapeSlot = UINT32_MAX;

// The cache names of admitted shapes begin so ("auto:" and the shape's
// identifier in hexadecimal).
constexpr const char *kAdmittedNamePrefix = "auto:";

// A slot number as of the table's epoch.
struct ShapeSlot {
    uint32 index = kNoShapeSlot;
    uint32 epoch = 0;
};

// The slot of this database's shape, claimed if create and there is room
// (a shape that finds no free slot within its probes is not observed).
// sample: the statement's text as its client sent it, sample_len bytes of
// it (0: up to its end), kept, cut, for memo.admission when the slot is
// claimed, and shown only to the role that sent it and those who may read
// all statistics.
ShapeSlot find_shape_slot(uint64 shape_id, bool create, const char *sample, int sample_len, uint64 query_id);

// Whether an admitted shape is served in this session: pg_memo.admission
// is auto and the shape is still admitted (a plan made for it outlives
// both).
bool admitted_shape_serves(uint64 shape_id);

// The slot's state, or Observing for a slot of an older epoch.
ShapeState shape_state(ShapeSlot slot);

// Whether a refused or admitted shape under pg_memo.admission = advise was
// checked already (the planner hook checks it once).
bool shape_checked(ShapeSlot slot);
void note_shape_checked(ShapeSlot slot);

// One execution of a shape, timed by the executor hooks.
struct ShapeExecution {
    bool served;     // through the pg_memo node
    bool computed;   // served, and computed (a miss)
    double elapsed_ms;
};

// Counts an execution, and at a window's end decides. True when the
// decision changed whether the shape is served (the caller makes plans
// kept for it be made again).
bool note_shape_execution(ShapeSlot slot, const ShapeExecution &execution);

// The planner hook's check refused an admitted shape: Refused, with
// message (and hint, may be null) as its reason, counted as a demotion
// unless counts is false (a DBA's block). True when it was admitted.
bool note_shape_refused(ShapeSlot slot, const char *message, const char *hint, bool counts = true);

// A top-level SELECT over relid took at least pg_memo.admission_min_cost:
// statements over relid are observed from now on (until
// memo.admission_reset()). Statements over relations no such SELECT read
// are not, so that a workload of cheap statements computes no shapes.
void note_slow_relation(Oid relid);
bool relation_seen_slow(Oid relid);

// Whether a range table entry is a table automatic admission considers:
// a table, a partitioned table or a materialized view, not a system
// catalog.
bool admission_table(const RangeTblEntry *rte);

// Moves whenever a shape's serving state changes: a plan kept for a
// statement holds whether its shape was served as of a version.
uint64 admission_version();

// Forgets every shape (memo.admission_reset()), and has this database's
// plans made again (through statements_table, memo.statements).
void reset_shapes(Oid statements_table);

// The shared region part (hooks/module.cpp).
size_t shapes_shared_size();
void shapes_attach(char *mem, bool initialize);

// What memo.admission shows of one slot, copied under its spinlock.
struct ShapeRow {
    uint64 shape_id;
    Oid database;
    Oid role;  // the role that sent the sample
    uint64 query_id;
    ShapeState state;
    ShapeReason reason;
    uint32 demotions;
    uint64 calls, served_calls, computed;
    double time_ms, mean_ms, saved_ms;
    double reason_figures[3];
    TimestampTz state_since;
    char sample[256];
    char refusal[256];
};

// Calls fn for each claimed slot of database.
void for_each_shape(Oid database, void (*fn)(const ShapeRow &row, void *arg), void *arg);

}  // namespace pgmemo
