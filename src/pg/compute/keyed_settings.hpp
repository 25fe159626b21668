// The settings a key holds: those a statement's expressions read, its row
// level security policies' included (current_setting('app.tenant_id'),
// session_user). Their values join the key, so that two tenants sharing a
// role never share an entry, a flight or a remembered error
// (docs/consistency.md, "Settings in the key").
//
// Which settings a statement reads is known only once it is analyzed, on
// the miss path, while the key is needed before the lookup. This backend
// remembers, per statement, what its last analysis read, and keys calls
// with that. A call keyed with other settings than its computation's
// analysis reads (the first since the backend learned, or a policy changed
// since) stores nothing, remembers no error and shares nothing with a
// flight's waiters. The entries found are always right: an entry is stored
// only under a key that holds what its own analysis read, with the values
// its computation ran with, and the policies, functions and roles that
// analysis went by are among its dependencies.
#pragma once

#include "call.hpp"
#include "compute/analysis.hpp"

namespace pgmemo {

// The call's key, holding the values of the settings its statement read
// when this backend last analyzed it (Encoded::settings_known false if it
// has not since any statement read settings).
Encoded key_with_settings(const Call &call);

// Notes what the statement (statement_key: encode_statement's) read, from
// its analysis, for the next calls' keys.
void learn_settings(const Encoded &statement_key, const Analysis &analysis);

// Whether key holds exactly the settings the analysis says its statement
// reads: else its result may not be stored under key, nor shared.
bool key_holds_settings_of(const Encoded &key, const Analysis &analysis);

}  // namespace pgmemo
