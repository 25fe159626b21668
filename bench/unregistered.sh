#!/usr/bin/env bash
# What serving registered statements costs the statements that are not
# registered (issue 30): pgbench's built-in select-only (-S) and tpcb-like
# scripts on one server with 1,000 registrations that match none of them,
# (A) with pg_memo.serve_statements on, (B) off, and (C) the same server
# restarted without pg_memo preloaded; in each round every configuration in
# turn.
# Prints Markdown: TPS per round and the medians of A / B and A / C.
# With --instructions, the same three configurations counted in
# instructions per transaction instead (bench/callgrind.sh: one client,
# SHORT and LONG transactions), which this machine's TPS cannot resolve
# to a percent.
#
#   bench/unregistered.sh [--rounds N] [--seconds S] [--scale N] [--protocol simple|prepared]
#                         [--instructions [--short N] [--long N]] [--over-pgbench]
# --over-pgbench: the registrations read pgbench_accounts (other shapes
# than pgbench's), so that every select-only statement reads a registered
# table and its query identifier, then its shape, is looked up: the
# planner hook's dearest path for a statement it does not serve. Only
# select-only then: the watched table's trigger needs pg_memo loaded, which
# configuration C is not.
# Needs root and pg_memo installed (scripts/build.sh), and valgrind for
# --instructions. Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55481}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_unregistered}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROUNDS=3 SECONDS_PER_RUN=10 SCALE=10 PROTOCOL=simple INSTRUCTIONS= SHORT=1000 LONG=3000 OVER_PGBENCH=
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    --instructions) INSTRUCTIONS=1; shift ;;
    --short) SHORT=$2; shift 2 ;;
    --long) LONG=$2; shift 2 ;;
    --over-pgbench) OVER_PGBENCH=1; shift ;;
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
if [ -n "$OVER_PGBENCH" ]; then
  bench_psql <<'SQL' >/dev/null
DELETE FROM memo.statements;
SELECT memo.watch('pgbench_accounts');
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    PERFORM memo.cache_statement('SELECT abalance FROM pgbench_accounts WHERE bid = $1' || repeat(' AND aid > 0', i),
                                 'reg.' || i);
  END LOOP;
END $$;
SQL
fi
n=$(bench_psql -Atc 'SELECT count(*) FROM memo.statements')
SCRIPTS="select-only tpcb-like"; [ -n "$OVER_PGBENCH" ] && SCRIPTS=select-only
conf=$BENCH_DIR/data/postgresql.conf
set_preload() { sed -i "s/^shared_preload_libraries = .*/shared_preload_libraries = '$1'/" "$conf"; }
preload() { set_preload "$1"; bench_restart; }
tps() {  # $1 = builtin script, rest: env
  local script=$1; shift
  env "$@" bash -c ". '$SRC/bench/cluster.sh'; BENCH_DIR='$BENCH_DIR' BENCH_PORT='$BENCH_PORT'
    bench_pgbench -n -M '$PROTOCOL' -c 8 -j 2 -T '$SECONDS_PER_RUN' -b '$script'" 2>&1 | tps_of /dev/stdin
}
if [ -n "$INSTRUCTIONS" ]; then
  command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
  CALLGRIND_OUT=$BENCH_DIR/callgrind
  . "$SRC/bench/callgrind.sh"
  bench_stop
  declare -A FILES
  # Each script on a fresh postmaster per configuration, select-only before
  # any write: tpcb-like's dead rows (autovacuum is off) would make a later
  # configuration's reads dearer, vacuumed away before each run.
  for script in $SCRIPTS; do
    for config in A B C; do
      if [ "$config" = C ]; then set_preload ''; else set_preload pg_memo; fi
      options=; [ "$config" = B ] && options="-c pg_memo.serve_statements=off"
      callgrind_start "$config.$script"
      # Every page in shared buffers: a read from the kernel's cache costs
      # instructions that differ from one run of random keys to the next.
      bench_psql -c 'VACUUM pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history' \
        -c 'CREATE EXTENSION IF NOT EXISTS pg_prewarm' \
        -c "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.relname LIKE 'pgbench%' AND c.relkind IN ('r', 'i')" \
        >/dev/null 2>&1
      PGOPTIONS=$options bench_pgbench -n -M "$PROTOCOL" -c 1 -t 50 -b "$script" >/dev/null 2>&1  # warm
      for t in "$SHORT" "$LONG"; do
        FILES[$config.$script.$t]=$(PGOPTIONS=$options callgrind_run "$t" -M "$PROTOCOL" -b "$script")
      done
      callgrind_stop
    done
  done
  set_preload pg_memo
  echo "Machine: $(machine_description)"
  echo "One pgbench client, -M $PROTOCOL, scale $SCALE, $n registrations${OVER_PGBENCH:+ over pgbench_accounts}; instructions per transaction from $SHORT and $LONG transactions"
  echo
  echo "| script | A: serving on | B: serving off | C: no pg_memo | A / B | A / C |"
  echo "|---|---|---|---|---|---|"
  for script in $SCRIPTS; do
    for config in A B C; do
      declare "per_$config=$(callgrind_per_xact "${FILES[$config.$script.$SHORT]}" "${FILES[$config.$script.$LONG]}" $((LONG - SHORT)))"
    done
    # A / B as throughput: B's instructions over A's
    echo "| $script | $per_A | $per_B | $per_C | $(awk -v a="$per_A" -v b="$per_B" 'BEGIN {printf "%.4f", b / a}') | $(awk -v a="$per_A" -v c="$per_C" 'BEGIN {printf "%.4f", c / a}') |"
  done
  exit 0
fi

echo "Machine: $(machine_description)"
echo "pgbench -M $PROTOCOL -c 8 -j 2 -T $SECONDS_PER_RUN, scale $SCALE, $n registrations"
echo
echo "| script | round | A: serving on | B: serving off | C: no pg_memo | A / B | A / C |"
echo "|---|---|---|---|---|---|---|"
for script in $SCRIPTS; do
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
