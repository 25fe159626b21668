// Catalog changes: DDL seen while a transaction runs (utility statements,
// the object access hook) and marked from its invalidation messages at
// pre-commit (docs/consistency.md, "DDL").
#pragma once

#include "pg_memo.hpp"
#include "function_ref.hpp"

extern "C" {
#include "catalog/objectaccess.h"
#include "tcop/utility.h"
}

namespace pgmemo {

// The object access hook (installed by _PG_init) and the one it replaced,
// called first.
extern object_access_hook_type object_access_before_memo;
void note_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg);

// From the utility hub (hooks/utility_events.cpp), for every utility
// statement: one that can change the catalogs makes its transaction a
// bypass from here on.
void note_utility_statement(Node *stmt);

// From the utility hub: runs the statement (run), forgetting a dropped
// database's entries after DROP DATABASE, and keeping the marks of a
// top-level statement that commits in steps (CREATE INDEX CONCURRENTLY,
// ...) for each of its steps.
void run_utility_statement(Node *stmt, ProcessUtilityContext context, FnRef<void()> run);

// This transaction ran DDL (any utility statement that can change the
// catalogs: ALTER TABLE, GRANT, CREATE CAST, ...) or created, renamed or
// moved a relation or type: until it ends, its queries may mean something
// no entry was computed for, and its uncommitted catalog state must not
// reach the cache, so it uses no cached result.
bool transaction_changed_catalogs();

// Marks what the committing (or preparing) transaction's DDL changed, from
// its invalidation messages and what the hooks remembered. Returns whether
// it dropped relations (whose entries can never be hit again).
bool mark_catalog_changes();

// Forgets what the hooks remembered: the transaction ended.
void forget_catalog_changes();

// The schemas the parser looked up by a qualified name since the last
// start_schema_lookups(), until stop_schema_lookups() (an error in between
// stops it at the end of the (sub)transaction).
void start_schema_lookups();
void stop_schema_lookups();
const Oid *explicit_namespaces(int *n);

// A subtransaction aborted (the transaction-event hub, transaction_events.cpp):
// schema lookups an error interrupted stop.
void catalog_changes_subtransaction_aborted();

}  // namespace pgmemo
