#!/usr/bin/env bash
# An UPDATE of 100,000 rows on the same table watched and unwatched
# (memo.watch / memo.unwatch in turn): the statement trigger fires once per
# statement, so the two should cost the same.
#
# Every run must start from the same table, or the runs measure the heap
# instead of the trigger. So the table has fillfactor 50: after VACUUM, each
# row's new version fits on its own page and the table never grows. (At
# fillfactor 100, runs alternated between about 170 and 290 ms, as the table
# grew and VACUUM truncated it.) Each run starts after VACUUM and CHECKPOINT,
# so that no run pays for another's dirty pages. The sides alternate in
# pairs, after one unrecorded pair. A logged table shows the real cost; an
# unlogged one the same without the WAL's I/O, which is most of the noise.
# Prints each run's time as psql sees it (the statement and its commit), the
# medians, the median of the pairs' ratios, and EXPLAIN ANALYZE's line for
# the trigger.
#
# With --deltas the watched side is watched with deltas (memo.watch(t,
# deltas => true)): PostgreSQL then fills the statement's transition tables
# (100,000 old and 100,000 new rows), and pg_memo, past
# pg_memo.max_delta_rows, keeps none of them.
#
#   bench/big_update.sh [--pairs N] [--deltas]   (default 100; about a minute)
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55477}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_update}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
PAIRS=100 WATCH_ARGS=
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --deltas) WATCH_ARGS=", deltas => true"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start
for table in writes writes_unlogged; do
  unlogged=$([ $table = writes_unlogged ] && echo UNLOGGED || true)
  bench_psql -c "CREATE $unlogged TABLE $table (id bigint PRIMARY KEY, n bigint NOT NULL, note text NOT NULL) WITH (fillfactor = 50)" \
    -c "INSERT INTO $table SELECT g, 0, md5(g::text) FROM generate_series(1, 100000) g" \
    -c "VACUUM ANALYZE $table" >/dev/null
done

update_ms() {  # TABLE watch|unwatch
  # Called inside $(...), where set -e does not reach: fail explicitly.
  local args=
  [ "$2" = watch ] && args=$WATCH_ARGS
  bench_psql -c "SELECT memo.$2('$1'$args)" -c "VACUUM $1" -c 'CHECKPOINT' >/dev/null || return 1
  bench_psql -c '\timing on' -c "UPDATE $1 SET n = n + 1 WHERE id <= 100000" |
    grep -oE 'Time: [0-9.]+' | grep -oE '[0-9.]+'
}

# compare TABLE: prints the table's row
compare() {
  local table=$1 i watched=() unwatched=()
  update_ms "$table" watch >/dev/null; update_ms "$table" unwatch >/dev/null
  for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then watched+=("$(update_ms "$table" watch)"); unwatched+=("$(update_ms "$table" unwatch)")
    else unwatched+=("$(update_ms "$table" unwatch)"); watched+=("$(update_ms "$table" watch)"); fi
  done
  local pair_ratio
  pair_ratio=$(for i in $(seq 0 $((PAIRS - 1))); do
    awk -v w="${watched[$i]}" -v u="${unwatched[$i]}" 'BEGIN {printf "%.4f\n", w / u}'; done | median)
  awk -v t="$table" -v w="$(printf '%s\n' "${watched[@]}" | median)" -v u="$(printf '%s\n' "${unwatched[@]}" | median)" \
      -v pr="$pair_ratio" -v rw="${watched[*]}" -v ru="${unwatched[*]}" 'BEGIN {
    printf "| %s | %.1f | %.1f | **%.3f** | %.3f | %s / %s |\n", t, w, u, w / u, pr, rw, ru }'
}

echo "Machine: $(machine_description)"
echo
echo "Medians of $PAIRS alternated pairs, in ms. Watched: memo.watch(t$WATCH_ARGS)."
echo
echo '| table (fillfactor 50) | watched | unwatched | watched / unwatched | median of pair ratios | runs watched / unwatched |'
echo '|---|---|---|---|---|---|'
compare writes
compare writes_unlogged
# The trigger's own time and calls, from one watched UPDATE rolled back.
bench_psql -c "SELECT memo.watch('writes'$WATCH_ARGS)" -c 'BEGIN' \
  -c 'EXPLAIN (ANALYZE, COSTS OFF) UPDATE writes SET n = n + 1 WHERE id <= 100000' -c 'ROLLBACK' |
  grep -E '^ *Trigger' | sed 's/^ */\nEXPLAIN ANALYZE of a watched UPDATE: /'
