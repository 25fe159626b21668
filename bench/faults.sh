#!/usr/bin/env bash
# The fault-injection test (test/t/005_flights_faults.pl) in its long mode: many more
# rounds of kill -9, pg_terminate_backend and statement_timeout under pgbench
# load, and longer runs with a one-slot flight table and a 1 MB arena. Prints
# the test's figures and its result.
#
#   bench/faults.sh [--seed N]
# Needs root and an installed pg_memo (scripts/build.sh). Takes about 8
# minutes. Not run by CI (CI runs the same file in its short mode).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SEED=$(date +%s)
while [ $# -gt 0 ]; do
  case $1 in
    --seed) SEED=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# The TAP framework's clusters refuse root: run as postgres from a copy it owns.
WORK=$(mktemp -d /tmp/pg_memo_faults.XXXXXX)
tar -C "$SRC" --exclude=./.git --exclude=./build --exclude=./.pgdata --exclude='./tmp_check*' \
    -cf - . | tar -C "$WORK" -xf -
chown -R postgres "$WORK"
status=0
runuser -u postgres -- env PG_MEMO_FAULTS_LONG=1 PG_MEMO_FAULTS_SEED="$SEED" \
  make -C "$WORK" installcheck REGRESS= PROVE_TESTS=test/t/005_flights_faults.pl >"$WORK/make.log" 2>&1 || status=$?
grep -h 'figure:' "$WORK/tmp_check/log/regress_log_005_faults" 2>/dev/null | sed 's/^.*figure: //' || true
grep -E '^(All tests successful|Result:|Failed|test/t/)' "$WORK/make.log" || true
grep -h '^not ok' "$WORK/tmp_check/log/regress_log_005_faults" 2>/dev/null || true
echo "logs in $WORK/tmp_check/log"
exit "$status"
