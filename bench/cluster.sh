# Shared helpers for the benchmark scripts (sourced, not run).
# A benchmark cluster lives under /tmp, listens only on a unix socket on a
# non-default port, runs as the postgres OS user, and is stopped by its
# postmaster.pid: never by a broad kill.
BENCH_BIN=/usr/lib/postgresql/15/bin
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench}
BENCH_PORT=${BENCH_PORT:-55470}
# Libraries to preload; pg_stat_statements is also created when listed.
BENCH_PRELOAD=${BENCH_PRELOAD:-pg_memo, pg_stat_statements}

as_pg() { runuser -u postgres -- "$@"; }
bench_psql() { as_pg "$BENCH_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_DIR" -p "$BENCH_PORT" -d postgres "$@"; }
bench_pgbench() { as_pg env PGOPTIONS="${PGOPTIONS:-}" "$BENCH_BIN/pgbench" -h "$BENCH_DIR" -p "$BENCH_PORT" "$@" postgres; }

# bench_start [extra postgresql.conf lines...]
bench_start() {
  bench_stop
  rm -rf "$BENCH_DIR"
  mkdir -p "$BENCH_DIR" && chown postgres "$BENCH_DIR"
  as_pg "$BENCH_BIN/initdb" -D "$BENCH_DIR/data" -A trust >/dev/null
  {
    echo "port = $BENCH_PORT"
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$BENCH_DIR'"
    echo "max_connections = 300"
    echo "shared_buffers = '1GB'"
    echo "jit = off"
    echo "shared_preload_libraries = '$BENCH_PRELOAD'"
    [[ $BENCH_PRELOAD == *pg_stat_statements* ]] && echo "pg_stat_statements.track = all"
    echo "autovacuum = off"
    for line in "$@"; do echo "$line"; done
  } >>"$BENCH_DIR/data/postgresql.conf"
  as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w start >/dev/null
  bench_psql -c 'CREATE EXTENSION pg_memo'
  if [[ $BENCH_PRELOAD == *pg_stat_statements* ]]; then bench_psql -c 'CREATE EXTENSION pg_stat_statements'; fi
}

# The 400,000-row table both generic benchmarks read, watched.
bench_create_items() {
  bench_psql <<'SQL'
CREATE TABLE stampede_items (id bigint PRIMARY KEY, category int NOT NULL, payload text NOT NULL);
INSERT INTO stampede_items
  SELECT g, g % 100, md5(g::text) || md5((g * 7)::text) FROM generate_series(1, 400000) g;
CREATE INDEX ON stampede_items (category);
ANALYZE stampede_items;
SELECT memo.watch('stampede_items');
SQL
}

# Two builds in one run (A/B): bench_library_keep saves the system's
# pg_memo.so (bench_library_restore puts it back); bench_use_library SO
# installs SO and restarts the benchmark cluster on it.
BENCH_LIB=$("$BENCH_BIN/pg_config" --pkglibdir)/pg_memo.so
bench_library_keep() { BENCH_KEPT_LIB=$(mktemp /tmp/pg_memo_kept.XXXXXX); cp "$BENCH_LIB" "$BENCH_KEPT_LIB"; }
bench_library_restore() { [ -n "${BENCH_KEPT_LIB:-}" ] && cp "$BENCH_KEPT_LIB" "$BENCH_LIB" && rm -f "$BENCH_KEPT_LIB"; BENCH_KEPT_LIB=; }
bench_use_library() {
  as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -w stop -m fast >/dev/null
  cp "$1" "$BENCH_LIB"
  as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w start >/dev/null
}

bench_restart() { as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w restart -m fast >/dev/null; }

bench_stop() {
  local d
  for d in "$BENCH_DIR/standby" "$BENCH_DIR/data"; do
    if [ -f "$d/postmaster.pid" ]; then as_pg "$BENCH_BIN/pg_ctl" -D "$d" -m fast stop >/dev/null || true; fi
  done
}

# A streaming hot standby of the benchmark cluster on port BENCH_PORT + 1,
# in $BENCH_DIR/standby (its queries delay replay, never cancelled by it).
# The primary must have been started with its replication settings:
# bench_start "${BENCH_PRIMARY_CONF[@]}".
BENCH_PRIMARY_CONF=("pg_memo.standby_records = on" "wal_level = replica" "max_wal_senders = 4")
bench_standby_psql() { as_pg "$BENCH_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_DIR" -p $((BENCH_PORT + 1)) -d postgres "$@"; }
bench_start_standby() {
  echo "local replication all trust" >>"$BENCH_DIR/data/pg_hba.conf"
  bench_psql -c 'SELECT pg_reload_conf()' >/dev/null
  as_pg "$BENCH_BIN/pg_basebackup" -D "$BENCH_DIR/standby" -h "$BENCH_DIR" -p "$BENCH_PORT" -R -X stream --no-sync
  printf 'port = %d\nhot_standby_feedback = on\nmax_standby_streaming_delay = -1\n' $((BENCH_PORT + 1)) \
    >>"$BENCH_DIR/standby/postgresql.conf"
  as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/standby" -l "$BENCH_DIR/standby.log" -w start >/dev/null
  # The standby serves from the primary's first pg_memo record: watching a
  # table commits one.
  bench_psql -c 'CREATE TABLE bench_hello (id int)' -c "SELECT memo.watch('bench_hello')" >/dev/null
  bench_standby_caught_up
}
# Waits until the standby has replayed everything the primary wrote.
bench_standby_caught_up() {
  bench_psql -c 'SELECT pg_current_xact_id()' >/dev/null  # flushes what is not yet
  until [ "$(bench_psql -At -c 'SELECT count(*) FROM pg_stat_replication WHERE replay_lsn >= pg_current_wal_lsn()')" = 1 ]; do
    sleep 0.1
  done
}

# Percentiles of pgbench per-transaction logs (3rd field: latency in us).
# Prints "p50 p95 p99 max" in milliseconds.
latency_percentiles() {
  cat "$@" | awk '{print $3}' | sort -n | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "- - - -"; exit }
      p50 = v[int(NR * 0.50) > 0 ? int(NR * 0.50) : 1]
      p95 = v[int(NR * 0.95) > 0 ? int(NR * 0.95) : 1]
      p99 = v[int(NR * 0.99) > 0 ? int(NR * 0.99) : 1]
      printf "%.1f %.1f %.1f %.1f\n", p50 / 1000, p95 / 1000, p99 / 1000, v[NR] / 1000
    }'
}

# Reading pgbench's output and summarising runs.
# The middle value; for an even count, the mean of the two middle values.
median() { sort -n | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
tps_of() { grep -oE 'tps = [0-9.]+ \(without' "$1" | grep -oE '[0-9.]+'; }
latency_of() { grep -oE 'latency average = [0-9.]+' "$1" | grep -oE '[0-9.]+$'; }
served_of() { grep -oE 'number of transactions actually processed: [0-9]+' "$1" | grep -oE '[0-9]+$'; }

machine_description() {
  echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(. /etc/os-release; echo "$PRETTY_NAME"), $("$BENCH_BIN/postgres" --version)"
}
