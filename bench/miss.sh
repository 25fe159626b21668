#!/usr/bin/env bash
# The miss path under many scopes: every call a different key, so every call
# computes. 32 clients (-M prepared) call
#   memo.count('m.k', 'SELECT v FROM small WHERE k <= $1::int', ARRAY[:k::text])
# with a random k from 1 to 10^8 over a watched 10-row table, against the
# same count run directly as a prepared statement. Alternated pairs, medians,
# and the ratio miss / direct. Prints Markdown.
#
#   bench/miss.sh [--pairs N] [--seconds S] [--clients C] [--a A.so --b B.so]
# With --a and --b, each pair runs both sides once on each build (installed
# in turn, the cluster restarted; the system's library is put back after),
# and the ratio is reported per build. The extension is created at version
# 1.0, which every build serves. Needs root and an installed pg_memo
# (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55477}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_miss}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
PAIRS=3 SECONDS_PER_RUN=10 CLIENTS=32 A= B=
while [ $# -gt 0 ]; do
  case $1 in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

bench_library_keep
trap 'bench_stop; bench_library_restore' EXIT  # set first: bench_start may fail after the cluster is up
bench_start
bench_psql -c "DROP EXTENSION pg_memo; CREATE EXTENSION pg_memo VERSION '1.0'" >/dev/null
bench_psql -c "CREATE TABLE small (k int PRIMARY KEY, v text);
  INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, 10) g;
  SELECT memo.watch('small');" >/dev/null
bench_psql -c "VACUUM ANALYZE small" >/dev/null
cat >"$BENCH_DIR/miss.sql" <<'SQL'
\set k random(1, 100000000)
SELECT memo.count('m.k', 'SELECT v FROM small WHERE k <= $1::int', ARRAY[:k::text]);
SQL
cat >"$BENCH_DIR/direct.sql" <<'SQL'
\set k random(1, 100000000)
SELECT count(*) FROM (SELECT v FROM small WHERE k <= :k::int) q;
SQL
chown postgres "$BENCH_DIR"/*.sql

tps() {  # $1 = script
  bench_pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/$1" 2>&1 | tps_of /dev/stdin
}

measure() {  # LABEL: PAIRS alternated pairs on the running build; one table row
  local label=$1 miss=() direct=() pair m d
  for pair in $(seq 1 "$PAIRS"); do
    bench_psql -c "SELECT memo.reset()" >/dev/null  # the arena starts empty each run
    if [ $((pair % 2)) -eq 1 ]; then
      miss+=("$(tps miss.sql)"); direct+=("$(tps direct.sql)")
    else
      direct+=("$(tps direct.sql)"); miss+=("$(tps miss.sql)")
    fi
  done
  m=$(printf '%s\n' "${miss[@]}" | median)
  d=$(printf '%s\n' "${direct[@]}" | median)
  echo "| $label | $m | $d | $(awk -v a="$m" -v b="$d" 'BEGIN {printf "%.3f", a / b}') | ${miss[*]} | ${direct[*]} |" >>"$BENCH_DIR/rows"
}

: >"$BENCH_DIR/rows"
if [ -n "$A" ] && [ -n "$B" ]; then
  bench_use_library "$A"; measure "A: $A"
  bench_use_library "$B"; measure "B: $B"
  bench_use_library "$A"; measure "A: $A (again)"
  bench_use_library "$B"; measure "B: $B (again)"
else
  measure installed
fi
echo "Machine: $(machine_description)"
echo "pgbench -M prepared -c $CLIENTS -j 2 -T $SECONDS_PER_RUN, $PAIRS alternated pairs per row, medians."
echo
echo '| build | memo.count, every call a miss (TPS) | the same count, direct prepared (TPS) | miss / direct | miss runs | direct runs |'
echo '|---|---|---|---|---|---|'
cat "$BENCH_DIR/rows"
