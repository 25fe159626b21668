#!/usr/bin/env bash
# The tenant checker's long run (issue 48): test/clients/tenant_checker.py
# with READS reads (1,000,000 by default) interleaving tenants on shared
# connections, through PgBouncer in transaction mode and directly, over
# eight policy shapes, while a writer changes rows, memberships, a policy
# and a role's memberships (test/t/029 runs 20,000 in CI). Prints the
# checker's line: reads, exact (no change committed between the read and
# its uncached twin), leaks (rows of another tenant), mismatches, errors,
# served (hits).
#
#   bench/tenant_leaks.sh [--reads N] [--seconds S] [--seed N]
# Needs root, an installed pg_memo (scripts/build.sh), pgbouncer and
# python3-psycopg. Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55493}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_tenant_leaks}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
READS=1000000 SECONDS_MAX=3600 SEED=1
while [ $# -gt 0 ]; do
  case $1 in
    --reads) READS=$2; shift 2 ;;
    --seconds) SECONDS_MAX=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BOUNCER_PORT=$((BENCH_PORT + 2))
stop_all() {
  [ -f "$BENCH_DIR/pgbouncer/pgbouncer.pid" ] && kill "$(cat "$BENCH_DIR/pgbouncer/pgbouncer.pid")" 2>/dev/null || true
  bench_stop
}
trap stop_all EXIT
bench_start "max_connections = 60" >/dev/null
mkdir -p "$BENCH_DIR/pgbouncer"
echo '"tk_authenticator" ""' >"$BENCH_DIR/pgbouncer/users.txt"
cat >"$BENCH_DIR/pgbouncer/pgbouncer.ini" <<INI
[databases]
postgres = host=$BENCH_DIR port=$BENCH_PORT dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $BENCH_DIR/pgbouncer/users.txt
pool_mode = transaction
default_pool_size = 2
max_client_conn = 20
logfile = $BENCH_DIR/pgbouncer/pgbouncer.log
pidfile = $BENCH_DIR/pgbouncer/pgbouncer.pid
ignore_startup_parameters = extra_float_digits
INI
chown -R postgres "$BENCH_DIR/pgbouncer"
as_pg /usr/sbin/pgbouncer -d "$BENCH_DIR/pgbouncer/pgbouncer.ini"
ADMIN="host=$BENCH_DIR port=$BENCH_PORT dbname=postgres user=postgres"
/usr/bin/python3 "$SRC/test/clients/tenant_checker.py" setup "$ADMIN"
for _ in $(seq 1 100); do
  psql -XAtq -c 'SELECT 1' "host=127.0.0.1 port=$BOUNCER_PORT dbname=postgres user=tk_authenticator" >/dev/null 2>&1 && break
  sleep 0.1
done
start=$(date +%s)
/usr/bin/python3 "$SRC/test/clients/tenant_checker.py" run \
  "host=127.0.0.1 port=$BOUNCER_PORT dbname=postgres user=tk_authenticator" \
  "host=$BENCH_DIR port=$BENCH_PORT dbname=postgres user=tk_authenticator" "$ADMIN" "$READS" "$SECONDS_MAX" "$SEED"
echo "took $(( $(date +%s) - start )) s; $(nproc) cores, PostgreSQL 15"
