// The settings a key holds: those a statement's expressions read, its row
// level security policies' included (current_setting('app.tenant_id'),
// session_user). Their values join the key, so that two tenants sharing a
// role never share an entry, a flight or a remembered error
// (docs/consistency.md, "Settings in the key: what each backend knows").
//
// Which settings a statement reads is known only once it is analyzed, on
// the miss path, while the key is needed before the lookup. This backend
// remembers, for the statements that read settings, what its last analysis
// read, and keys their calls with that; other statements (and those it
// forgot) are keyed without settings. A call keyed with other settings
// than its computation's analysis reads (the first in this backend, or a
// policy changed since) stores its result under the key that does hold
// them, remembers no error and shares nothing with a flight's waiters
// (compute.hpp, computed_with_unkeyed_settings). So an entry is stored only
// under a key that holds what its own analysis read, with the values its
// computation ran with; the policies, functions and roles that analysis
// went by are among its dependencies.
#pragma once

#include "call.hpp"
#include "compute/analysis.hpp"

namespace pgmemo {

// The call's key, holding the values of the settings its statement read
// when this backend last analyzed it.
Encoded key_with_settings(const Call &call);

// Whether this backend has not analyzed the call's statement (or forgot
// it), once some backend met a statement that reads settings: a miss then
// learns its settings first (compute.hpp, learn_statement_settings), so
// that a new backend's first call finds the tenant's entry instead of
// computing it.
bool settings_unknown(const Call &call);

// The flag in shared memory that a statement reading settings was met
// (a part of pg_memo's region: shared_state.hpp).
size_t keyed_settings_shared_size();
void keyed_settings_attach(char *mem, bool initialize);

// Notes what the statement (statement_key: encode_statement's) read, from
// its analysis, for the next calls' keys.
void learn_settings(const Encoded &statement_key, const Analysis &analysis);

// Whether key holds exactly the settings the analysis says its statement
// reads: else its result may not be stored under key, nor shared.
bool key_holds_settings_of(const Encoded &key, const Analysis &analysis);

}  // namespace pgmemo
