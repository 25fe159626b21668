#!/usr/bin/env bash
# pg_memo end to end, as root on Debian 12: installs the packages, builds and
# installs the extension, starts a local PostgreSQL 15 cluster with pg_memo
# preloaded (data under the checkout in .pgdata/, a unix socket there, port
# 5499, run as the postgres OS user) and shows a memoized query hitting,
# being invalidated by a committed write, and hitting again.
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
CREATE EXTENSION IF NOT EXISTS pg_memo;
DROP TABLE IF EXISTS demo_orders;
CREATE TABLE demo_orders (id bigint PRIMARY KEY, customer int, status text, amount numeric);
INSERT INTO demo_orders
  SELECT g, g % 5000, (ARRAY['open','paid','shipped'])[1 + g % 3], (g % 997) * 1.5
  FROM generate_series(1, 300000) g;
SELECT memo.watch('demo_orders');
SELECT memo.reset_stats();
\timing on
\echo
\echo == 1. the first call computes (a miss)
SELECT memo.count('demo.open', 'SELECT * FROM demo_orders WHERE status = $1 AND amount > $2::numeric', '{open,100}');
\echo == 2. the same call again is served from shared memory (a hit)
SELECT memo.count('demo.open', 'SELECT * FROM demo_orders WHERE status = $1 AND amount > $2::numeric', '{open,100}');
\timing off
SELECT cache_name, calls, hits, misses, computations, invalidations, entries FROM memo.stats WHERE cache_name = 'demo.open';
\echo == 3. a committed write invalidates: the very next call sees it
INSERT INTO demo_orders VALUES (300001, 1, 'open', 500);
\timing on
SELECT memo.count('demo.open', 'SELECT * FROM demo_orders WHERE status = $1 AND amount > $2::numeric', '{open,100}');
\echo == 4. and the new result is a hit again
SELECT memo.count('demo.open', 'SELECT * FROM demo_orders WHERE status = $1 AND amount > $2::numeric', '{open,100}');
\timing off
SELECT cache_name, calls, hits, misses, computations, invalidations, entries FROM memo.stats WHERE cache_name = 'demo.open';
SELECT * FROM memo.info;
SQL
