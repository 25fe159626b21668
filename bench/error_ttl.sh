#!/usr/bin/env bash
# A failing query under load, with and without pg_memo.error_ttl: how many
# times the query runs when C clients (default 64) call it for S seconds
# (default 10). The query is a count over a watched table whose WHERE
# divides by zero on every row; each client calls it through a PL/pgSQL
# wrapper that catches the error (pgbench would stop a client at its first
# error). Executions are memo.stats' computations of the cache name.
#
#   bench/error_ttl.sh [--clients C] [--seconds S] [--ttl T]
#
# Needs root and pg_memo installed (scripts/build.sh). About 2 × S seconds.
# Not run by CI; test/t/012_older_answers.pl checks the same bound, smaller.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55482}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_error_ttl}
BENCH_PRELOAD=${BENCH_PRELOAD:-pg_memo}
. "$SRC/bench/cluster.sh"
CLIENTS=64 SECONDS_PER_RUN=10 TTL=1s
while [ $# -gt 0 ]; do
  case $1 in
    --clients) CLIENTS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --ttl) TTL=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT
bench_start
bench_psql >/dev/null <<'SQL'
CREATE TABLE failing (v int);
INSERT INTO failing SELECT generate_series(1, 1000);
SELECT memo.watch('failing');
CREATE FUNCTION call_failing() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM memo.count('failing', 'SELECT * FROM failing WHERE v / (v - v) = 1');
  RETURN 'ok';
EXCEPTION WHEN division_by_zero THEN
  RETURN 'failed';
END $$;
SQL

run() {  # TTL: one run; prints "calls executions error_hits tps"
  bench_psql -c 'SELECT memo.reset_stats()' >/dev/null
  printf "SET pg_memo.error_ttl = '%s';\nSELECT call_failing();\n" "$1" >"$BENCH_DIR/failing.sql"
  chown postgres "$BENCH_DIR/failing.sql"
  bench_pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/failing.sql" >"$BENCH_DIR/run.out" 2>&1 ||
    { cat "$BENCH_DIR/run.out" >&2; exit 1; }
  local tps
  tps=$(tps_of "$BENCH_DIR/run.out")
  echo "$(bench_psql -At -F' ' -c "SELECT calls, computations, error_hits FROM memo.stats WHERE cache_name = 'failing'") $tps"
}

read -r c0 e0 h0 t0 < <(run 0)
read -r c1 e1 h1 t1 < <(run "$TTL")
echo "Machine: $(machine_description)"
echo
echo "$CLIENTS clients, pgbench -c $CLIENTS -j 2 -T $SECONDS_PER_RUN, each transaction one call of a failing count over 1,000 rows."
echo
echo '| pg_memo.error_ttl | calls | executions of the query | remembered errors raised | calls/s |'
echo '|---|---|---|---|---|'
printf '| 0 | %d | %d | %d | %.0f |\n' "$c0" "$e0" "$h0" "$t0"
printf '| %s | %d | **%d** | %d | %.0f |\n' "$TTL" "$c1" "$e1" "$h1" "$t1"
