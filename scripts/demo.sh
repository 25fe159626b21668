#!/usr/bin/env bash
# pg_memo end to end, as root on Debian 12: installs the packages, builds and
# installs the extension, starts a local PostgreSQL 15 cluster with pg_memo
# preloaded (data under the checkout in .pgdata/, a unix socket there, port
# 5499, run as the postgres OS user) and shows the employee directory
# (pg_memo_directory): a page computed, then a hit, a committed write, and
# the very next statement seeing it; a statement registered by its text;
# and, with nothing registered, automatic admission serving an expensive
# statement after a few calls while a cheap one is left alone, each with
# its reason.
#
#   scripts/demo.sh          set up (if needed), start, demo
#   scripts/demo.sh stop     stop the demo cluster (by its postmaster.pid)
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORT=${PG_MEMO_PORT:-5499}
BIN=/usr/lib/postgresql/15/bin

# The cluster lives under the checkout when the postgres user can reach it.
if runuser -u postgres -- test -x "$SRC" 2>/dev/null; then RUN="$SRC/.pgdata"; else RUN=/tmp/pg_memo_demo; fi
DATA="$RUN/data"
as_pg() { runuser -u postgres -- "$@"; }
psql_demo() { as_pg "$BIN/psql" -X -h "$RUN" -p "$PORT" -d postgres "$@"; }

if [ "${1:-}" = stop ]; then
  if [ -f "$DATA/postmaster.pid" ]; then as_pg "$BIN/pg_ctl" -D "$DATA" -m fast stop; else echo "not running"; fi
  exit 0
fi

bash "$SRC/scripts/install-deps.sh"
bash "$SRC/scripts/build.sh"

if [ ! -f "$DATA/PG_VERSION" ]; then
  mkdir -p "$RUN" && chown postgres "$RUN" && chmod 700 "$RUN"
  as_pg "$BIN/initdb" -D "$DATA" -A trust >/dev/null
  cat >>"$DATA/postgresql.conf" <<CONF
# pg_memo demo cluster
port = $PORT
listen_addresses = ''
unix_socket_directories = '$RUN'
shared_preload_libraries = 'pg_memo, pg_stat_statements'
pg_memo.cache_size = '64MB'
CONF
fi
if ! as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  as_pg "$BIN/pg_ctl" -D "$DATA" -l "$RUN/server.log" -w start >/dev/null
fi
echo "cluster running: psql -h $RUN -p $PORT -U postgres   (stop: scripts/demo.sh stop)"

psql_demo -v ON_ERROR_STOP=1 <<'SQL'
\pset footer off
CREATE EXTENSION IF NOT EXISTS pg_memo_directory CASCADE;
\echo == the employee directory: 100,000 employees (a few seconds)
SELECT directory.directory_seed(100000) AS seeded;
SELECT memo.reset(), memo.reset_stats();
\timing on
\echo
\echo == 1. page 1 of the whole company, by name: the first call computes it (a miss)
SELECT id, full_name, title, total_count FROM directory.cached_list_employees(1) LIMIT 3;
\echo == 2. the same call again is served from shared memory (a hit)
SELECT id, full_name, title, total_count FROM directory.cached_list_employees(1) LIMIT 3;
\timing off
SELECT cache_name, calls, hits, misses, computations FROM memo.stats WHERE cache_name LIKE 'employees.%' ORDER BY 1;
\echo == 3. a committed write: Aabid Aalto joins under the CEO (autocommit)
SELECT directory.hire_employee(1, 'Aabid Aalto', 'Engineer') AS new_id;
\echo == 4. the very next statement sees him first on the page, and the total one higher
\timing on
SELECT id, full_name, title, total_count FROM directory.cached_list_employees(1) LIMIT 3;
\echo == 5. and that result is a hit again
SELECT id, full_name, title, total_count FROM directory.cached_list_employees(1) LIMIT 3;
\timing off
SELECT cache_name, calls, hits, misses, computations, delta_corrected FROM memo.stats WHERE cache_name LIKE 'employees.%' ORDER BY 1;
\echo
\echo == 6. the page query as an API sends it (bound parameters), not registered: planned and run as always
PREPARE api_page(bigint, bigint, bigint) AS
  SELECT e.id, e.full_name, e.title FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]
   ORDER BY e.full_name, e.id LIMIT $2 OFFSET $3;
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) EXECUTE api_page(1, 3, 0);
\echo == 7. registered once, by its text, with no change to the statement
SELECT memo.cache_statement(
  'SELECT e.id, e.full_name, e.title FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]
    ORDER BY e.full_name, e.id LIMIT $2 OFFSET $3', cache_name => 'api.page') AS query_id;
\echo == 8. the same statement: computed once, then served from the cache
EXECUTE api_page(1, 3, 0);
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) EXECUTE api_page(1, 3, 0);
SELECT cache_name, state, calls, hits, computations FROM memo.registered_statements;
SELECT memo.uncache_statement(query_id) AS unregistered FROM memo.statements WHERE cache_name = 'api.page';
\echo
\echo == 9. nothing registered: automatic admission times what clients send and serves what pays
SET pg_memo.admission = auto;
SELECT memo.admission_reset();
\echo == a whole-company head count by department (tens of ms), sent six times: the first marks the
\echo == table as read by a slow statement, the next five are observed, and the shape is admitted
\set headcount 'SELECT e.department, count(*) FROM directory.employees e WHERE e.path @> ARRAY[1::bigint] GROUP BY e.department ORDER BY 2 DESC LIMIT 3;'
\set lookup 'SELECT full_name FROM directory.employees WHERE id = 42;'
\timing on
:headcount :headcount :headcount :headcount :headcount
:headcount
\echo == the seventh: computed once, and stored; the eighth: served from the cache (under a millisecond)
:headcount
:headcount
\echo == a lookup by primary key, five times: cheap, left alone
:lookup :lookup :lookup :lookup :lookup
\timing off
SELECT state, reason, calls, served_calls, left(query, 48) AS query FROM memo.admission ORDER BY calls DESC;
RESET pg_memo.admission;
SELECT * FROM memo.info;
SQL
