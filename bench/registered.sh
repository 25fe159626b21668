#!/usr/bin/env bash
# A registered statement's hit (issue 30), side by side in one run: the
# directory's first page as an API sends it (the registered statement with
# bound parameters, served by the pg_memo node), the same page through
# cached_list_employees(1) (a memo.list hit), and the 20 rows read from a
# table (page_snapshot); pgbench -c 8 -j 2, each side in turn per round, in
# alternating order. Prints Markdown: TPS per round, and the medians of
# registered / cached_list_employees and registered / page_snapshot.
#
#   bench/registered.sh [--rounds N] [--seconds S] [--rows N] [--protocol prepared|simple] [--pgpool]
#                       [--instructions [--short N] [--long N] [--admitted]]
# --pgpool: a fourth side, the same page statement sent through pgpool-II
# with its query cache (bench/pgpool.sh), and the median of registered /
# pgpool.
# --instructions: the three pg_memo sides counted in instructions per
# transaction instead (bench/callgrind.sh: one client, SHORT and LONG
# transactions; --short, --long), which this machine's TPS cannot resolve
# to a few percent; needs valgrind. With --admitted, a fourth side: the
# same page statement with "AND true" in its filter (another shape,
# registered by no one) served through automatic admission, every side
# then with pg_memo.admission = auto (issue 47: an admitted shape's hit
# against a registered statement's).
# Needs root, pg_memo and pg_memo_directory installed (scripts/build.sh).
# Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55479}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_registered}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
. "$SRC/bench/pgpool.sh"
ROUNDS=4 SECONDS_PER_RUN=10 ROWS=100000 PROTOCOL=prepared PGPOOL=no PGPOOL_PORT=${PGPOOL_PORT:-55489}
INSTRUCTIONS= SHORT=1000 LONG=3000 ADMITTED=
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    --pgpool) PGPOOL=yes; shift ;;
    --instructions) INSTRUCTIONS=1; shift ;;
    --short) SHORT=$2; shift 2 ;;
    --long) LONG=$2; shift 2 ;;
    --admitted) ADMITTED=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$PGPOOL" = no ] || pgpool_require
trap 'pgpool_stop; bench_stop' EXIT
pgpool_stop
bench_start >/dev/null
bench_psql -c 'CREATE EXTENSION pg_memo_directory' >/dev/null
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null
bench_psql -c 'CREATE TABLE page_snapshot AS SELECT * FROM directory.list_employees(1)' >/dev/null
bench_psql -c 'VACUUM ANALYZE page_snapshot' >/dev/null
PAGE='SELECT e.id, e.full_name, e.title, e.department, e.location, e.manager_id, e.org_depth, e.sub_org_size
  FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint] ORDER BY e.full_name, e.id LIMIT $2 OFFSET $3'
echo "SELECT memo.cache_statement(:'page', cache_name => 'api.page')" | bench_psql -v page="$PAGE" >/dev/null
# With -M simple pgbench puts the values in the text: that statement has
# constants where the registered one has parameters, another identifier.
if [ "$PROTOCOL" = simple ]; then
  bench_psql -c "SELECT memo.cache_statement(replace(replace(replace(query, '\$1', '1'), '\$2', '20'), '\$3', '0'),
                   cache_name => 'api.page') FROM memo.statements WHERE cache_name = 'api.page'" >/dev/null
fi
{ echo '\set scope 1'; echo '\set size 20'; echo '\set skip 0'
  printf '%s;\n' "${PAGE//$'\n'/ }" | sed 's/\$1/:scope/; s/\$2/:size/; s/\$3/:skip/'; } >"$BENCH_DIR/registered.sql"
{ echo '\set scope 1'; echo '\set size 20'; echo '\set skip 0'
  printf '%s;\n' "${PAGE//$'\n'/ }" | sed 's/\$1::bigint\]/$1::bigint] AND true/; s/\$1/:scope/; s/\$2/:size/; s/\$3/:skip/'; } >"$BENCH_DIR/admitted.sql"
printf '%s\n' 'SELECT * FROM directory.cached_list_employees(1);' >"$BENCH_DIR/cached.sql"
printf '%s\n' 'SELECT * FROM page_snapshot;' >"$BENCH_DIR/snapshot.sql"
chown postgres "$BENCH_DIR"/*.sql

tps() { bench_pgbench -n -M "$PROTOCOL" -c 8 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/$1.sql" 2>&1 | tps_of /dev/stdin; }
pool_tps() { pgpool_pgbench -n -M "$PROTOCOL" -c 8 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/registered.sql" 2>&1 | tps_of /dev/stdin; }
if [ "$PGPOOL" = yes ]; then
  pgpool_start "$PGPOOL_PORT" "$BENCH_DIR" "$BENCH_PORT" 8
  pgpool_pgbench -n -M "$PROTOCOL" -t 1 -f "$BENCH_DIR/registered.sql" >/dev/null 2>&1  # warm its cache
fi
for side in registered cached; do bench_pgbench -n -M "$PROTOCOL" -t 10 -f "$BENCH_DIR/$side.sql" >/dev/null; done
served=$(bench_psql -Atc "SELECT hits FROM memo.stats WHERE cache_name = 'api.page'")
[ "${served:-0}" -gt 0 ] || { echo "the registered statement was not served" >&2; exit 1; }
if [ -n "$INSTRUCTIONS" ]; then
  command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
  CALLGRIND_OUT=$BENCH_DIR/callgrind
  . "$SRC/bench/callgrind.sh"
  bench_stop
  callgrind_start run
  declare -A FILES
  sides="registered cached snapshot"
  if [ -n "$ADMITTED" ]; then sides="$sides admitted"; export PGOPTIONS='-c pg_memo.admission=auto'; fi
  for side in $sides; do
    bench_pgbench -n -M "$PROTOCOL" -c 1 -t 50 -f "$BENCH_DIR/$side.sql" >/dev/null 2>&1  # warm
    for t in "$SHORT" "$LONG"; do FILES[$side.$t]=$(callgrind_run "$t" -M "$PROTOCOL" -f "$BENCH_DIR/$side.sql"); done
  done
  if [ -n "$ADMITTED" ]; then
    bench_psql -c "SELECT state, served_calls, recomputed, left(query, 60) FROM memo.admission WHERE query LIKE '%AND true%'"
  fi
  callgrind_stop
  per() { callgrind_per_xact "${FILES[$1.$SHORT]}" "${FILES[$1.$LONG]}" $((LONG - SHORT)); }
  t=$(per registered) c=$(per cached) s=$(per snapshot)
  echo "Machine: $(machine_description)"
  echo "One pgbench client, -M $PROTOCOL, $ROWS employees; instructions per transaction from $SHORT and $LONG transactions"
  echo
  echo "| registered | cached_list_employees | page_snapshot | registered / cached | registered / snapshot |"
  echo "|---|---|---|---|---|"
  # as throughput: the other side's instructions over those of the registered statement's hit
  echo "| $t | $c | $s | $(awk -v a="$t" -v b="$c" 'BEGIN {printf "%.3f", b / a}') | $(awk -v a="$t" -v b="$s" 'BEGIN {printf "%.3f", b / a}') |"
  if [ -n "$ADMITTED" ]; then
    a=$(per admitted)
    echo
    echo "Every side with pg_memo.admission = auto. The admitted statement's hit against the registered one's:"
    echo
    echo "| registered | admitted | admitted / registered (instructions) |"
    echo "|---|---|---|"
    echo "| $t | $a | $(awk -v a="$a" -v b="$t" 'BEGIN {printf "%.4f", a / b}') |"
  fi
  exit 0
fi
echo "Machine: $(machine_description)"
echo "pgbench -M $PROTOCOL -c 8 -j 2 -T $SECONDS_PER_RUN, $ROWS employees"
echo
echo "| round | registered TPS | cached_list_employees TPS | page_snapshot TPS | pgpool TPS | registered / cached | registered / snapshot | registered / pgpool |"
echo "|---|---|---|---|---|---|---|---|"
r_cached=() r_snapshot=() r_pool=()
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) -eq 1 ]; then t=$(tps registered); c=$(tps cached); s=$(tps snapshot)
  else s=$(tps snapshot); c=$(tps cached); t=$(tps registered); fi
  rc=$(awk -v a="$t" -v b="$c" 'BEGIN {printf "%.3f", a / b}')
  rs=$(awk -v a="$t" -v b="$s" 'BEGIN {printf "%.3f", a / b}')
  p=- rp=-
  if [ "$PGPOOL" = yes ]; then p=$(pool_tps); rp=$(awk -v a="$t" -v b="$p" 'BEGIN {printf "%.3f", a / b}'); r_pool+=("$rp"); fi
  r_cached+=("$rc") r_snapshot+=("$rs")
  echo "| $i | $t | $c | $s | $p | $rc | $rs | $rp |"
done
echo
echo "medians: registered / cached_list_employees $(printf '%s\n' "${r_cached[@]}" | median)," \
     "registered / page_snapshot $(printf '%s\n' "${r_snapshot[@]}" | median)" \
     "${r_pool[*]:+, registered / pgpool $(printf '%s\n' "${r_pool[@]}" | median)}"
bench_psql -c "SELECT cache_name, calls, hits, computations FROM memo.stats WHERE cache_name LIKE 'api.%' OR cache_name LIKE 'employees.%' ORDER BY 1"
