// Which generation counter stands for what: the one mapping from an object
// to its counter's slot (docs/consistency.md, "Generations"). Writers mark
// these slots, readers' entries depend on them; both must compute them
// here, the same way.
#pragma once

#include "pg_memo.hpp"
#include "generations.hpp"

extern "C" {
#include "miscadmin.h"
#include "common/hashfn.h"
}

namespace pgmemo {

// A relation's rows and its definition (what a write bumps).
inline uint32_t relation_slot(Oid relid) {
    return Generations::slot_of(MyDatabaseId, GenerationKind::Relation, relid);
}

// A relation's definition only (DDL; a query that reads no rows of it).
inline uint32_t definition_slot(Oid relid) {
    return Generations::slot_of(MyDatabaseId, GenerationKind::Definition, relid);
}

// What the names in a schema resolve to.
inline uint32_t namespace_slot(Oid nspid) {
    return Generations::slot_of(MyDatabaseId, GenerationKind::Namespace, nspid);
}

// The database's functions, operators, casts, types (what a query's
// expressions resolve to and run).
inline uint32_t routines_slot() { return Generations::slot_of(MyDatabaseId, GenerationKind::Routines, 0); }

// What a reg* value ('name'::regclass, ::regtype) resolves to.
inline uint32_t names_slot() { return Generations::slot_of(MyDatabaseId, GenerationKind::Names, 0); }

// Roles and memberships, cluster-wide.
inline uint32_t roles_slot() { return Generations::slot_of(InvalidOid, GenerationKind::Roles, 0); }

// The rows of relid whose scope column attnum holds the value whose hash is
// value_hash (invalidate/scope_columns.hpp). A collision only shares a counter.
inline uint32_t scope_slot(Oid relid, AttrNumber attnum, uint32_t value_hash) {
    uint32_t object = hash_combine(hash_combine(uint32_t(relid), uint32_t(attnum)), value_hash);
    return Generations::slot_of(MyDatabaseId, GenerationKind::Scope, object);
}

// Every scope of relid: for the writes that cannot name theirs.
inline uint32_t any_scope_slot(Oid relid) {
    return Generations::slot_of(MyDatabaseId, GenerationKind::AnyScope, relid);
}

// A standby's replay of commits without records of their own.
inline uint32_t standby_replay_slot() {
    return Generations::slot_of(InvalidOid, GenerationKind::StandbyReplay, 0);
}

}  // namespace pgmemo
