#!/usr/bin/env bash
# Does the consistency checker catch real bugs? Builds pg_memo with one
# deliberate consistency bug at a time (a mutant), installs it into a
# private copy of the PostgreSQL installation under /tmp (the system's
# installation is not touched), and runs test/consistency/checker.pl
# against it. Each mutant should end with mismatches; the unmodified build
# with none; the script exits 1 otherwise.
#
#   test/consistency/mutants.sh [READS [SEED_ROWS]]   # as root; default 20000 reads
#                                                     # each, 20000 employees
#
# 20,000 employees make a directory count slow enough (a few ms) for
# concurrent misses to share flights often; with 2,000 the waiter mutant
# is caught only in some runs.
#
# It builds the checkout's HEAD commit (uncommitted changes are left out).
#
# The mutants (each a one-line change the docs explain is wrong):
#   snapshot_first   generations read after the query's snapshot
#                    (docs/consistency.md, "Generations before the snapshot")
#   caller_snapshot  read-only SPI: the calling statement's snapshot
#                    ("A new snapshot, never the caller's")
#   bump_at_precommit  counters bumped before the commit is visible ("Commit")
#   waiter_no_recheck  a flight's waiter does not re-check the generations
#                    ("Flights")
#   delta_twice      every delta record is applied twice ("Deltas")
#   delta_skipped    the oldest record of a carry is left out ("Deltas")
#   delta_aborted    rows captured in a rolled-back savepoint are published
#                    ("Deltas")
set -euo pipefail
READS=${1:-20000}
SEED_ROWS=${2:-20000}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d /tmp/pgm_mutants.XXXXXX)
chmod 755 "$WORK"
BINDIR=$(pg_config --bindir)
SHAREDIR=$(pg_config --sharedir)
LIBDIR=$(pg_config --pkglibdir)

# A relocated copy of the installation: PostgreSQL finds its share and lib
# directories relative to its binaries.
PREFIX="$WORK/pg"
mkdir -p "$PREFIX$(dirname "$BINDIR")" "$PREFIX$(dirname "$SHAREDIR")"
cp -a "$(dirname "$BINDIR")/." "$PREFIX$(dirname "$BINDIR")/"
cp -a "$SHAREDIR" "$PREFIX$(dirname "$SHAREDIR")/"
[ "$LIBDIR" = "$(dirname "$BINDIR")/lib" ] || { echo "unexpected layout: $LIBDIR" >&2; exit 1; }

# Applies a Perl substitution to a file; fails if it changed nothing.
mutate() {  # file, perl expression
  perl -0pi -e "\$n = ($2); END { exit(\$n ? 0 : 1) }" "$1" ||
    { echo "mutation did not apply to $1: $2" >&2; exit 1; }
}

run_one() {  # name, mutation function
  local name=$1 tree="$WORK/$1"
  mkdir -p "$tree"
  # The committed code (reproducible figures); a tree without git as it is.
  if git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
    git -C "$SRC" archive HEAD | tar -C "$tree" -xf -
  else
    tar -C "$SRC" --exclude=./build --exclude='./tmp_check*' -cf - . | tar -C "$tree" -xf -
  fi
  "$2" "$tree"
  make -C "$tree" clean >/dev/null 2>&1 || true
  make -C "$tree" -j2 >"$tree/build.log" 2>&1
  make -C "$tree" install DESTDIR="$PREFIX" >>"$tree/build.log" 2>&1
  make -C "$tree/directory" -j2 >>"$tree/build.log" 2>&1
  make -C "$tree/directory" install DESTDIR="$PREFIX" >>"$tree/build.log" 2>&1
  chmod -R a+rX "$WORK"
  echo "=== $name"
  local rc=0
  # The flight mutant runs without deltas: carried entries need no flight,
  # and the checker then meets too few waiters to catch it.
  local deltas=
  [ "$name" = waiter_no_recheck ] && deltas=--no-deltas
  perl "$SRC/test/consistency/checker.pl" --bindir "$PREFIX$BINDIR" --reads "$READS" $deltas \
       --seed-rows "$SEED_ROWS" --writers 2 --readers 4 --max-seconds 600 >"$WORK/$name.out" 2>&1 || rc=$?
  sed -n '/^checked reads/,/^skipped/p' "$WORK/$name.out"
  # The unmodified build must pass; every mutant must show mismatches (a
  # mutant that only failed to finish its reads was not caught).
  local mismatches
  mismatches=$(grep -oE 'mismatches: strict [0-9]+, window [0-9]+, repeatable read [0-9]+' "$WORK/$name.out" |
               grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}' || true)
  if [ "$name" = none ]; then
    [ "$rc" -eq 0 ] || { echo "FAIL: the unmodified build did not pass (exit $rc)"; verdict=1; }
  elif [ "$mismatches" -eq 0 ]; then
    echo "FAIL: mutant $name was not caught (0 mismatches, exit $rc)"; verdict=1
  fi
}

none() { :; }
snapshot_first() {
  mutate "$1/src/pg/compute.cpp" \
    's/(\n\s*read_generations\(analysis\);)(.*?int rc = execute\(q, snapshot\);)/$2$1/s'
}
caller_snapshot() {
  mutate "$1/src/pg/compute.cpp" 's/options\.read_only = false;/options.read_only = true;/'
  mutate "$1/src/pg/compute.cpp" 's/RegisterSnapshot\(GetTransactionSnapshot\(\)\)/RegisterSnapshot(GetActiveSnapshot())/'
}
bump_at_precommit() {
  mutate "$1/src/pg/invalidation.cpp" \
    's/(purge_after_commit = mark_catalog_changes\(false\)\.dropped_relations;)/$1\n            for (uint32_t i = 0; i < written_count; i++) shared_state().gens.bump(written_slots[i]);\n            written_count = 0;/'
}
waiter_no_recheck() {
  mutate "$1/src/core/store.cpp" \
    's/(LookupStatus Store::read_pinned\(.*?)\n\s*switch \(gens_\.check\(e->deps\(\), e->ndeps\)\) \{.*?\n\s*\}\n/$1\n/s'
}

delta_twice() {
  mutate "$1/src/pg/delta_apply.cpp" 's/(\*records = lappend\(\*records, copy\);)/$1 $1/'
}
delta_skipped() {
  mutate "$1/src/pg/delta_apply.cpp" 's/for \(uint32_t j = 0; j < n; j\+\+\) \{/for (uint32_t j = 0; j + 1 < n; j++) {/'
}
delta_aborted() {
  mutate "$1/src/pg/delta_capture.cpp" 's/if \(event != SUBXACT_EVENT_ABORT_SUB\) return;/return;/'
}

verdict=0
# MUTANTS="delta_twice delta_skipped" runs some of them only.
for m in ${MUTANTS:-none snapshot_first caller_snapshot bump_at_precommit waiter_no_recheck delta_twice delta_skipped delta_aborted}; do
  run_one "$m" "$m"
done
echo "outputs in $WORK"
exit "$verdict"
