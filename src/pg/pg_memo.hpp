// The PostgreSQL glue of pg_memo: what its files share.
//
// C/C++ boundary rules for every file under src/pg:
//   - PostgreSQL headers are included inside extern "C" only; the core
//     (src/core) never includes them.
//   - The glue is compiled with -fno-exceptions (Makefile): it throws and
//     catches nothing, and the compiler refuses code that would. The core
//     functions it calls are noexcept, which here means "no C++ exception":
//     one implemented over PostgreSQL (a StoreLocks lock, say) can still
//     raise an ERROR. The one place that needs C++ exceptions (Boost laying
//     out the arena) is in the core and catches them itself.
//   - PostgreSQL ERRORs longjmp. Glue functions therefore hold no C++ objects
//     with non-trivial destructors in frames an ERROR can unwind.
//   - Locks are LWLocks, released by PostgreSQL on ERROR and FATAL.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}


namespace pgmemo {

// The extension's schema: fixed (schema = memo, relocatable = false in the
// control file); the SQL scripts spell it @extschema@.
constexpr const char *kExtensionSchema = "memo";

// Appends to an array kept in TopMemoryContext (it outlives transactions and
// errors), doubling it when it is full.
template <typename T, typename Count>
void append_kept(T **items, Count *count, Count *capacity, T item) {
    if (*count == *capacity) {
        Count grown = *capacity ? *capacity * 2 : 16;
        *items = static_cast<T *>(*items ? repalloc(*items, grown * sizeof(T))
                                         : MemoryContextAlloc(TopMemoryContext, grown * sizeof(T)));
        *capacity = grown;
    }
    (*items)[(*count)++] = item;
}

}  // namespace pgmemo
