#!/usr/bin/env bash
# A result far larger than pg_memo.max_result_size: the backend's peak
# private memory (RssAnon, sampled every 5 ms from /proc) while it returns
# the result, for the query run plainly, through a PL/pgSQL function
# (RETURN QUERY), and through memo.list (at max_result_size = 1MB, so it is
# not stored). Each run in a new backend; the client fetches with a cursor
# (FETCH_COUNT), so its own memory does not matter. Prints Markdown.
#
#   bench/result_memory.sh [--rows N] [--a A.so --b B.so]
# With --a and --b, the memo.list run is made on each build (installed in
# turn, the cluster restarted; the system's library is put back after).
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55478}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_memory}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROWS=800000 A= B=
while [ $# -gt 0 ]; do
  case $1 in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

bench_library_keep
trap 'bench_stop; bench_library_restore' EXIT
bench_start "pg_memo.max_result_size = '1MB'" "work_mem = '4MB'"
bench_psql -c "CREATE FUNCTION plain_rows(n int) RETURNS TABLE (g int, s text) LANGUAGE plpgsql AS
  \$\$BEGIN RETURN QUERY SELECT i, repeat('x', 200) FROM generate_series(1, n) i; END\$\$" >/dev/null

QUERY="SELECT g, repeat('x', 200) AS s FROM generate_series(1, $ROWS) g"
MEMO="SELECT * FROM memo.list('big', \$q\$$QUERY\$q\$, '{}') AS t(g int, s text)"

# peak_kb SQL: the backend's peak RssAnon (kB) while it runs SQL.
peak_kb() {
  local sql=$1 fifo pid peak=0 rss
  fifo=$(mktemp -u /tmp/pg_memo_mem.XXXXXX)
  mkfifo "$fifo"; chmod 666 "$fifo"
  # psql prints its backend's pid, then waits for the statement on the fifo.
  (as_pg "$BENCH_BIN/psql" -X -q -At -h "$BENCH_DIR" -p "$BENCH_PORT" -d postgres \
     -c 'SELECT pg_backend_pid()' -c '\set FETCH_COUNT 10000' -f "$fifo" >"$fifo.out" 2>&1) &
  local client=$!
  until [ -s "$fifo.out" ]; do sleep 0.01; done
  pid=$(head -1 "$fifo.out")
  printf '%s;\n' "$sql" >"$fifo" &
  while kill -0 "$client" 2>/dev/null; do
    rss=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.005
  done
  wait "$client" || true
  if grep -q ERROR "$fifo.out"; then grep ERROR "$fifo.out" >&2; fi
  rm -f "$fifo" "$fifo.out"
  echo "$peak"
}

bytes=$(bench_psql -At -c "SELECT pg_size_pretty(sum(pg_column_size(t))) FROM ($QUERY) t")
echo "### A result of $ROWS rows ($bytes), max_result_size = 1MB, work_mem = 4MB"
echo
echo "Machine: $(machine_description)"
echo
echo "| how | peak RssAnon of the backend |"
echo "|---|---|"
echo "| plain query | $(( $(peak_kb "$QUERY") / 1024 )) MB |"
echo "| PL/pgSQL RETURN QUERY | $(( $(peak_kb "SELECT * FROM plain_rows($ROWS)") / 1024 )) MB |"
if [ -n "$A" ] && [ -n "$B" ]; then
  for build in "$A" "$B"; do
    bench_use_library "$build"
    echo "| memo.list, $(basename "$build") | $(( $(peak_kb "$MEMO") / 1024 )) MB |"
  done
else
  echo "| memo.list | $(( $(peak_kb "$MEMO") / 1024 )) MB |"
fi
echo
echo "memo.stats: $(bench_psql -At -c "SELECT 'calls ' || calls || ', too_large ' || too_large FROM memo.stats WHERE cache_name = 'big'")"
