#!/usr/bin/env bash
# docs/monitoring/postgres_exporter.yml against Debian's
# prometheus-postgres-exporter, end to end, as root on Debian 12 with pg_memo
# installed (scripts/build.sh) and `apt-get install
# prometheus-postgres-exporter curl`.
#
# Starts a temporary PostgreSQL 15 cluster (a postgres-owned folder under
# /tmp, unix socket only, port $PG_MEMO_EXPORTER_PGPORT or 5497, pg_memo
# preloaded), makes a miss and a hit on a cache name, a call in another
# database, a flight with a waiter, a write that invalidates an entry, a
# bypass, a failed computation and a refused plan; runs the exporter as the
# postgres OS user, connected as a role that has only pg_monitor, on a free
# localhost port; scrapes /metrics with curl and checks the series and their
# values. Prints each check, ends with `N passed, M failed`, exits non-zero
# on a failure. Also checks docs/monitoring.md's tables and the alerting rules
# against the scrape, and with promtool (package prometheus) runs the rules'
# unit tests. The exporter (by its pid) and the cluster (pg_ctl on its data
# directory) are always stopped. KEEP=1 keeps the folder for a look;
# PG_MEMO_EXPORTER_ARGS adds flags to the exporter's command line (e.g.
# --auto-discover-databases).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=/usr/lib/postgresql/15/bin
EXPORTER=/usr/bin/prometheus-postgres-exporter
QUERIES="$SRC/docs/monitoring/postgres_exporter.yml"
PGPORT=${PG_MEMO_EXPORTER_PGPORT:-5497}

die() { echo "test-exporter: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (initdb and the exporter run as the postgres OS user)"
id postgres >/dev/null 2>&1 || die "no postgres OS user: apt-get install postgresql-15"
[ -x "$BIN/initdb" ] || die "$BIN/initdb missing: apt-get install postgresql-15"
[ -x "$EXPORTER" ] || die "$EXPORTER missing: apt-get install prometheus-postgres-exporter"
command -v curl >/dev/null || die "curl missing: apt-get install curl"
[ -f "$("$BIN/pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/pg_memo.so" ] \
  || die "pg_memo is not installed (scripts/build.sh)"
[ -f "$QUERIES" ] || die "$QUERIES missing"

WORK=$(mktemp -d /tmp/pg_memo_exporter.XXXXXX)
chown postgres: "$WORK"
chmod 700 "$WORK"
DATA="$WORK/data"
EXPORTER_PID=
BG_PIDS=()

as_pg() { runuser -u postgres -- "$@"; }
# psql as the superuser postgres: psql_in DB [psql args...]
psql_in() { local db=$1; shift; as_pg "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$PGPORT" -d "$db" "$@"; }

cleanup() {
  local rc=$?
  set +e
  # Interrupted while the exporter was starting: its pid is in the file.
  [ -z "$EXPORTER_PID" ] && [ -s "$WORK/exporter.pid" ] && EXPORTER_PID=$(cat "$WORK/exporter.pid")
  if [ -n "$EXPORTER_PID" ] && kill -0 "$EXPORTER_PID" 2>/dev/null; then
    kill "$EXPORTER_PID"
    for _ in $(seq 50); do kill -0 "$EXPORTER_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -f "$DATA/postmaster.pid" ]; then
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 \
      || as_pg "$BIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1
  fi
  # Our background jobs (runuser of the exporter and of psql sessions) end
  # with the exporter and the cluster; give them 5 s, then stop them.
  for pid in "${BG_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the cluster ------------------------------------------------------------
as_pg "$BIN/initdb" -D "$DATA" -A trust --no-sync >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log"; die "initdb failed"; }
cat >>"$DATA/postgresql.conf" <<CONF
port = $PGPORT
listen_addresses = ''
unix_socket_directories = '$WORK'
shared_preload_libraries = 'pg_memo'
pg_memo.cache_size = '8MB'
fsync = off
CONF
as_pg "$BIN/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w start >/dev/null || { cat "$WORK/server.log"; die "the cluster did not start"; }

psql_in postgres <<'SQL'
CREATE DATABASE memo_test;
CREATE DATABASE memo_other;
CREATE ROLE memo_monitor LOGIN IN ROLE pg_monitor;
SQL
psql_in memo_test <<'SQL' >/dev/null
CREATE EXTENSION pg_memo;
CREATE TABLE t (id int PRIMARY KEY, k text);
INSERT INTO t SELECT g, 'k' || (g % 3) FROM generate_series(1, 30) g;
SELECT memo.watch('t');
SELECT memo.count('x', 'SELECT * FROM t WHERE k = $1', '{k1}');   -- miss
SELECT memo.count('x', 'SELECT * FROM t WHERE k = $1', '{k1}');   -- hit
SQL
psql_in memo_other <<'SQL' >/dev/null
CREATE EXTENSION pg_memo;
CREATE TABLE u (id int);
INSERT INTO u VALUES (1), (2);
SELECT memo.watch('u');
SELECT memo.count('y', 'SELECT * FROM u');                        -- miss
SQL

# --- the exporter -----------------------------------------------------------
cp "$QUERIES" "$WORK/queries.yml" && chown postgres: "$WORK/queries.yml"
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
DSN="host=$WORK port=$PGPORT user=memo_monitor dbname=memo_test sslmode=disable"
for EPORT in $(seq 19187 19286); do
  port_free "$EPORT" || continue
  # The shell writes its pid and execs the exporter: that pid is the exporter.
  # shellcheck disable=SC2016,SC2086  # $$ is the inner shell's; extra flags split
  # DATA_SOURCE_NAME and --extend.query-path as in
  # /etc/default/prometheus-postgres-exporter (docs/monitoring.md).
  runuser -u postgres -- env DATA_SOURCE_NAME="$DSN" \
    sh -c 'echo $$ >"$0/exporter.pid"; exec "$@"' "$WORK" "$EXPORTER" \
    --extend.query-path="$WORK/queries.yml" --web.listen-address="127.0.0.1:$EPORT" --disable-settings-metrics ${PG_MEMO_EXPORTER_ARGS:-} \
    >"$WORK/exporter.log" 2>&1 &
  BG_PIDS+=($!)
  for _ in $(seq 50); do [ -s "$WORK/exporter.pid" ] && break; sleep 0.1; done
  EXPORTER_PID=$(cat "$WORK/exporter.pid")
  up=
  for _ in $(seq 100); do
    # Any HTTP answer: it listens (a failed scrape is reported below).
    [ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics")" != 000 ] && { up=1; break; }
    kill -0 "$EXPORTER_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$up" ] && break
  # Lost a race for the port (or failed): stop it and try the next one.
  kill "$EXPORTER_PID" 2>/dev/null || true
  EXPORTER_PID=
  rm -f "$WORK/exporter.pid"
  grep -q "address already in use" "$WORK/exporter.log" || { cat "$WORK/exporter.log"; die "the exporter did not start"; }
done
[ -n "$EXPORTER_PID" ] || die "no free port for the exporter in 19187-19286"
echo "cluster on $WORK port $PGPORT; exporter pid $EXPORTER_PID on 127.0.0.1:$EPORT ($("$EXPORTER" --version 2>&1 | head -1))"

# --- checks -----------------------------------------------------------------
PASS=0 FAIL=0
SCRAPE="$WORK/metrics.txt"
scrape() {
  local code
  code=$(curl -s --max-time 10 -o "$SCRAPE" -w '%{http_code}' "http://127.0.0.1:$EPORT/metrics")
  if [ "$code" != 200 ]; then
    echo "FAIL  scrape: HTTP $code" >&2; head -c 2000 "$SCRAPE" >&2; tail -5 "$WORK/exporter.log" >&2
    echo "$PASS passed, $((FAIL + 1)) failed"; exit 1
  fi
}

# value NAME [label="value" ...]: the value of the one series of NAME that has
# all these labels (in any order), or nothing.
value() {
  local name=$1; shift
  awk -v name="$name" -v want="$*" '
    BEGIN { n = split(want, w, " ") }
    index($0, name "{") == 1 || $1 == name {
      ok = 1
      for (i = 1; i <= n; i++) if (index($0, w[i]) == 0) ok = 0
      if (ok) { print $NF; found++ }
    }
    END { if (found > 1) print "DUPLICATE" }' "$SCRAPE" | tail -1
}

report() {  # report OK DESCRIPTION
  if [ "$1" = 1 ]; then PASS=$((PASS + 1)); echo "ok    $2"; else FAIL=$((FAIL + 1)); echo "FAIL  $2"; fi
}

# check OP EXPECTED NAME [LABELS]: OP is eq, gt or ge (numeric); LABELS are
# label="value" pairs separated by spaces.
check() {
  local op=$1 want=$2 name=$3; shift 3
  local got ok=0 labels=""
  got=$(value "$name" "$@")
  [ $# -gt 0 ] && labels="{$(echo "$*" | tr ' ' ,)}"
  if [ -n "$got" ] && [ "$got" != DUPLICATE ] &&
     awk -v g="$got" -v w="$want" -v op="$op" 'BEGIN { g += 0; w += 0;
       exit !((op == "eq" && g == w) || (op == "gt" && g > w) || (op == "ge" && g >= w)) }'; then ok=1; fi
  local sym; case $op in eq) sym="=";; gt) sym=">";; ge) sym=">=";; esac
  report $ok "$name$labels $sym $want (got ${got:-no series})"
}

check_type() {  # check_type NAME counter|gauge
  if grep -qx "# TYPE $1 $2" "$SCRAPE"; then report 1 "$1 is a $2"; else report 0 "$1 is a $2 ($(grep "# TYPE $1 " "$SCRAPE" || echo 'no TYPE line'))"; fi
}

wait_for() {  # wait_for DESCRIPTION SQL: until SQL (in memo_test) returns t, 30 s at most
  for _ in $(seq 300); do [ "$(psql_in memo_test -c "$2")" = t ] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

X='cache_name="x" datname="memo_test"'
Y='cache_name="y" datname="memo_other"'

echo "-- scrape 1: one miss and one hit on x, one miss on y in another database"
scrape
report "$([ "$(psql_in postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'memo_monitor'")" = f ] && echo 1 || echo 0)" \
  "the exporter's role memo_monitor is not a superuser (pg_monitor only)"
check eq 1 pg_up
check eq 0 pg_exporter_last_scrape_error
check eq 0 pg_exporter_user_queries_load_error
check eq 1 pg_memo_hits_total "$X"
check eq 1 pg_memo_misses_total "$X"
check eq 1 pg_memo_computations_total "$X"
check eq 2 pg_memo_calls_total "$X"
check eq 0 pg_memo_bypasses_total "$X"
check eq 0 pg_memo_invalidations_total "$X"
check eq 0 pg_memo_waits_total "$X"
check eq 1 pg_memo_entries "$X"
check gt 0 pg_memo_entry_bytes "$X"
check ge 0 pg_memo_compute_seconds_total "$X"
check gt 1e9 pg_memo_stats_reset_timestamp_seconds "$X"
check eq 1 pg_memo_misses_total "$Y"
check eq 0 pg_memo_hits_total "$Y"
check eq 0 pg_memo_failures_total "$X"
check eq 0 pg_memo_refused_plans_total "$X"
check eq 0 pg_memo_refused_plans_total "$Y"
for c in hits misses computations bypasses invalidations evictions too_large shared waits takeovers \
         wait_timeouts double_check_hits flight_full delta_kept delta_corrected delta_fallbacks \
         stale_hits stale_on_error_hits error_hits failures refused_plans calls compute_seconds wait_seconds; do
  check_type "pg_memo_${c}_total" counter
done
check_type pg_memo_entries gauge
check_type pg_memo_entry_bytes gauge
check eq 8388608 pg_memo_arena_size_bytes
check gt 0 pg_memo_arena_used_bytes
check gt 0 pg_memo_arena_free_bytes
check eq 2 pg_memo_arena_entries
check eq 0 pg_memo_arena_evictions_total
check_type pg_memo_arena_used_bytes gauge
check_type pg_memo_arena_evictions_total counter
check gt 0 pg_memo_delta_log_size_bytes
check ge 0 pg_memo_delta_log_records_total
check eq 0 pg_memo_restored_entries
check eq 0 pg_memo_flights_active
check eq 0 pg_memo_flights_waiters
check eq 0 pg_memo_flights_oldest_age_seconds

echo "-- scrape 2: a flight in progress with one waiter (its leader held back by a table lock)"
# The blocker holds the lock until it is cancelled; the leader of flight
# 'slow' waits on the lock inside its computation; a second call joins the
# flight as a waiter.
printf 'BEGIN;\nLOCK TABLE t IN ACCESS EXCLUSIVE MODE;\nSELECT pg_sleep(60);\nCOMMIT;\n' \
  | as_pg "$BIN/psql" -X -q -h "$WORK" -p "$PGPORT" -d "dbname=memo_test application_name=blocker" >/dev/null 2>&1 &
BG_PIDS+=($!)
wait_for "the blocker's lock" "SELECT count(*) = 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'blocker' AND l.mode = 'AccessExclusiveLock' AND l.granted"
SLOW="SELECT memo.count('slow', 'SELECT * FROM t WHERE k = \$1', '{k2}')"
as_pg "$BIN/psql" -X -At -h "$WORK" -p "$PGPORT" -d "dbname=memo_test application_name=leader" -c "$SLOW" >"$WORK/leader.out" 2>&1 &
BG_PIDS+=($!)
wait_for "the leader to wait on the lock" "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'leader' AND wait_event_type = 'Lock'"
as_pg "$BIN/psql" -X -At -h "$WORK" -p "$PGPORT" -d "dbname=memo_test application_name=waiter" -c "$SLOW" >"$WORK/waiter.out" 2>&1 &
BG_PIDS+=($!)
wait_for "the waiter to join the flight" "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'waiter' AND wait_event_type = 'Extension'"
sleep 0.2
scrape
check eq 1 pg_memo_flights_active
check eq 1 pg_memo_flights_running
check eq 1 pg_memo_flights_waiters
check gt 0 pg_memo_flights_oldest_age_seconds

echo "-- scrape 3: the flight done, then a write to t and x recomputed; a bypass; a failed computation; a refused plan"
psql_in memo_test -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'blocker'" >/dev/null
wait_for "the leader and the waiter to finish" "SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name IN ('leader', 'waiter')"
report "$([ "$(cat "$WORK/leader.out")" = 10 ] && [ "$(cat "$WORK/waiter.out")" = 10 ] && echo 1 || echo 0)" \
  "the leader and the waiter both got 10 (got $(tr '\n' ' ' <"$WORK/leader.out")/ $(tr '\n' ' ' <"$WORK/waiter.out"))"
psql_in memo_test >/dev/null <<'SQL'
INSERT INTO t VALUES (31, 'k1');
SELECT memo.count('x', 'SELECT * FROM t WHERE k = $1', '{k1}');   -- invalidated: miss
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT memo.count('z', 'SELECT * FROM t');                        -- bypass
COMMIT;
DO $$ BEGIN                                                       -- a failed computation
  PERFORM memo.count('f', 'SELECT * FROM t WHERE id / 0 = 1');
EXCEPTION WHEN division_by_zero THEN NULL;
END $$;
-- a registered statement whose function was made VOLATILE: its planning is refused
CREATE FUNCTION dbl(x int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT x * 2';
SELECT memo.cache_statement('SELECT dbl(id) AS v FROM t WHERE id = 2', cache_name => 'r');
ALTER FUNCTION dbl(int) VOLATILE;
SELECT dbl(id) AS v FROM t WHERE id = 2;
SQL
scrape
S='cache_name="slow" datname="memo_test"'
check eq 1 pg_memo_computations_total "$S"
check eq 2 pg_memo_misses_total "$S"
check eq 1 pg_memo_shared_total "$S"
check eq 1 pg_memo_waits_total "$S"
check gt 0 pg_memo_wait_seconds_total "$S"
check gt 0 pg_memo_compute_seconds_total "$S"
check eq 0 pg_memo_flights_active
check eq 0 pg_memo_flights_waiters
check eq 1 pg_memo_invalidations_total "$X"
check eq 2 pg_memo_misses_total "$X"
check eq 2 pg_memo_computations_total "$X"
check eq 3 pg_memo_calls_total "$X"
check eq 3 pg_memo_arena_entries
check eq 1 pg_memo_recompute_reasons_total "$X reason=\"writes\""
check eq 0 pg_memo_failures_total "$X"
Z='cache_name="z" datname="memo_test"'
check eq 1 pg_memo_bypasses_total "$Z"
check eq 1 pg_memo_bypass_reasons_total "$Z reason=\"transaction_snapshot\""
check eq 0 pg_memo_refused_plans_total "$Z"
F='cache_name="f" datname="memo_test"'
check eq 1 pg_memo_calls_total "$F"
check eq 1 pg_memo_failures_total "$F"
check eq 0 pg_memo_computations_total "$F"
check ge 1 pg_memo_refused_plans_total 'cache_name="r" datname="memo_test"'
check_type pg_memo_bypass_reasons_total counter
check_type pg_memo_recompute_reasons_total counter

echo "-- the docs and the alerting rules against the last scrape"
names() { sort -u | sed '/^$/d'; }
scraped=$(grep -o '^# TYPE pg_memo_[a-z_]*' "$SCRAPE" | awk '{print $3}' | names)
# shellcheck disable=SC2016  # backquotes of markdown
documented=$(grep -o '^| `pg_memo_[a-z_]*`' "$SRC/docs/monitoring.md" | tr -d '|` ' | names)
in_rules=$(grep -v '^ *#' "$SRC/docs/monitoring/pg_memo_alerts.yml" | grep -o 'pg_memo_[a-z_]*' | names)
undocumented=$(comm -23 <(echo "$scraped") <(echo "$documented") | xargs)
report "$([ -z "$undocumented" ] && echo 1 || echo 0)" \
  "each of the $(echo "$scraped" | wc -l) pg_memo_ metrics exported has a row in docs/monitoring.md${undocumented:+ (missing: $undocumented)}"
absent=$(comm -13 <(echo "$scraped") <(echo "$documented") | xargs)
report "$([ -z "$absent" ] && echo 1 || echo 0)" "each metric docs/monitoring.md lists is exported${absent:+ (not exported: $absent)}"
absent=$(comm -13 <(echo "$scraped") <(echo "$in_rules") | xargs)
report "$([ -z "$absent" ] && echo 1 || echo 0)" "each metric the alerting rules use is exported${absent:+ (not exported: $absent)}"
if command -v promtool >/dev/null; then
  for cmd in "check rules pg_memo_alerts.yml" "test rules pg_memo_alerts.test.yml"; do
    # shellcheck disable=SC2086
    if out=$(cd "$SRC/docs/monitoring" && promtool $cmd 2>&1); then report 1 "promtool $cmd"
    else report 0 "promtool $cmd"; printf '%s\n' "$out"; fi
  done
else
  report 0 "promtool (Debian package prometheus, from scripts/install-deps.sh) runs the alerting rules' tests: not installed"
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
