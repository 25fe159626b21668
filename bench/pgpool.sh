# pgpool-II with its in-memory query cache in front of a benchmark cluster,
# for the "pg_memo against pgpool's cache hits" comparison. Sourced after
# bench/cluster.sh (it uses as_pg, BENCH_BIN, BENCH_DIR, bench_psql).
#
#   pgpool_require                  exit with install instructions if absent
#   pgpool_start PORT BACKEND_SOCKET_DIR BACKEND_PORT [CLIENTS]
#   pgpool_psql ARGS...             psql through pgpool
#   pgpool_pgbench ARGS...          pgbench through pgpool (like bench_pgbench)
#   pgpool_cache_stats              "num_cache_hits num_selects" (SHOW pool_cache)
#   backend_statement_counts LIKE_PATTERN
#                                   "calls rows" of matching pg_stat_statements
#                                   entries, read on the cluster directly
#   pgpool_stop                     by its pid file, never a broad kill
#
# pgpool runs as the postgres OS user with a private pgpool.conf, pcp.conf,
# pid file, log, status file, oid directory and sockets under
# $BENCH_DIR/pgpool; it listens only on a unix socket there (no TCP, pcp on
# a socket in $BENCH_DIR/pgpool/pcp). Single backend in raw mode, reached
# over the cluster's unix socket; no load balancing, health checks, failover
# or pool_hba, so the cluster's trust authentication applies.
#
# What pgpool 4.3 does, as measured with this file (see the demonstration):
# - The cache key is the exact query text (user, database, text, and Bind
#   parameters): "SELECT 1" and "SELECT 1;" are two entries. Warm with the
#   very script pgbench runs (pgpool_pgbench -n -t 1 -f SCRIPT).
# - Only SELECTs on tables, without non-immutable functions: a call of a
#   STABLE/VOLATILE function (e.g. cached_list_employees()) always reaches
#   PostgreSQL; count(*) and plain page queries are cached.
# - -M simple hits never reach PostgreSQL. -M prepared hits skip Execute but
#   pgpool still forwards Bind (and Sync) to PostgreSQL, a round trip per hit.
# - Only writes sent through pgpool invalidate; a write made directly on the
#   cluster leaves pgpool serving the old rows (memqcache_expire = 0).
# - More than CLIENTS + 2 concurrent clients block until a child is free
#   (num_init_children, documented).
# - Call pgpool_stop before bench_start or bench_stop: bench_start wipes
#   BENCH_DIR, pgpool's pid file with it.
#
# Run directly (bash bench/pgpool.sh) it demonstrates itself on a throwaway
# cluster: a 20-row page_snapshot read through pgpool and directly, -M simple
# and -M prepared, with the pg_stat_statements proof that hits never reach
# PostgreSQL. Installing: apt-get install -y pgpool2 (Debian 12: 4.3.5), then
# keep the packaged service off (update-rc.d pgpool2 disable). Not run by CI.
PGPOOL_BIN=/usr/sbin/pgpool

pgpool_require() {
  if [ ! -x "$PGPOOL_BIN" ]; then
    echo "pgpool-II is not installed: apt-get install -y pgpool2, then stop and disable its" >&2
    echo "packaged service (update-rc.d pgpool2 disable; systemctl disable pgpool2) so that" >&2
    echo "it does not hold port 5433." >&2
    exit 1
  fi
}

pgpool_start() {  # PORT BACKEND_SOCKET_DIR BACKEND_PORT [CLIENTS]
  local port=$1 backend_dir=$2 backend_port=$3 clients=${4:-8} dir=$BENCH_DIR/pgpool
  pgpool_require
  pgpool_stop
  PGPOOL_PORT=$port
  rm -rf "$dir"
  mkdir -p "$dir/pcp" "$dir/oiddir"
  # pcp.conf must exist even though nobody uses pcp here.
  : >"$dir/pcp.conf"
  # One child per client plus two for psql (SHOW pool_cache, setup); each
  # child keeps one cached backend connection (max_pool = 1), so the cluster
  # sees at most num_init_children connections from pgpool.
  cat >"$dir/pgpool.conf" <<EOF
backend_clustering_mode = 'raw'
listen_addresses = ''
port = $port
socket_dir = '$dir'
pcp_listen_addresses = ''
pcp_port = $port
pcp_socket_dir = '$dir/pcp'
wd_ipc_socket_dir = '$dir'
pid_file_name = '$dir/pgpool.pid'
logdir = '$dir'
log_destination = 'stderr'
log_min_messages = warning
backend_hostname0 = '$backend_dir'
backend_port0 = $backend_port
backend_weight0 = 1
backend_flag0 = 'DISALLOW_TO_FAILOVER'
enable_pool_hba = off
pool_passwd = ''
num_init_children = $((clients + 2))
max_pool = 1
connection_cache = on
child_life_time = 0
child_max_connections = 0
connection_life_time = 0
load_balance_mode = off
health_check_period = 0
sr_check_period = 0
failover_on_backend_error = off
use_watchdog = off
memory_cache_enabled = on
memqcache_method = 'shmem'
memqcache_total_size = 64MB
memqcache_max_num_cache = 100000
memqcache_cache_block_size = 1MB
memqcache_maxcache = 512kB
memqcache_expire = 0
memqcache_auto_cache_invalidation = on
memqcache_oiddir = '$dir/oiddir'
EOF
  chown -R postgres "$dir"
  # -n: stay in the foreground (our background job), -D: forget any node
  # status file, so the backend is never remembered as down.
  as_pg "$PGPOOL_BIN" -n -D -f "$dir/pgpool.conf" -F "$dir/pcp.conf" \
    >>"$dir/pgpool.log" 2>&1 </dev/null &
  local i
  for i in $(seq 1 100); do
    if pgpool_psql -c 'SHOW pool_version' >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "pgpool did not accept connections on $dir port $port; its log:" >&2
  tail -n 30 "$dir/pgpool.log" >&2
  pgpool_stop
  return 1
}

pgpool_psql() { as_pg "$BENCH_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_DIR/pgpool" -p "$PGPOOL_PORT" -d postgres "$@"; }
pgpool_pgbench() { as_pg "$BENCH_BIN/pgbench" -h "$BENCH_DIR/pgpool" -p "$PGPOOL_PORT" "$@" postgres; }

pgpool_cache_stats() {
  pgpool_psql -At -F' ' -c 'SHOW pool_cache' | awk '{print $1, $2}'
}

# What reached PostgreSQL, read on the cluster itself (bypassing pgpool)
# from pg_stat_statements (track = all in bench/cluster.sh): "calls rows"
# summed over the statements whose text is LIKE the pattern. Count rows, not
# calls, to tell executions: with the extended protocol pgpool still forwards
# each Bind, and PostgreSQL starts the executor at Bind, so the dropped,
# never executed portal still adds a call (with 0 rows).
backend_statement_counts() {  # LIKE_PATTERN
  bench_psql -At -F' ' -v pattern="$1" <<'SQL'
SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0) FROM pg_stat_statements WHERE query LIKE :'pattern';
SQL
}

pgpool_stop() {
  local dir=$BENCH_DIR/pgpool pid command i
  [ -f "$dir/pgpool.pid" ] || return 0
  pid=$(tr -cd '0-9' <"$dir/pgpool.pid")   # pgpool pads the file with a NUL
  # Only our pgpool: a stale pid file must never signal a recycled pid.
  command=$([ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
  if [[ $command == *"-f $dir/pgpool.conf"* ]]; then
    kill -INT "$pid"   # pgpool's fast shutdown: it does not wait for clients
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$dir/pgpool.pid"
}

# --- Demonstration, when run rather than sourced -----------------------------
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BENCH_PORT=${BENCH_PORT:-55473}
  BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_pgpool}
  . "$SRC/bench/cluster.sh"
  POOL_PORT=${POOL_PORT:-$((BENCH_PORT + 1))} SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
  pgpool_require
  pgpool_stop   # before bench_start wipes BENCH_DIR, pid file included
  trap 'pgpool_stop; bench_stop' EXIT
  bench_start
  bench_psql <<'SQL'
CREATE TABLE page_snapshot (id bigint PRIMARY KEY, full_name text NOT NULL, title text NOT NULL,
                            department text NOT NULL, total bigint NOT NULL);
INSERT INTO page_snapshot
  SELECT g, 'Employee ' || g, 'Title ' || g % 7, 'Department ' || g % 5, 500000 FROM generate_series(1, 20) g;
SQL
  echo 'SELECT * FROM page_snapshot;' >"$BENCH_DIR/page.sql" && chown postgres "$BENCH_DIR/page.sql"
  pgpool_start "$POOL_PORT" "$BENCH_DIR" "$BENCH_PORT" 8
  field() { grep -oE "$1" | grep -oE '[0-9.]+' | head -n 1; }
  echo "Machine: $(machine_description)"
  echo "pgpool: $("$PGPOOL_BIN" --version 2>&1), raw mode, memqcache_method = shmem."
  echo "pgbench -c 8 -j 2 -T $SECONDS_PER_RUN -f page.sql (SELECT * FROM page_snapshot;, 20 rows), after one"
  echo "warming transaction through pgpool per protocol. pg_stat_statements read on the cluster directly;"
  echo "rows / 20 = page queries PostgreSQL executed (calls also counts Binds that never execute)."
  echo
  echo '| protocol | path | TPS | transactions | pgss calls | pgss rows | pgpool num_cache_hits |'
  echo '|---|---|---|---|---|---|---|'
  for protocol in simple prepared; do
    # The cache key is the exact text (with its ';'), so warm with pgbench itself.
    pgpool_pgbench -n -M "$protocol" -c 1 -t 1 -f "$BENCH_DIR/page.sql" >/dev/null 2>&1
    for path in pgpool direct; do
      read -r calls_before rows_before < <(backend_statement_counts 'SELECT * FROM page_snapshot%')
      read -r hits_before _ < <(pgpool_cache_stats)
      if [ "$path" = pgpool ]; then run=pgpool_pgbench; else run=bench_pgbench; fi
      out=$($run -n -M "$protocol" -c 8 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/page.sql" 2>&1)
      read -r hits_after _ < <(pgpool_cache_stats)
      read -r calls_after rows_after < <(backend_statement_counts 'SELECT * FROM page_snapshot%')
      echo "| $protocol | $path | $(field 'tps = [0-9.]+ \(without' <<<"$out") | $(field 'actually processed: [0-9]+' <<<"$out") |" \
           "$((calls_after - calls_before)) | $((rows_after - rows_before)) | $((hits_after - hits_before)) |"
    done
  done
fi
