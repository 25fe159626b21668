#!/usr/bin/env bash
# The directory workload (pg_memo_directory) on a 500,000-employee org:
#   1. the hot request uncached (directory.list_employees) against its cache
#      hit (directory.cached_list_employees), one client;
#   2. that hit against a bare memo.list_as hit returning the same rows
#      (pgbench -c 8 -j 2 and -c 1, alternated pairs, medians, ratio);
#   3. the stampede experiment: C clients on the hot key while one more client
#      commits a rename every few seconds, singleflight on and off alternated
#      in pairs: requests served, writes, computations (memo.stats and,
#      independently, pg_stat_statements with track = all), shared results,
#      p50/p95/p99/max latency.
# Prints Markdown tables.
#
#   bench/directory.sh [--pairs N] [--seconds S] [--clients C] [--write-every W]
#                      [--hit-pairs N] [--hit-seconds S] [--rows N]
# Needs root, and pg_memo and pg_memo_directory installed (scripts/build.sh).
# Takes about 5 minutes with the defaults (seed, about 70 s of pgbench for 1
# and 2, then 2 * pairs * seconds for 3).
# Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Its own cluster, so that it never touches another benchmark's.
BENCH_PORT=${BENCH_PORT:-55472}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_dir}
. "$SRC/bench/cluster.sh"
PAIRS=3 SECONDS_PER_RUN=30 CLIENTS=64 WRITE_EVERY=2 HIT_PAIRS=3 HIT_SECONDS=5 ROWS=500000
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --write-every) WRITE_EVERY=$2; shift 2 ;;
    --hit-pairs) HIT_PAIRS=$2; shift 2 ;;
    --hit-seconds) HIT_SECONDS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ ! -f "$("$BENCH_BIN/pg_config" --sharedir)/extension/pg_memo_directory.control" ]; then
  echo "pg_memo_directory is not installed: run scripts/build.sh (or make -C directory install)" >&2
  exit 1
fi

# run_pgbench OUT SCRIPT CLIENTS SECONDS [more pgbench options...]
run_pgbench() {
  local out=$1 script=$2 clients=$3 secs=$4 jobs=1
  shift 4
  [ "$clients" -gt 1 ] && jobs=2
  bench_pgbench -n -M prepared -c "$clients" -j "$jobs" -T "$secs" -f "$BENCH_DIR/$script" "$@" >"$out" 2>&1 ||
    { cat "$out" >&2; return 1; }
}

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start
bench_psql -c 'CREATE EXTENSION pg_memo_directory'
seed_start=$(date +%s.%N)
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null  # it analyzes the table
seed_seconds=$(awk -v a="$seed_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')

cp "$SRC/test/pgbench/directory_hot_key.sql" "$BENCH_DIR/hot_key.sql"
echo 'SELECT * FROM directory.list_employees(1);' >"$BENCH_DIR/uncached.sql"
echo 'SELECT * FROM directory.cached_list_employees(1);' >"$BENCH_DIR/cached.sql"
# The bare hit: memo.list_as with the very page query and parameters that
# cached_list_employees(1) passes (the builder's page_sql, its page_params
# and the total), so that it returns the same rows from the same entry.
bench_psql -At >"$BENCH_DIR/bare.sql" <<'SQL'
SELECT format('SELECT * FROM memo.list_as(NULL::directory.employee_row, %L, %L, %L);',
              'employees.page', q.page_sql,
              q.page_params || (memo.count('employees.count', q.count_sql, q.count_params) - 1)::text)
  FROM directory.build_list_query(1, 1, 20, 'full_name:asc', '{}') AS q;
SQL
chown postgres "$BENCH_DIR"/*.sql
same_rows=$(bench_psql -At -c "SELECT (SELECT array_agg(t::text) FROM directory.cached_list_employees(1) t)
  = (SELECT array_agg(t::text) FROM ($(sed 's/;$//' "$BENCH_DIR/bare.sql")) t)")
[ "$same_rows" = t ] || { echo "the bare memo.list_as does not return cached_list_employees(1)'s rows" >&2; exit 1; }

echo "Machine: $(machine_description)"
echo "Cluster: bench/cluster.sh (unix socket, shared_buffers 1GB, jit off, autovacuum off, pg_stat_statements.track = all, pg_memo defaults)."
echo "Seed: directory.directory_seed($ROWS) + ANALYZE in ${seed_seconds} s."
echo

# --- 1. Uncached against cached, one client ---------------------------------
mkdir -p "$BENCH_DIR/out" && chown postgres "$BENCH_DIR/out"
O=$BENCH_DIR/out
run_pgbench "$O/uncached" uncached.sql 1 "$HIT_SECONDS"
bench_psql -c 'SELECT count(*) FROM directory.cached_list_employees(1)' >/dev/null   # warm
run_pgbench "$O/cached" cached.sql 1 "$HIT_SECONDS"
read -r count_ms page_ms < <(bench_psql -At -F' ' -c "SELECT
    round(max(mean_compute_ms) FILTER (WHERE cache_name = 'employees.count')::numeric, 1),
    round(max(mean_compute_ms) FILTER (WHERE cache_name = 'employees.page')::numeric, 1)
  FROM memo.stats WHERE datname = current_database()")
u=$(latency_of "$O/uncached") c=$(latency_of "$O/cached")
echo "## The hot request: page 1 of the CEO's scope, default sort, no filters"
echo
echo "pgbench -M prepared -c 1 -T $HIT_SECONDS each. A miss computes 'employees.count' in $count_ms ms and 'employees.page' in $page_ms ms (memo.stats mean_compute_ms)."
echo
echo '| request | latency average ms | transactions |'
echo '|---|---|---|'
echo "| \`SELECT * FROM directory.list_employees(1)\` (uncached) | $u | $(served_of "$O/uncached") |"
echo "| \`SELECT * FROM directory.cached_list_employees(1)\` (hit) | $c | $(served_of "$O/cached") |"
echo
awk -v u="$u" -v c="$c" 'BEGIN {printf "Uncached / cached: %.0fx\n\n", u / c}'

# --- 2. cached_list_employees hit against a bare memo.list_as hit ------------
echo "## cached_list_employees(1) hit against a bare memo.list_as hit"
echo
echo "The bare request (\`$BENCH_DIR/bare.sql\`, the same rows):"
echo
echo '```sql'
cat "$BENCH_DIR/bare.sql"
echo '```'
echo
echo "pgbench -M prepared, $HIT_SECONDS s per run, $HIT_PAIRS alternated pairs per client count, medians."
echo "Ratio = cached latency / bare latency (= bare TPS / cached TPS); the target is at most 1.5."
echo
echo '| clients | request | TPS (median) | latency ms (median) | runs: TPS / latency ms |'
echo '|---|---|---|---|---|'
ratios=()
for clients in 8 1; do
  declare -A tps=() lat=() runs=()
  for pair in $(seq 1 "$HIT_PAIRS"); do
    if [ $((pair % 2)) -eq 1 ]; then order="cached bare"; else order="bare cached"; fi
    for kind in $order; do
      run_pgbench "$O/hit_${clients}_${kind}_$pair" "$kind.sql" "$clients" "$HIT_SECONDS"
      t=$(tps_of "$O/hit_${clients}_${kind}_$pair") l=$(latency_of "$O/hit_${clients}_${kind}_$pair")
      tps[$kind]="${tps[$kind]:-} $t" lat[$kind]="${lat[$kind]:-} $l"
      runs[$kind]="${runs[$kind]:+${runs[$kind]}, }$(printf '%.0f / %s' "$t" "$l")"
    done
  done
  for kind in cached bare; do
    printf '| %s | %s | %.0f | %s | %s |\n' "$clients" \
      "$([ $kind = cached ] && echo 'cached_list_employees(1) hit' || echo 'bare memo.list_as hit')" \
      "$(printf '%s\n' ${tps[$kind]} | median)" "$(printf '%s\n' ${lat[$kind]} | median)" "${runs[$kind]}"
  done
  ratios+=("$(awk -v c="$(printf '%s\n' ${lat[cached]} | median)" -v b="$(printf '%s\n' ${lat[bare]} | median)" \
      -v tc="$(printf '%s\n' ${tps[cached]} | median)" -v tb="$(printf '%s\n' ${tps[bare]} | median)" -v n="$clients" \
      'BEGIN {printf "-c %s: latency ratio %.2f, TPS ratio (bare / cached) %.2f", n, c / b, tb / tc}')")
  unset tps lat runs
done
echo
printf '%s\n' "${ratios[@]}"
echo

# --- 3. The stampede: singleflight on and off --------------------------------
# One run: CLIENTS readers on the hot key for SECONDS_PER_RUN, and a rename
# committed every WRITE_EVERY seconds (it moves a random employee to the
# front of the name sort, so page 1 really changes).
run_stampede() {  # $1 = on|off, $2 = pair
  local mode=$1 logdir="$BENCH_DIR/logs_$1_$2"
  rm -rf "$logdir" && mkdir -p "$logdir" && chown postgres "$logdir"
  bench_psql -c 'SELECT memo.reset()' -c 'SELECT memo.reset_stats()' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  bench_psql -c 'SELECT count(*) FROM directory.cached_list_employees(1)' >/dev/null   # warm the hot key
  bench_psql -c 'SELECT memo.reset_stats()' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  ( n=0 end=$(( $(date +%s) + SECONDS_PER_RUN ))
    while sleep "$WRITE_EVERY"; [ "$(date +%s)" -lt "$end" ]; do
      id=$(( (RANDOM * 32768 + RANDOM) % (ROWS - 1) + 2 ))
      bench_psql -c "SELECT directory.rename_employee($id, 'Aaa Renamed $mode $2 $n')" >/dev/null && n=$((n + 1))
    done
    echo "$n" >"$logdir/writes" ) &
  local writer=$!
  (cd "$logdir" && PGOPTIONS="-c pg_memo.singleflight=$mode" bench_pgbench -n -M prepared -c "$CLIENTS" -j 2 \
      -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/hot_key.sql" -l --log-prefix=tx >"$logdir/pgbench.out" 2>&1)
  wait "$writer"
  local served writes computations shared pgss
  served=$(served_of "$logdir/pgbench.out")
  writes=$(cat "$logdir/writes")
  read -r computations shared < <(bench_psql -At -F' ' -c "SELECT coalesce(sum(computations), 0), coalesce(sum(shared), 0)
      FROM memo.stats WHERE datname = current_database() AND cache_name IN ('employees.count', 'employees.page')")
  # The statements pg_memo runs inside memo.count (its count wrapper) and
  # memo.list_as (the page query itself); the outer statements of the
  # directory functions are not counted.
  pgss=$(bench_psql -At -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
      WHERE query LIKE '%AS pg_memo_count%'
         OR query LIKE 'SELECT e.id, e.full_name, e.title, e.department, e.location, e.manager_id, e.org_depth, e.sub_org_size, \$%'")
  read -r p50 p95 p99 max < <(latency_percentiles "$logdir"/tx.*)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$mode" "$served" "$writes" "$computations" "$pgss" "$shared" "$p50" "$p95" "$p99" "$max" | tee -a "$BENCH_DIR/stampede_rows"
}

echo "## Stampede: singleflight on and off"
echo
echo "$CLIENTS pgbench clients (-M prepared -j 2) on test/pgbench/directory_hot_key.sql for $SECONDS_PER_RUN s per run;"
echo "one more client commits directory.rename_employee on a random employee every $WRITE_EVERY s."
echo "Each run starts warm, with memo.reset(), zeroed memo.stats and pg_stat_statements. computations"
echo "sum 'employees.count' and 'employees.page'; pg_stat_statements counts the calls of the statements"
echo "pg_memo runs inside the memo functions (the count wrapper, the page query)."
echo
echo '| singleflight | requests served | writes | computations (memo.stats) | computations (pg_stat_statements) | shared | p50 ms | p95 ms | p99 ms | max ms |'
echo '|---|---|---|---|---|---|---|---|---|---|'
: >"$BENCH_DIR/stampede_rows"
for pair in $(seq 1 "$PAIRS"); do
  if [ $((pair % 2)) -eq 1 ]; then order="on off"; else order="off on"; fi
  for mode in $order; do run_stampede "$mode" "$pair"; done
done
echo
echo "Medians per mode:"
echo
echo '| singleflight | requests served | writes | computations | shared | p99 ms | max ms |'
echo '|---|---|---|---|---|---|---|'
for mode in on off; do
  col() { awk -F' *[|] *' -v m="$mode" -v c="$1" '$2 == m {print $c}' "$BENCH_DIR/stampede_rows" | median; }
  echo "| $mode | $(col 3) | $(col 4) | $(col 5) | $(col 7) | $(col 10) | $(col 11) |"
done
