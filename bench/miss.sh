#!/usr/bin/env bash
# The miss path under many scopes: every call a different key, so every call
# computes. 32 clients (-M prepared) call
#   memo.count('m.k', 'SELECT v FROM small WHERE k <= $1::int', ARRAY[:k::text])
# with a random k from 1 to 10^8 over a watched 10-row table, against the
# same count run directly as a prepared statement. Alternated pairs, medians,
# and the ratio miss / direct. Prints Markdown.
#
#   bench/miss.sh [--pairs N] [--seconds S] [--clients C]
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55477}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_miss}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
PAIRS=3 SECONDS_PER_RUN=10 CLIENTS=32
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start
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

miss=() direct=()
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
hits=$(bench_psql -At -c "SELECT hits FROM memo.stats WHERE cache_name = 'm.k'")
echo "Machine: $(machine_description)"
echo "pgbench -M prepared -c $CLIENTS -j 2 -T $SECONDS_PER_RUN, $PAIRS alternated pairs, medians."
echo
echo '| request | TPS (median) | runs |'
echo '|---|---|---|'
echo "| memo.count, every call a miss | $m | ${miss[*]} |"
echo "| the same count, direct prepared statement | $d | ${direct[*]} |"
echo
echo "miss / direct: $(awk -v a="$m" -v b="$d" 'BEGIN {printf "%.3f", a / b}') (hits during the last miss run: $hits)"
