#!/usr/bin/env bash
# An UPDATE of 100,000 rows on the same table watched and unwatched
# (memo.watch / memo.unwatch in turn): the statement trigger fires once per
# statement, so the two should cost the same. Each run starts after VACUUM
# and CHECKPOINT, so that no run pays for another's dirty pages; the sides
# alternate in pairs; prints each run's server-side time and the medians.
#
#   bench/big_update.sh [--pairs N]      (default 10)
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55477}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_update}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
PAIRS=10
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

bench_start
trap bench_stop EXIT
bench_psql -c 'CREATE TABLE writes (id bigint PRIMARY KEY, n bigint NOT NULL, note text NOT NULL)' \
  -c 'INSERT INTO writes SELECT g, 0, md5(g::text) FROM generate_series(1, 100000) g' \
  -c 'VACUUM ANALYZE writes' >/dev/null

update_ms() {  # watch|unwatch
  bench_psql -c "SELECT memo.$1('writes')" -c 'VACUUM writes' -c 'CHECKPOINT' >/dev/null
  bench_psql -c '\timing on' -c 'UPDATE writes SET n = n + 1 WHERE id <= 100000' |
    grep -oE 'Time: [0-9.]+' | grep -oE '[0-9.]+'
}
watched=() unwatched=()
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) -eq 1 ]; then watched+=("$(update_ms watch)"); unwatched+=("$(update_ms unwatch)")
  else unwatched+=("$(update_ms unwatch)"); watched+=("$(update_ms watch)"); fi
done
echo "Machine: $(machine_description)"
echo
echo '| UPDATE of 100,000 rows | watched ms | unwatched ms | watched / unwatched | runs watched / unwatched |'
echo '|---|---|---|---|---|'
awk -v w="$(printf '%s\n' "${watched[@]}" | median)" -v u="$(printf '%s\n' "${unwatched[@]}" | median)" \
    -v rw="${watched[*]}" -v ru="${unwatched[*]}" -v n="$PAIRS" 'BEGIN {
  printf "| median of %d | %.1f | %.1f | **%.3f** | %s / %s |\n", n, w, u, w / u, rw, ru }'
