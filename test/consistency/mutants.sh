#!/usr/bin/env bash
# Do the tests catch real bugs? Builds pg_memo with one deliberate bug at a
# time (a mutant: one rule of docs/consistency.md broken), installs it into
# a private copy of the PostgreSQL installation under /tmp (the system's
# installation is not touched), and runs the test that the rule→test table
# cites for that rule: the randomized checker (test/consistency/checker.pl)
# or a TAP or pg_regress suite. Every mutant must be caught (the checker
# finds mismatches, the suite fails); the unmodified build must pass every
# one of those tests. Exits 1 otherwise.
#
#   test/consistency/mutants.sh [READS [SEED_ROWS]]  # as root; about 75 minutes
#   MUTANTS="delta_twice replay_no_bump" test/consistency/mutants.sh   # some
#   test/consistency/mutants.sh --check   # CI: every mutation still applies to
#                                         # the working tree and compiles (2 min)
#
# A run builds the checkout's HEAD commit (uncommitted changes are left out,
# so that its figures belong to a commit); --check reads the working tree.
# A mutation that no longer applies fails before anything is built.
#
# READS (20000) checked reads per checker run, over SEED_ROWS (20000)
# employees: enough to make a directory count slow enough (a few ms) for
# concurrent misses to share flights often; with 2,000 the waiter mutant is
# caught only in some runs.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHECK_ONLY=0
if [ "${1:-}" = --check ]; then CHECK_ONLY=1; shift; fi
READS=${1:-20000}
SEED_ROWS=${2:-20000}

# name | subsystem | the test that must fail | the rule it breaks (consistency.md)
MUTANT_TABLE='
snapshot_first|commit protocol|checker|generations read after the snapshot ("Generations before the snapshot")
caller_snapshot|commit protocol|checker|the calling statement'"'"'s snapshot ("A new snapshot, never the caller'"'"'s")
bump_at_precommit|commit protocol|checker|counters bumped before the commit is visible ("Commit")
waiter_no_recheck|flights|checker --no-deltas|a flight'"'"'s waiter takes the result without checking the generations ("Flights")
delta_twice|deltas|checker|every delta record applied twice ("Deltas")
delta_skipped|deltas|checker|the oldest record of a carry left out ("Deltas")
delta_aborted|deltas|checker|rows captured in a rolled-back savepoint published ("Deltas")
names_by_tables_only|catalog changes|tap test/t/008_adversarial_probes.pl|a sequence or an index created, renamed or dropped marks no name ("Name resolution")
learned_ignored|functions that read tables|tap test/t/008_adversarial_probes.pl|reads the query text does not name are not noticed ("Functions that read tables")
hit_unchecked|privileges|regress security|a hit served without re-checking the caller'"'"'s privileges ("Security")
error_unchecked|older answers|tap test/t/008_adversarial_probes.pl|a remembered error raised without the privilege checks of a hit ("pg_memo.error_ttl: remembered errors")
stale_unbounded|older answers|tap test/t/012_older_answers.pl|an older answer served past pg_memo.max_staleness ("pg_memo.max_staleness: serve while one caller recomputes")
restore_moved|warm restart|tap test/t/011_durability_warm_restart.pl|a saved cache restored after the server ran past the shutdown it was saved at ("Warm restart")
commit_prepared_silent|two-phase commit|tap test/t/014_durability_two_phase.pl|COMMIT PREPARED bumps no counter ("Two-phase commit")
replay_no_bump|standby records|tap test/t/013_durability_standby_records.pl|a standby'"'"'s replay of a commit bumps no counter ("Hot standby")
replay_no_bump_statements|standby records|tap test/t/027_registered_standby_probes.pl|the same, judged through registered statements on the standbys ("Hot standby")
statement_params_unkeyed|registered statements|regress registered|a registered statement keyed without its parameters ("Registered statements")
statement_session_options|registered statements|regress registered|a session'"'"'s pg_memo.max_staleness reaches a registered statement ("Registered statements")
kept_plan_outlives_ddl|registered statements|regress registered|a kept plan used after a catalog change to what it reads ("Registered statements")
scope_new_rows_only|scopes|checker|a write bumps the scopes of its new rows only, not of the rows it replaced ("Scopes")
scope_bumped_at_capture|scopes|checker|a write'"'"'s scope counters bumped when its rows are captured, before its commit is visible ("Scopes")
scope_column_unseen|scopes|regress scopes|a writer marks its first scope column only, though readers depend on all ("Scopes")
own_entries_trusted|functions that read tables|regress scopes|a table the text names counts as read only by the text, though a function reads its other scopes ("Functions that read tables")
statement_snapshot_ignored|registered statements|tap test/t/019_registered_probes.pl|a registered statement served what holds now, though its portal'"'"'s snapshot is older ("Which snapshot each path uses")
statement_computed_now|registered statements|regress registered|a registered statement computed with a new snapshot, not its portal'"'"'s ("Which snapshot each path uses")
snapshot_print_loose|registered statements|tap test/t/026_registered_entries_as_of_snapshot.pl|a snapshot'"'"'s print leaves out its xmax: an entry answers a snapshot of another state ("Entries as of their snapshot")
cursor_answers_now|registered statements|tap test/t/026_registered_entries_as_of_snapshot.pl|a cursor'"'"'s portal answers as of the call, as a simple Query'"'"'s does ("Which snapshot each path uses")
settings_unkeyed|row level security|tap test/t/029_tenants_leak_checker.pl|the key holds no setting a policy reads: tenants of one role share entries ("Settings in the key")
policies_unchecked|row level security|regress row_security|a hit does not check that row level security applies as it did ("Row level security")
policy_scope_constant|row level security|tap test/t/029_tenants_leak_checker.pl|a policy'"'"'s scope value hashed as the first tenant'"'"'s, whatever the caller'"'"'s settings ("Settings in the key")
'
field() { awk -F'|' -v n="$2" -v f="$1" '$1 == n { print $f }' <<<"$MUTANT_TABLE"; }
ALL=$(awk -F'|' 'NF > 1 { print $1 }' <<<"$MUTANT_TABLE" | xargs)

WORK=$(mktemp -d /tmp/pgm_mutants.XXXXXX)
chmod 755 "$WORK"

# Applies a Perl substitution to a file; fails loudly if it changed nothing.
mutate() {  # file, perl expression
  perl -0pi -e "\$n = ($2); END { exit(\$n ? 0 : 1) }" "$1" ||
    { echo "FAIL: mutation did not apply to ${1#"$tree"/}: $2" >&2; return 1; }
  touched+=("${1#"$tree"/}")
}

none() { :; }
snapshot_first() {
  mutate "$1/src/pg/compute/compute.cpp" \
    's/(\n\s*read_generations\(analysis\);)(.*?int rc = execute_observed\(q, snapshot, receiver_dest\(receiver\), &reads\);)/$2$1/s'
}
caller_snapshot() {
  mutate "$1/src/pg/compute/compute.cpp" 's/options\.read_only = snapshot != InvalidSnapshot;/options.read_only = true;/' &&
  mutate "$1/src/pg/compute/compute.cpp" 's/call\.as_of \? call\.as_of : GetTransactionSnapshot\(\)/call.as_of ? call.as_of : GetActiveSnapshot()/'
}
bump_at_precommit() {
  mutate "$1/src/pg/hooks/transaction_events.cpp" \
    's/(\n(\s*)announce_commit\(\);\n)(\s*)break;/$1$2commit_is_visible();\n$2publish_visible_commit();\n$3break;/'
}
waiter_no_recheck() {
  mutate "$1/src/core/store.cpp" \
    's/(LookupStatus Store::read_pinned\(.*?)\n\s*switch \(stamps\) \{.*?\n\s*\}\n/$1\n/s'
}
delta_twice() {
  mutate "$1/src/pg/deltas/delta_evaluate.cpp" 's/(\*records = lappend\(\*records, copies\[i\]\);)/{ $1 $1 }/'
}
delta_skipped() {
  mutate "$1/src/pg/deltas/delta_evaluate.cpp" 's/for \(uint32_t j = 0; j < n && complete; j\+\+\) \{/for (uint32_t j = 0; j + 1 < n \&\& complete; j++) {/'
}
delta_aborted() {
  mutate "$1/src/pg/invalidate/delta_capture.cpp" 's/(void forget_rows_captured_in\(SubTransactionId subid\) \{\n)/$1    return;\n/'
}
names_by_tables_only() {
  mutate "$1/src/pg/invalidate/catalog_changes.cpp" \
    's/(void note_relation_change\(ObjectAccessType access, Oid relid, int sub_id, void \*arg\) \{\n)/$1    if (get_rel_relkind(relid) == RELKIND_SEQUENCE || get_rel_relkind(relid) == RELKIND_INDEX) return;\n/'
}
learned_ignored() {
  mutate "$1/src/pg/compute/compute.cpp" 's/(\n\s*)note_unnamed_reads\(call, q, reads, analysis\);/$1(void)reads;/'
}
hit_unchecked() {
  mutate "$1/src/pg/serve/memo_functions.cpp" \
    's/status == LookupStatus::Hit && privileges_still_hold\((\w+\.)?sink\.meta, (\w+\.)?sink\.meta_len\)/status == LookupStatus::Hit/g'
}
error_unchecked() {
  mutate "$1/src/pg/compute/remembered_errors.cpp" \
    's/\n\s*if \(!privileges_still_hold\(sink\.meta, sink\.meta_len\)\) return;//'
}
stale_unbounded() {
  mutate "$1/src/pg/serve/older_answers.cpp" \
    's/return older\.present && bound_ms > 0 && GetCurrentTimestamp\(\) - older\.invalidated_after <= Micros\(bound_ms\) \* 1000;/return older.present \&\& bound_ms > 0;/'
}
restore_moved() {
  mutate "$1/src/core/saved_cache.cpp" \
    's/\n\s*if \(saved\.checkpoint_lsn != now\.checkpoint_lsn \|\| saved\.timeline != now\.timeline\)\n\s*return Refusal::CheckpointMoved;\n\s*if \(saved\.control_fingerprint != now\.control_fingerprint\) return Refusal::ControlFileChanged;//'
}
commit_prepared_silent() {
  mutate "$1/src/pg/durability/two_phase.cpp" 's/\n\s*for \(uint32_t i = 0; i < nslots; i\+\+\) sh\.gens\.bump\(slots\[i\], began_at\);//'
}
statement_params_unkeyed() {
  mutate "$1/src/pg/call.cpp" \
    's/int nparams = with_name_and_params \? call\.nparams : 0;/int nparams = with_name_and_params \&\& !call.param_types ? call.nparams : 0;/'
}
statement_session_options() {
  mutate "$1/src/pg/serve/memo_functions.cpp" \
    's/\n\s*guc_max_staleness_ms = options\.max_staleness_ms;\n\s*guc_stale_on_error_ms = options\.stale_on_error_ms;\n\s*guc_error_ttl_ms = options\.error_ttl_ms;/\n    (void)options;/'
}
kept_plan_outlives_ddl() {
  mutate "$1/src/pg/registered/statement_plans.cpp" \
    's/return k\.invalidations == SharedInvalidMessageCounter && k\.registrations == registry_version\(\) &&/return k.registrations == registry_version() \&\&/'
}
scope_new_rows_only() {
  mutate "$1/src/pg/invalidate/delta_capture.cpp" 's/\n\s*mark_row_scopes\(t, rel, \*trigdata->tg_trigger, old_copies\);//'
}
scope_bumped_at_capture() {
  mutate "$1/src/pg/invalidate/delta_capture.cpp" \
    's/mark_rows_written\(scope_slot\(t->relid, attnum, hashes\.values\[i\]\)\);/shared_state().gens.bump(scope_slot(t->relid, attnum, hashes.values[i]), 0);/'
}
scope_column_unseen() {
  mutate "$1/src/pg/invalidate/delta_capture.cpp" 's/for \(int c = 0; c < columns\.count && !t->any_scope; c\+\+\)/for (int c = 0; c < 1 \&\& c < columns.count \&\& !t->any_scope; c++)/'
}
own_entries_trusted() {
  mutate "$1/src/pg/compute/learned_reads.cpp" 's/bool beyond = origins->elsewhere \|\| /bool beyond = !text.names_it \&\& /'
}
statement_snapshot_ignored() {
  mutate "$1/src/pg/compute/statement_snapshot.hpp" 's/return call\.as_of == InvalidSnapshot \|\| sees_what_now_sees\(call\.as_of\);/return true;/'
}
settings_unkeyed() {
  mutate "$1/src/pg/compute/keyed_settings.cpp" 's/return r \? encode_call\(call, r->settings, r->settings_len\) : encode_call\(call\);/return (void)r, encode_call(call);/' &&
  mutate "$1/src/pg/compute/keyed_settings.cpp" 's/return key\.settings_len == analysis\.settings_len &&/return true || (key.settings_len == analysis.settings_len) ||/'
}
policies_unchecked() {
  mutate "$1/src/pg/privileges.cpp" 's/return applies == \(\(item\.required_perms & kPoliciesApplied\) != 0\) && \(!applies \|\| row_security\);/return (void)applies, true;/'
}
policy_scope_constant() {
  mutate "$1/src/pg/compute/scope_reads.cpp" 's/add_scope_values\(h, value, isnull, hashes\);/static Datum first = value; add_scope_values(h, first, isnull, hashes);/'
}
statement_computed_now() {
  mutate "$1/src/pg/compute/compute.cpp" 's/Snapshot snapshot = call\.as_of;/Snapshot snapshot = InvalidSnapshot;/'
}
snapshot_print_loose() {
  mutate "$1/src/pg/compute/statement_snapshot.cpp" 's/return \(epoch << 32\) \| snapshot->xmax;/return epoch + 1;/'
}
cursor_answers_now() {
  mutate "$1/src/pg/registered/memo_scan_exec.cpp" 's/bool started_by_this_run = portal && !portal->visible && /bool started_by_this_run = portal \&\& /'
}
replay_no_bump_statements() { replay_no_bump "$@"; }
replay_no_bump() {
  mutate "$1/src/pg/durability/wal_records.cpp" 's/if \(committed\)(\n\s*for \(uint32_t s = 0; s < p\.nslots; s\+\+\) sh\.gens\.bump)/if ((false) \&\& committed)$1/'
}

# A copy of the sources: the commit HEAD was at the start, for a run (later
# commits do not reach it); the working tree for --check.
REV=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || true)
copy_sources() {  # destination
  mkdir -p "$1"
  if [ "$CHECK_ONLY" -eq 0 ] && [ -n "$REV" ]; then
    git -C "$SRC" archive "$REV" | tar -C "$1" -xf -
  else
    tar -C "$SRC" --exclude=./.git --exclude=./build --exclude='tmp_check*' --exclude=results \
        --exclude='*.o' --exclude='*.bc' --exclude='*.so' -cf - . | tar -C "$1" -xf -
  fi
}

# --check: each mutation applies to a fresh copy, and the files it touched
# still compile.
if [ "$CHECK_ONLY" -eq 1 ]; then
  passed=0 failed=0
  for m in ${MUTANTS:-$ALL}; do
    tree="$WORK/$m" touched=()
    copy_sources "$tree"
    if ! "$m" "$tree"; then failed=$((failed + 1)); continue; fi
    objs=$(printf '%s\n' "${touched[@]}" | sort -u | sed 's/\.cpp$/.o/' | xargs)
    if make -C "$tree" $objs >"$tree/build.log" 2>&1; then
      echo "ok - mutant $m applies and compiles ($objs)"
      passed=$((passed + 1))
    else
      tail -20 "$tree/build.log"
      echo "FAIL: mutant $m does not compile"
      failed=$((failed + 1))
    fi
  done
  rm -rf "$WORK"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

# Every mutation applies, and every test it is judged by exists, before
# anything is built.
for m in ${MUTANTS:-$ALL}; do
  [ -n "$(field 1 "$m")" ] || { echo "unknown mutant $m (known: $ALL)" >&2; exit 1; }
  read -r kind suite _ <<<"$(field 3 "$m")"
  case "$kind" in
    checker) ;;
    tap) [ -f "$SRC/$suite" ] || { echo "FAIL: mutant $m: no TAP file $suite" >&2; exit 1; } ;;
    regress) [ -f "$SRC/sql/$suite.sql" ] || { echo "FAIL: mutant $m: no pg_regress suite $suite" >&2; exit 1; } ;;
    *) echo "FAIL: mutant $m: unknown kind of test $kind" >&2; exit 1 ;;
  esac
  tree="$WORK/probe" touched=()
  copy_sources "$tree"
  "$m" "$tree" || exit 1
  rm -rf "$tree"
done

BINDIR=$(pg_config --bindir)
SHAREDIR=$(pg_config --sharedir)
LIBDIR=$(pg_config --pkglibdir)
# A relocated copy of the installation: PostgreSQL finds its share and lib
# directories (and PGXS) relative to its binaries.
PREFIX="$WORK/pg"
mkdir -p "$PREFIX$(dirname "$BINDIR")" "$PREFIX$(dirname "$SHAREDIR")"
cp -a "$(dirname "$BINDIR")/." "$PREFIX$(dirname "$BINDIR")/"
cp -a "$SHAREDIR" "$PREFIX$(dirname "$SHAREDIR")/"
[ "$LIBDIR" = "$(dirname "$BINDIR")/lib" ] || { echo "unexpected layout: $LIBDIR" >&2; exit 1; }

build_into_prefix() {  # tree
  make -C "$1" clean >/dev/null 2>&1 || true
  make -C "$1" -j2 >"$1/build.log" 2>&1
  make -C "$1" install DESTDIR="$PREFIX" >>"$1/build.log" 2>&1
  make -C "$1/directory" -j2 >>"$1/build.log" 2>&1
  make -C "$1/directory" install DESTDIR="$PREFIX" >>"$1/build.log" 2>&1
  chmod -R a+rX "$WORK"
}

# Runs one test against the build in PREFIX; prints what failed. Returns
# the test's exit status.
run_test() {  # tree, name, test...
  local tree=$1 name=$2 kind=$3 rc=0
  shift 3
  case "$kind" in
    checker)
      perl "$SRC/test/consistency/checker.pl" --bindir "$PREFIX$BINDIR" --reads "$READS" "$@" \
           --seed-rows "$SEED_ROWS" --writers 2 --readers 4 --max-seconds 600 >"$WORK/$name.out" 2>&1 || rc=$?
      sed -n '/^checked reads/,/^skipped/p' "$WORK/$name.out"
      # A checker that never reported judged nothing (it did not start, say).
      if ! grep -q '^checked reads' "$WORK/$name.out"; then
        tail -3 "$WORK/$name.out" | sed 's/^/  /'; return 2
      fi
      local mismatches
      mismatches=$(grep -oE 'mismatches: strict [0-9]+, window [0-9]+, repeatable read [0-9]+' "$WORK/$name.out" |
                   grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}' || true)
      if [ "${mismatches:-0}" -gt 0 ]; then
        rc=1
      elif [[ $name != none* ]]; then
        rc=0  # a mutant that only failed to finish its reads was not caught
      fi
      ;;
    tap|regress)
      local suite=$1 args
      if [ "$kind" = tap ]; then args=(REGRESS= "PROVE_TESTS=$suite"); else args=("REGRESS=$suite" TAP_TESTS=); fi
      chown -R postgres "$tree"
      runuser -u postgres -- make -C "$tree" installcheck PG_CONFIG="$PREFIX$BINDIR/pg_config" "${args[@]}" \
          >"$WORK/$name.out" 2>&1 || rc=$?
      # The failing assertions, for the record: how many, and the first ones.
      local failing
      failing=$(grep -hE '^(\[[^]]*\]\([^)]*\) )?not ok ' "$tree"/tmp_check/log/regress_log_* 2>/dev/null |
                sed -E 's/^\[[^]]*\]\([^)]*\) //' || true)
      [ -z "$failing" ] || printf '  %d failing assertions, the first: %s\n' "$(wc -l <<<"$failing")" \
                                 "$(head -3 <<<"$failing" | paste -sd ';' -)"
      grep -hE '^test .*FAILED|^not ok +[0-9]+ +- ' "$WORK/$name.out" 2>/dev/null | head -3 | sed 's/^/  /' || true
      [ -f "$tree/regression.diffs" ] && head -12 "$tree/regression.diffs" | sed 's/^/  /'
      grep -E '^(Result|Files=)|tests (passed|failed)' "$WORK/$name.out" | sed 's/^/  /' || true
      # A suite that ran nothing, or failed without a failing assertion
      # (a build or setup problem), judges nothing.
      if [ "$kind" = tap ] && ! grep -qE '^Files=[1-9]' "$WORK/$name.out"; then
        echo "  (the TAP file did not run)"; return 2
      fi
      if [ "$rc" -ne 0 ] && ! grep -qE '^not ok|FAILED|Failed [0-9]+/[0-9]+ subtests|[0-9]+ of [0-9]+ tests failed' \
           "$WORK/$name.out"; then
        echo "  (failed without a failing assertion)"; return 2
      fi
      [ "$rc" -eq 0 ] || rc=1
      ;;
  esac
  return "$rc"
}

verdict=0
tests_of() { for m in ${MUTANTS:-$ALL}; do field 3 "$m"; done | sort -u; }

# The unmodified build first: each test the mutants below are judged by
# must pass on it.
tree="$WORK/none" touched=()
copy_sources "$tree"
build_into_prefix "$tree"
while read -r test; do
  [ -n "$test" ] || continue
  echo "=== none: $test"
  # shellcheck disable=SC2086
  if ! run_test "$tree" "none.$(tr ' /' '__' <<<"$test")" $test; then
    echo "FAIL: the unmodified build does not pass $test"; verdict=1
  fi
done < <(tests_of)

for m in ${MUTANTS:-$ALL}; do
  tree="$WORK/$m" touched=()
  copy_sources "$tree"
  "$m" "$tree"
  build_into_prefix "$tree"
  test=$(field 3 "$m")
  echo "=== $m ($(field 2 "$m")): $(field 4 "$m"); judged by $test"
  # shellcheck disable=SC2086
  rc=0
  run_test "$tree" "$m" $test || rc=$?
  case $rc in
    0) echo "FAIL: mutant $m was not caught by $test"; verdict=1 ;;
    1) echo "caught" ;;
    *) echo "FAIL: mutant $m: $test judged nothing"; verdict=1 ;;
  esac
done
echo "built from ${REV:-the working tree}; outputs in $WORK"
exit "$verdict"
