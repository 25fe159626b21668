#!/usr/bin/env bash
# The stampede experiment on a generic hot key: C clients call memo.count on
# one key whose computation scans a 400,000-row table (tens of ms), while one
# more client commits a write to that table every second. Runs singleflight
# on and off alternately, in pairs, in one run, and prints a Markdown table:
# requests served, computations (memo.stats and, independently,
# pg_stat_statements with track = all), shared results, p50/p95/p99/max.
#
#   bench/stampede.sh [--pairs N] [--seconds S] [--clients C] [--standby] [--registered | --admitted] [--protocol P]
# --registered: the clients send the count as a plain statement, registered
# with memo.cache_statement and served by the pg_memo node; computations
# counted in pg_stat_statements are its nested executions.
# --admitted: the same plain statement, registered by no one, served
# through automatic admission (pg_memo.admission = auto for every client;
# admitted before each run by a few executions: issue 47).
# --protocol: pgbench's -M for the clients (simple, the default; extended or
# prepared: a Bind and its Execute are two messages, so a registered
# statement answers as of its Bind's snapshot).
# --standby: the clients read on a streaming hot standby (the primary with
# pg_memo.standby_records = on); the writes go to the primary; the figures
# are the standby's.
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$SRC/bench/cluster.sh"
. "$SRC/bench/plot.sh"
PAIRS=3 SECONDS_PER_RUN=20 CLIENTS=64 STANDBY=0 REGISTERED=0 ADMITTED=0 PROTOCOL=simple
while [ $# -gt 0 ]; do
  case $1 in
    --standby) STANDBY=1; shift ;;
    --registered) REGISTERED=1; shift ;;
    --admitted) REGISTERED=1 ADMITTED=1; shift ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
READ_PORT=$BENCH_PORT
if [ "$STANDBY" = 1 ]; then
  bench_start "${BENCH_PRIMARY_CONF[@]}"
  bench_create_items >/dev/null
  bench_start_standby
  READ_PORT=$((BENCH_PORT + 1))
else
  bench_start
  bench_create_items >/dev/null
fi
read_psql() { as_pg "$BENCH_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_DIR" -p "$READ_PORT" -d postgres "$@"; }
cp "$SRC"/test/pgbench/stampede_*.sql "$BENCH_DIR/" && chown postgres "$BENCH_DIR"/stampede_*.sql
READ_SCRIPT=stampede_read.sql
WARM="SELECT memo.count('stampede', 'SELECT * FROM stampede_items WHERE payload LIKE \$1', '{%7abc%}')"
PGSS_COMPUTATIONS="query LIKE '%AS pg_memo_count%'"
if [ "$REGISTERED" = 1 ]; then
  READ_SCRIPT=stampede_read_registered.sql
  WARM="SELECT count(*) FROM stampede_items WHERE payload LIKE '%7abc%'"
  PGSS_COMPUTATIONS="NOT toplevel AND query LIKE 'SELECT count(*) FROM stampede_items%'"
  if [ "$ADMITTED" = 1 ]; then
    export PGOPTIONS='-c pg_memo.admission=auto'
  else
    bench_psql -c "SELECT memo.cache_statement(\$\$$WARM\$\$, cache_name => 'stampede')" >/dev/null
  fi
  [ "$STANDBY" = 1 ] && bench_standby_caught_up
fi
# The cache name the counts are read under: an admitted shape's is its own.
CACHE_NAME=stampede
[ "$ADMITTED" = 1 ] && CACHE_NAME=$(read_psql -At -c "SELECT 'auto:' || lpad(to_hex(memo.statement_shape(\$\$$WARM\$\$)), 16, '0')")

uncached_ms=$(read_psql -At <<'SQL'
SET pg_memo.singleflight = off;
\timing on
SELECT count(*) FROM stampede_items WHERE payload LIKE '%7abc%';
SQL
)
uncached_ms=$(grep -oE 'Time: [0-9.]+' <<<"$uncached_ms" | awk '{print $2}')

# One run: readers for SECONDS_PER_RUN, and a write committed every second.
run() {  # $1 = on|off
  local mode=$1 logdir="$BENCH_DIR/logs_$1_$2"
  mkdir -p "$logdir" && chown postgres "$logdir"
  read_psql -c 'SELECT memo.reset()' -c 'SELECT memo.reset_stats()' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  [ "$STANDBY" = 1 ] && bench_standby_caught_up  # a record: the standby serves
  read_psql -c "$WARM" >/dev/null
  # Admitted: the first execution marks the table, the next five are observed.
  if [ "$ADMITTED" = 1 ]; then for _ in 1 2 3 4 5 6 7; do read_psql -c "$WARM" >/dev/null; done; fi
  read_psql -c 'SELECT memo.reset_stats()' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  local writes=0
  : >"$logdir/writes"
  ( for _ in $(seq 1 "$SECONDS_PER_RUN"); do
      sleep 1
      bench_psql -c "UPDATE stampede_items SET category = category + 1 WHERE id = $((RANDOM * 12 % 400000 + 1))"
      date +%s.%N >>"$logdir/writes"  # committed by now
    done ) &
  local writer=$!
  (cd "$logdir" && PGOPTIONS="${PGOPTIONS:-} -c pg_memo.singleflight=$mode" bench_pgbench -p "$READ_PORT" -n -M "$PROTOCOL" -c "$CLIENTS" -j 2 \
      -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/$READ_SCRIPT" -l --log-prefix=tx >"$logdir/pgbench.out" 2>&1)
  wait "$writer"
  writes=$SECONDS_PER_RUN
  local served computations shared pgss
  served=$(grep -oE 'number of transactions actually processed: [0-9]+' "$logdir/pgbench.out" | grep -oE '[0-9]+$')
  read -r computations shared hits calls < <(read_psql -At -F' ' -c \
      "SELECT computations, shared, hits, calls FROM memo.stats WHERE cache_name = '$CACHE_NAME'")
  pgss=$(read_psql -At -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE $PGSS_COMPUTATIONS")
  read -r p50 p95 p99 max < <(latency_percentiles "$logdir"/tx.*)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$mode" "$served" "$writes" "$computations" "$pgss" "$shared" \
    "$(awk -v h="$hits" -v c="$calls" 'BEGIN { printf "%.4f", c ? h / c : 0 }')" "$p50" "$p95" "$p99" "$max"
}

echo "Machine: $(machine_description)"
where="on the primary"; [ "$STANDBY" = 1 ] && where="on a streaming hot standby (writes on its primary)"
[ "$REGISTERED" = 1 ] && where="$where, a registered statement"
[ "$ADMITTED" = 1 ] && where="${where/registered/automatically admitted}"
echo "Uncached hot query: ${uncached_ms} ms. $CLIENTS clients $where ($PROTOCOL protocol), ${SECONDS_PER_RUN}s per run, one committed write per second."
echo
echo '| singleflight | requests served | writes | computations (memo.stats) | computations (pg_stat_statements) | shared | hit rate | p50 ms | p95 ms | p99 ms | max ms |'
echo '|---|---|---|---|---|---|---|---|---|---|---|'
for pair in $(seq 1 "$PAIRS"); do
  if [ $((pair % 2)) -eq 1 ]; then order="on off"; else order="off on"; fi
  for mode in $order; do run "$mode" "$pair"; done
done

# The first pair's runs, request by request.
name=stampede; [ "$STANDBY" = 1 ] && name=stampede_standby
[ "$REGISTERED" = 1 ] && name=${name}_registered
[ "$ADMITTED" = 1 ] && name=${name/registered/admitted}
mkdir -p "$PLOT_DIR"
cat "$BENCH_DIR"/logs_on_1/writes "$BENCH_DIR"/logs_off_1/writes >"$BENCH_DIR/writes_1"
plot_latency_runs "$PLOT_DIR/$name.png" \
  "Stampede $where: $CLIENTS clients on one hot key, a write every second" "$BENCH_DIR/writes_1" \
  "singleflight on" "$BENCH_DIR/logs_on_1" "singleflight off" "$BENCH_DIR/logs_off_1"
