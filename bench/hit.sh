#!/usr/bin/env bash
# Hit throughput of a hot memo.count key against the same count uncached,
# over pgbench on a unix socket (-c 8 -j 2), alternated in pairs, medians of
# the pairs. Prints a Markdown table.
#
#   bench/hit.sh [--pairs N] [--seconds S] [--protocol simple|prepared]
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Its own cluster, so that it never touches another benchmark's.
BENCH_PORT=${BENCH_PORT:-55471}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_hit}
. "$SRC/bench/cluster.sh"
PAIRS=3 SECONDS_PER_RUN=10 PROTOCOL=prepared
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start
bench_create_items >/dev/null
cp "$SRC"/test/pgbench/{hot_count,uncached_count}.sql "$BENCH_DIR/" && chown postgres "$BENCH_DIR"/*.sql

tps() {  # $1 = script
  bench_pgbench -n -M "$PROTOCOL" -c 8 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/$1" 2>&1 |
    grep -oE 'tps = [0-9.]+ \(without' | grep -oE '[0-9.]+'
}

hits=() uncached=()
for pair in $(seq 1 "$PAIRS"); do
  if [ $((pair % 2)) -eq 1 ]; then
    hits+=("$(tps hot_count.sql)"); uncached+=("$(tps uncached_count.sql)")
  else
    uncached+=("$(tps uncached_count.sql)"); hits+=("$(tps hot_count.sql)")
  fi
done
h=$(printf '%s\n' "${hits[@]}" | median)
u=$(printf '%s\n' "${uncached[@]}" | median)
echo "Machine: $(machine_description)"
echo "pgbench -M $PROTOCOL -c 8 -j 2 -T $SECONDS_PER_RUN, $PAIRS alternated pairs, medians."
echo
echo '| request | TPS (median) | runs |'
echo '|---|---|---|'
echo "| memo.count hit (test/pgbench/hot_count.sql) | $h | ${hits[*]} |"
echo "| same count uncached (test/pgbench/uncached_count.sql) | $u | ${uncached[*]} |"
echo
awk -v h="$h" -v u="$u" 'BEGIN {printf "Hit / uncached: %.1fx\n", h / u}'
bench_psql -At -c "SELECT 'hits ' || hits || ', computations ' || computations FROM memo.stats WHERE cache_name = 'hot.count'"
