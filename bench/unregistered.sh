#!/usr/bin/env bash
# What transparent serving costs statements that are not registered
# (issue 30): pgbench's built-in select-only (-S) and tpcb-like scripts on
# one server with 1,000 registrations that match none of them, (A) with
# pg_memo.serve_statements on, (B) off, and (C) the same server restarted
# without pg_memo preloaded; in each round every configuration in turn.
# Prints Markdown: TPS per round and the medians of A / B and A / C.
#
#   bench/unregistered.sh [--rounds N] [--seconds S] [--scale N] [--protocol simple|prepared]
# Needs root and pg_memo installed (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55481}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_unregistered}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROUNDS=3 SECONDS_PER_RUN=10 SCALE=10 PROTOCOL=simple
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
trap bench_stop EXIT
bench_start >/dev/null
bench_pgbench -i -q -s "$SCALE" >/dev/null 2>&1
bench_psql <<'SQL' >/dev/null
CREATE TABLE reg_t (x int);
INSERT INTO reg_t SELECT generate_series(1, 100);
SELECT memo.watch('reg_t');
-- 1,000 registrations of distinct shapes over reg_t, matching nothing pgbench runs
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    PERFORM memo.cache_statement('SELECT x FROM reg_t WHERE x > 0' || repeat(' AND x > 0', i), 'reg.' || i);
  END LOOP;
END $$;
SQL
n=$(bench_psql -Atc 'SELECT count(*) FROM memo.statements')
conf=$BENCH_DIR/data/postgresql.conf
preload() { sed -i "s/^shared_preload_libraries = .*/shared_preload_libraries = '$1'/" "$conf"; bench_restart; }
tps() {  # $1 = builtin script, rest: env
  local script=$1; shift
  env "$@" bash -c ". '$SRC/bench/cluster.sh'; BENCH_DIR='$BENCH_DIR' BENCH_PORT='$BENCH_PORT'
    bench_pgbench -n -M '$PROTOCOL' -c 8 -j 2 -T '$SECONDS_PER_RUN' -b '$script'" 2>&1 | tps_of /dev/stdin
}
echo "Machine: $(machine_description)"
echo "pgbench -M $PROTOCOL -c 8 -j 2 -T $SECONDS_PER_RUN, scale $SCALE, $n registrations"
echo
echo "| script | round | A: serving on | B: serving off | C: no pg_memo | A / B | A / C |"
echo "|---|---|---|---|---|---|---|"
for script in select-only tpcb-like; do
  ab=() ac=()
  for i in $(seq 1 "$ROUNDS"); do
    a=$(tps "$script")
    b=$(tps "$script" PGOPTIONS="-c pg_memo.serve_statements=off")
    preload ''
    c=$(tps "$script")
    preload pg_memo
    r1=$(awk -v x="$a" -v y="$b" 'BEGIN {printf "%.3f", x / y}')
    r2=$(awk -v x="$a" -v y="$c" 'BEGIN {printf "%.3f", x / y}')
    ab+=("$r1") ac+=("$r2")
    echo "| $script | $i | $a | $b | $c | $r1 | $r2 |"
  done
  echo "| $script | median | | | | $(printf '%s\n' "${ab[@]}" | median) | $(printf '%s\n' "${ac[@]}" | median) |"
done
