// Scope columns (docs/consistency.md, "Scopes"): the columns of a table
// watched with deltas whose values name the scopes an entry can depend on,
// in place of every row of the table.
//
// memo.watch(rel, deltas => true, scope_columns => ...) stores them as the
// arguments of the table's three delta triggers, as attribute numbers. So a
// writer reads them from the trigger that fires for its statement and a
// reader from the relcache: both from the same catalog rows, which change
// only by DDL on the table (a lock that waits for every writer, and a bump
// of its Definition counter).
#pragma once

#include "pg_memo.hpp"

extern "C" {
#include "commands/trigger.h"
#include "fmgr.h"
}

namespace pgmemo {

constexpr int kMaxScopeColumns = 8;

struct ScopeColumns {
    int count = 0;
    AttrNumber attnums[kMaxScopeColumns];

    bool contains(AttrNumber attnum) const {
        for (int i = 0; i < count; i++)
            if (attnums[i] == attnum) return true;
        return false;
    }
};

// One delta trigger's arguments, or none if they are not attribute numbers.
ScopeColumns scope_columns_of_trigger(const Trigger &trigger);

// The table's scope columns: those of its delta triggers, when the three
// (INSERT, UPDATE, DELETE) name the same columns; otherwise none.
ScopeColumns scope_columns_of(Relation rel);

// Whether a writer must count rel as having scope columns: cheap (no
// catalog access: a statement's writer asks), and true whenever
// scope_columns_of could find some (a trigger of a delta trigger's name
// with arguments).
bool may_have_scope_columns(Relation rel);

// How a scope column's values hash: with the default hash function of its
// type (of an array's element type), under the column's collation, which
// agrees with the type's default equality (=, and the elements' in @>).
struct ScopeHasher {
    Oid value_type = InvalidOid;  // the column's type, or its element type
    bool is_array = false;
    Oid collation = InvalidOid;
    Oid equality = InvalidOid;  // the value type's default =
    FmgrInfo *hash = nullptr;  // the type cache's: lives as long as the backend
    int16 elem_len = 0;
    bool elem_byval = false;
    char elem_align = 'i';
};

// False when the column's type has no default hash function consistent
// with its default equality (then it cannot scope).
bool scope_hasher_for(Oid column_type, Oid collation, ScopeHasher *out);

// The hash of one (non-null) value of value_type.
uint32 hash_scope_value(const ScopeHasher &h, Datum value);

// A hasher for values of type value_type compared with the column by the
// equality operator opno (the column on the left when column_left): the
// column's own hasher when the types are the same; otherwise one for
// value_type, when opno is a cross-type equality of the hash operator
// family of the column's hash function (an int4 against a bigint column),
// whose functions hash equal values of its types alike (PostgreSQL's rule
// for a hash family). False when the value cannot scope.
bool scope_value_hasher(const ScopeHasher &column, Oid opno, bool column_left, Oid value_type, ScopeHasher *out);

// The column's hasher made for values of value_type with that type's hash
// function, for a call's values once scope_value_hasher accepted the type
// when the statement was analyzed.
bool scope_hasher_as(const ScopeHasher &column, Oid value_type, ScopeHasher *out);

// Hashes of values, palloc'd as they grow.
struct ScopeHashes {
    uint32 *values = nullptr;
    int count = 0;
    int capacity = 0;
    void add(uint32 hash);
};

// Adds the hash of every value a column's datum holds: itself, or each
// non-null element of an array. A null holds none.
void add_scope_values(const ScopeHasher &h, Datum datum, bool isnull, ScopeHashes *out);

// The number of distinct values of a table's scope columns one transaction
// marks, at most: past it, the write counts as one that cannot name its
// scopes (any_scope_slot).
constexpr int kMaxScopesPerTable = 1024;

}  // namespace pgmemo
