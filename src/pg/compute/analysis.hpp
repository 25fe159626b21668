// Query analysis: is this query cacheable, what does its result depend on,
// and which privilege checks must a hit repeat?
#pragma once

#include "pg_memo.hpp"
#include "compat.hpp"
#include "generations.hpp"

namespace pgmemo {

// Why a query may run but not be cached.
enum class Uncacheable {
    No,
    TriggersDisabled,  // a watched table's trigger is not enabled ALWAYS
    CatalogsChanging,  // catalog changes kept arriving while it was analyzed, or
                       // the search path changed since the call was keyed
    NotWatched,        // a table it reads is not watched (pg_memo.unwatched_tables = compute)
    ReadsUnnamed,      // its functions read relations its text does not name, or made a
                       // memo call: learned by this computation (learned_reads.hpp)
    StatementSnapshot, // a registered statement's snapshot no longer sees what a new
                       // one would (statement_snapshot.hpp): computed with it, not stored
};

// A scope an entry can depend on in place of every row of one table
// (docs/consistency.md, "Scopes"; found by scope_reads.hpp): the WHERE of
// a selection that reads the table holds col = v, col IN (...),
// col = ANY(v), arr @> v or v = ANY(arr) on a scope column. A statement
// that reads the table in several places has one for each.
struct ScopeRule {
    static constexpr int kMaxSources = 8;
    // Where a value comes from: a parameter (its number; an array of values
    // or one) or a constant, hashed when the statement was analyzed.
    struct Source {
        int16 paramid;    // 0: a constant; -n: the nth of Analysis::scope_values
        bool is_array;    // the parameter holds an array of the values
        Oid type;         // the parameter's type
        uint32 hash;      // a constant's
        Oid hashed_as;    // the type each value is hashed as: the column's, or
                          // another of its hash family (scope_value_hasher)
    };
    Oid relid = InvalidOid;  // InvalidOid: no scope
    AttrNumber attnum = 0;
    Oid column_type = InvalidOid;
    Oid collation = InvalidOid;
    bool needs_every_value = false;  // @>: a row in scope holds every value
    int nsources = 0;
    Source sources[kMaxSources];
};

// What a computed result depends on, and what a hit must re-check.
struct Analysis {
    DepStamp *deps;  // palloc'd, generations filled in by the miss path
    uint32_t ndeps;
    char *meta;  // privilege checks for hits (privileges.hpp)
    uint32_t meta_len;
    Uncacheable uncacheable;
    Oid *relids;  // the relations it reads (the text's, and learned ones), palloc'd
    uint32_t nrelids;
    Oid delta_relid;  // the table deltas can keep an entry for, or InvalidOid (compute/carry.hpp)
    // When the generations in deps were read (0 until then): every commit the
    // result misses became visible after it (EntryParts::stamped_at).
    TimestampTz stamped_at;
    // The committed state the result is as of, where a registered
    // statement's snapshot names it (EntryParts::snapshot_print); 0 if not.
    uint64_t snapshot_print;
    // The settings its expressions read, the policies of row level security
    // included (current_setting of a custom setting, session_user): their
    // names, sorted, each ending in '\0'. The key holds their values
    // (call.hpp, keyed_settings.hpp). nullptr with 0 when it reads none.
    char *settings;
    uint32_t settings_len;
    // The call's key did not hold exactly these settings (keyed_settings.hpp):
    // the result is stored under the key that does, and shared with nobody.
    bool settings_unkeyed;
    // A SQL function it calls (a policy's helper) reads relations in its
    // body: the body may read a scoped table outside the scope.
    bool bodies_read_relations;
    // An IMMUTABLE SQL function read through in a policy reads settings: a
    // plan may hold its call folded into a constant, one tenant's value, so
    // the statement is planned anew on every miss.
    bool plan_folds_settings;
    // Per statement, every read of one table (its stamps join deps per call).
    static constexpr int kMaxScopeRules = 4;
    int nscopes;
    ScopeRule scopes[kMaxScopeRules];
    // Values of scope rules that come from settings, as a policy's
    // conjunct compares them (tenant_id = current_setting('app.tenant_id')::int),
    // evaluated per call: expression trees, palloc'd.
    List *scope_values;
};

// Checks that query is one cacheable SELECT over watched tables (ERROR if
// not) and collects its dependencies and privilege checks. sql is the text
// query was parsed from (its literals are looked at by location).
// learned: the relations the statement's functions were seen to read
// (learned_reads.hpp), checked and depended on like the ones it names.
void analyze_query(Query *query, const char *sql, const Oid *search_path, int search_path_len,
                   const RelationPermission *learned, int nlearned, Analysis *out);

// Refuses (0A000) a system catalog, whose changes fire no triggers: no
// hint to watch it, which would fail.
void refuse_system_catalog(Oid relid);

// Refuses (ERROR) what analyze_query would refuse of relations learned
// just now: an unwatched table, a temporary one, a catalog, ...
void check_learned_reads(const RelationPermission *learned, int nlearned);

// Refuses anything but exactly one plain SELECT in the text (ERROR). With
// statement, sets it to the SELECT's own text (palloc'd): without the
// semicolon that may end it, or what follows that (white space, comments).
void check_single_select(const char *query_text, char **statement = nullptr);

// Whether a date/time input text names the clock: 'now', 'today',
// 'tomorrow' or 'yesterday' (as a word, in any case).
bool names_clock_time(const char *input);

// Whether values of type hold date/time values (through domains, arrays,
// ranges and composite types).
bool type_holds_clock_values(Oid type);

}  // namespace pgmemo
