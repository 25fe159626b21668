#!/usr/bin/env bash
# Two builds of pg_memo side by side on the hit path, in one run: the hot
# directory page (cached_list_employees(1), a hit) against the 20-row table
# that holds the same rows (page_snapshot), pgbench -c 8 -j 2. For each
# build and round: install its pg_memo.so, restart, warm, then one run of
# each side in alternating order; the ratio hit / snapshot per round, and
# the median per build. Prints Markdown.
#
#   bench/ab_hit.sh --a A.so --b B.so [--rounds N] [--seconds S] [--rows N]
#                   [--protocol prepared|simple]
# The extension is created at version 1.0, which every build serves. Leaves
# the system's pg_memo.so as it found it. Needs root, pg_memo and
# pg_memo_directory installed (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55478}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_ab}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROUNDS=4 SECONDS_PER_RUN=10 ROWS=100000 PROTOCOL=prepared A= B=
while [ $# -gt 0 ]; do
  case $1 in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -f "$A" ] && [ -f "$B" ] || { echo "usage: bench/ab_hit.sh --a A.so --b B.so" >&2; exit 2; }
bench_library_keep
trap 'bench_stop; bench_library_restore' EXIT
bench_start  # on the installed build, whose SQL scripts are installed too
bench_psql -c "DROP EXTENSION pg_memo; CREATE EXTENSION pg_memo VERSION '1.0'" >/dev/null
bench_psql -c 'CREATE EXTENSION pg_memo_directory' >/dev/null
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null
bench_psql -c 'CREATE TABLE page_snapshot AS SELECT * FROM directory.list_employees(1)' >/dev/null
bench_psql -c 'VACUUM ANALYZE page_snapshot' >/dev/null
printf '%s\n' 'SELECT * FROM directory.cached_list_employees(1);' >"$BENCH_DIR/cached.sql"
printf '%s\n' 'SELECT * FROM page_snapshot;' >"$BENCH_DIR/snapshot.sql"
chown postgres "$BENCH_DIR"/*.sql

tps() { bench_pgbench -n -M "$PROTOCOL" -c 8 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/$1.sql" 2>&1 | tps_of /dev/stdin; }
ratios_a=() ratios_b=()
round() {  # $1 = label (a or b), $2 = .so, $3 = round number
  bench_use_library "$2"
  bench_pgbench -n -t 10 -f "$BENCH_DIR/cached.sql" >/dev/null 2>&1  # warm
  local h s
  if [ $(($3 % 2)) -eq 1 ]; then h=$(tps cached); s=$(tps snapshot); else s=$(tps snapshot); h=$(tps cached); fi
  local r; r=$(awk -v h="$h" -v s="$s" 'BEGIN {printf "%.4f", h / s}')
  echo "| $1 | $3 | $h | $s | $r |" >>"$BENCH_DIR/rows"
  if [ "$1" = a ]; then ratios_a+=("$r"); else ratios_b+=("$r"); fi
}
: >"$BENCH_DIR/rows"
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) -eq 1 ]; then round a "$A" "$i"; round b "$B" "$i"; else round b "$B" "$i"; round a "$A" "$i"; fi
done
echo "Machine: $(machine_description)"
echo "A: $A; B: $B. pgbench -M $PROTOCOL -c 8 -j 2 -T $SECONDS_PER_RUN, $ROUNDS rounds, $ROWS employees."
echo
echo '| build | round | hit TPS | page_snapshot TPS | hit / snapshot |'
echo '|---|---|---|---|---|'
cat "$BENCH_DIR/rows"
echo
echo "median hit / snapshot: A $(printf '%s\n' "${ratios_a[@]}" | median), B $(printf '%s\n' "${ratios_b[@]}" | median)"
