#!/usr/bin/env bash
# Runs every test of pg_memo: the core's unit tests (ctest), the check that
# no modules or folders include each other in a cycle
# (scripts/check-includes.pl), then the pg_regress suites (sql, expected)
# and TAP suites (test/t) on temporary instances, then pg_memo_directory's
# suites (directory/sql), then that every mutant of
# test/consistency/mutants.sh still applies and compiles, the Prometheus
# exporter's metrics (scripts/test-exporter.sh), the Debian package
# (scripts/build-deb.sh: built from the tracked files, installed, its
# pg_regress suites run against it), and PostgreSQL's own regression suite
# with and without pg_memo preloaded (scripts/pg-regress-compare.sh,
# counted as one test).
# Run as root after scripts/install-deps.sh. Ends with "N passed, N failed";
# exits non-zero on any failure.
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d /tmp/pg_memo_test.XXXXXX)
chmod 755 "$WORK"
passed=0
failed=0

section() { printf '\n=== %s\n' "$*"; }
count() { passed=$((passed + $1)); failed=$((failed + $2)); }

# --- 1. the core, without PostgreSQL -----------------------------------------
section "core unit tests (ctest)"
if cmake -S "$SRC" -B "$WORK/core" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$WORK/core.log" 2>&1 &&
   cmake --build "$WORK/core" -j"$(nproc)" >>"$WORK/core.log" 2>&1; then
  (cd "$WORK/core" && ctest --output-on-failure 2>&1) | tee "$WORK/ctest.log"
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$WORK/ctest.log" | tail -1)
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  bad=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$summary")
  if [ -n "$total" ]; then count $((total - bad)) "$bad"; else count 0 1; fi
else
  cat "$WORK/core.log"
  count 0 1
fi

# --- the modules include no cycle -------------------------------------------
section "include cycles among modules and folders (scripts/check-includes.pl)"
if perl "$SRC/scripts/check-includes.pl"; then count 1 0; else count 0 1; fi

# --- 2. the extension, on temporary instances ------------------------------
# initdb refuses root, so the suites run as postgres from a copy it owns.
section "build and install"
mkdir -p "$WORK/src"
# (without the results of earlier runs, here or in directory/)
tar -C "$SRC" --exclude=./.git --exclude=./build --exclude=./.pgdata --exclude=./.pgrun \
    --exclude='tmp_check*' --exclude=results --exclude=regression.diffs --exclude=regression.out \
    -cf - . | tar -C "$WORK/src" -xf -
chown -R postgres "$WORK/src"
if ! (runuser -u postgres -- make -C "$WORK/src" clean >/dev/null 2>&1;
      runuser -u postgres -- make -C "$WORK/src" -j"$(nproc)" >"$WORK/build.log" 2>&1 &&
      bash "$SRC/scripts/build.sh" "$WORK/src" >>"$WORK/build.log" 2>&1); then
  cat "$WORK/build.log"
  count 0 1
  echo "$passed passed, $failed failed"
  exit 1
fi
echo "installed"

skipped=()  # "what (why)" of everything that did not run

# The pg_regress suites of a PGXS folder, on their own: a failure there must
# not keep the TAP suites from running (make stops at the first failing
# step). Every suite the Makefile names must reach the summary.
run_regress() {  # $1 = folder with a PGXS Makefile, $2 = label
  local dir=$1 label=$2 out="$WORK/$2.regress.log" rc n f t expected
  section "$label: pg_regress"
  runuser -u postgres -- make -C "$dir" installcheck TAP_TESTS= >"$out" 2>&1
  rc=$?
  grep -E '^(ok|not ok) |^test |All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed' "$out"
  expected=$(make -s -C "$dir" --no-print-directory -f Makefile -f - print-regress <<<'print-regress: ; @echo $(REGRESS)' 2>/dev/null | wc -w)
  n=$(grep -oE 'All [0-9]+ tests passed' "$out" | grep -oE '[0-9]+')
  if [ -n "$n" ]; then
    count "$n" 0
  elif grep -qE '[0-9]+ of [0-9]+ tests failed' "$out"; then
    f=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $1}')
    t=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $3}')
    count $((t - f)) "$f"
    n=$t
    find "$dir" -name regression.diffs -exec cat {} \; | head -200
  else
    n=0
  fi
  if [ "${n:-0}" -lt "$expected" ]; then  # suites that never reported
    tail -30 "$out"
    echo "$label: $((expected - n)) of $expected pg_regress suites did not run"
    count 0 $((expected - n))
  elif [ $rc -ne 0 ] && [ -z "${f:-}" ]; then
    tail -30 "$out"
    count 0 1
  fi
}

# The TAP suites of a PGXS folder: every subtest counts; a file that died
# before its plan, or did not run at all, counts as a failure; a file that
# skipped is named.
run_tap() {  # $1 = folder, $2 = label
  local dir=$1 label=$2 out="$WORK/$2.tap.log" rc files ran total bad died
  files=$(ls "$dir"/test/t/*.pl 2>/dev/null | wc -l)
  [ "$files" -gt 0 ] || return 0
  section "$label: TAP"
  runuser -u postgres -- make -C "$dir" installcheck REGRESS= >"$out" 2>&1
  rc=$?
  grep -E '^t/|^test/t/|Result:|Failed [0-9]+/|Dubious|skipped' "$out"
  ran=$(grep -oE 'Files=[0-9]+' "$out" | grep -oE '[0-9]+' | tail -1)
  total=$(grep -oE 'Tests=[0-9]+' "$out" | grep -oE '[0-9]+' | tail -1)
  bad=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$out" | awk -F'[ /]' '{s+=$2} END {print s+0}')
  # a file that died after some subtests: "Wstat: ... Tests: N Failed: 0"
  died=$(grep -cE '^test/t/.*\(Wstat: [1-9][0-9]* .*Failed: 0\)' "$out")
  count $((${total:-0} - bad)) $((bad + died))
  while read -r line; do
    skipped+=("$label: $line")
  done < <(grep -oE '^test/t/[^ ]+ \.+ skipped: .*' "$out" | sed -E 's/ \.+ skipped: / (/; s/$/)/')
  if [ "${ran:-0}" -lt "$files" ]; then
    tail -30 "$out"
    echo "$label: $((files - ${ran:-0})) of $files TAP files did not run"
    count 0 $((files - ${ran:-0}))
  elif [ $rc -ne 0 ] && [ $((bad + died)) -eq 0 ]; then
    tail -50 "$out"
    count 0 1
  fi
  if [ $rc -ne 0 ]; then
    find "$dir" -path '*tmp_check/log/*' -name 'regress_log_*' -exec tail -40 {} \; 2>/dev/null | head -120
  fi
}

run_installcheck() {  # $1 = folder with a PGXS Makefile, $2 = label
  run_regress "$1" "$2"
  run_tap "$1" "$2"
}

run_installcheck "$WORK/src" pg_memo
if [ -f "$WORK/src/directory/Makefile" ]; then
  run_installcheck "$WORK/src/directory" pg_memo_directory
fi

# A script that ends with "N passed, M failed": its counts.
run_counted() {  # LABEL SCRIPT [ARGS...]
  local label=$1 log="$WORK/$(basename "$2" .sh).log" line p f
  shift
  bash "$@" >"$log" 2>&1
  local rc=$?
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  p=$(awk '{print $1}' <<<"$line") f=$(awk '{print $3}' <<<"$line")
  if [ -z "$line" ] || { [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ]; }; then p=${p:-0} f=$((${f:-0} + 1)); fi
  if [ "$f" -gt 0 ]; then tail -60 "$log"; else tail -3 "$log"; fi
  echo "$label: $p passed, $f failed"
  count "$p" "$f"
}

# The mutants' full run takes over an hour (docs/reliability.md); here,
# that each mutation still applies and compiles, so that the run works.
section "mutants: every mutation applies to the tree and compiles"
run_counted mutants "$SRC/test/consistency/mutants.sh" --check

section "Prometheus metrics through postgres_exporter"
run_counted exporter "$SRC/scripts/test-exporter.sh"

section "the Debian package: built, installed, its suites run against the installed files"
run_counted debian "$SRC/scripts/build-deb.sh" "$WORK/dist"

section "PostgreSQL's regression suite, plain and with pg_memo preloaded"
if bash "$SRC/scripts/pg-regress-compare.sh" >"$WORK/pg-regress-compare.log" 2>&1; then
  tail -4 "$WORK/pg-regress-compare.log"
  count 1 0
else
  tail -60 "$WORK/pg-regress-compare.log"
  count 0 1
fi

section "summary"
echo "logs in $WORK"
for s in "${skipped[@]}"; do echo "skipped: $s"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
