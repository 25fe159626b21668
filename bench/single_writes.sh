#!/usr/bin/env bash
# What watching costs a writer of single rows: pgbench TPS of a one-row
# UPDATE (by primary key) and a one-row INSERT on a table that is not
# watched, watched, watched with deltas (memo.watch(t, deltas => true)),
# watched with deltas and the scope column n (memo.watch(t, true, '{n}'):
# the UPDATE marks the scopes of its old and new n, the INSERT of its n), and
# watched with pg_memo.standby_records on (one WAL record before each
# committed write's commit record). The modes take turns on the same tables (memo.unwatch / memo.watch
# between runs), round after round, after one unrecorded round; each run is
# preceded by a restart, VACUUM and CHECKPOINT. Reports the median TPS of each mode and
# its ratio to the unwatched median.
#
#   bench/single_writes.sh [--seconds S] [--rounds N] [--clients C] [--modes "unwatched deltas ..."]
#                          (defaults 10, 5, 4, all five modes: about 7 minutes)
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55476}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_single}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
SECS=10 ROUNDS=5 CLIENTS=4 MODES="unwatched watched deltas scopes records"
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT
bench_start
bench_psql >/dev/null <<'SQL'
CREATE TABLE upd (id bigint PRIMARY KEY, n bigint NOT NULL, note text NOT NULL) WITH (fillfactor = 50);
INSERT INTO upd SELECT g, 0, md5(g::text) FROM generate_series(1, 100000) g;
CREATE TABLE ins (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, n bigint NOT NULL, note text NOT NULL);
VACUUM ANALYZE upd;
SQL
printf '%s\n' '\set id random(1, 100000)' 'UPDATE upd SET n = n + 1 WHERE id = :id;' >"$BENCH_DIR/update.sql"
printf '%s\n' "INSERT INTO ins (n, note) VALUES (1, 'a note of some thirty characters');" >"$BENCH_DIR/insert.sql"
chown postgres "$BENCH_DIR"/*.sql

set_mode() {  # unwatched | watched | deltas | scopes | records
  local t records=off
  [ "$1" = records ] && records=on
  # A postmaster setting: every mode restarts the cluster, for fairness.
  bench_psql -c "ALTER SYSTEM SET pg_memo.standby_records = $records" >/dev/null
  bench_restart
  for t in upd ins; do
    case $1 in
      unwatched) bench_psql -c "SELECT memo.unwatch('$t')" ;;
      watched | records) bench_psql -c "SELECT memo.watch('$t')" ;;
      deltas) bench_psql -c "SELECT memo.watch('$t', deltas => true)" ;;
      scopes) bench_psql -c "SELECT memo.watch('$t', true, '{n}')" ;;
    esac >/dev/null
  done
  bench_psql -c 'VACUUM upd' -c 'VACUUM ins' -c 'CHECKPOINT' >/dev/null
}

run() {  # SCRIPT: prints TPS
  bench_pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" -f "$BENCH_DIR/$1.sql" >"$BENCH_DIR/run.out" 2>&1 ||
    { cat "$BENCH_DIR/run.out" >&2; return 1; }
  tps_of "$BENCH_DIR/run.out"
}

declare -A tps
for round in $(seq 0 "$ROUNDS"); do
  for mode in $MODES; do
    set_mode "$mode"
    for script in update insert; do
      t=$(run "$script")
      [ "$round" -gt 0 ] && tps[$mode.$script]+="$t "
    done
  done
done

echo "Machine: $(machine_description)"
echo
echo "pgbench -M prepared -c $CLIENTS -j 2 -T $SECS, median of $ROUNDS rounds (after one unrecorded round)."
echo
echo '| write | unwatched TPS | watched TPS | watched / unwatched | deltas TPS | deltas / unwatched | scopes TPS | scopes / unwatched | standby records TPS | records / unwatched | runs (unwatched / watched / deltas / scopes / records) |'
echo '|---|---|---|---|---|---|---|---|---|---|---|'
for script in update insert; do
  for mode in unwatched watched deltas scopes records; do [ -n "${tps[$mode.$script]:-}" ] || tps[$mode.$script]=0; done
  u=$(printf '%s\n' ${tps[unwatched.$script]} | median)
  w=$(printf '%s\n' ${tps[watched.$script]} | median)
  d=$(printf '%s\n' ${tps[deltas.$script]} | median)
  c=$(printf '%s\n' ${tps[scopes.$script]} | median)
  r=$(printf '%s\n' ${tps[records.$script]} | median)
  awk -v s="$script" -v u="$u" -v w="$w" -v d="$d" -v c="$c" -v r="$r" -v ru="${tps[unwatched.$script]}" \
      -v rw="${tps[watched.$script]}" -v rd="${tps[deltas.$script]}" -v rc="${tps[scopes.$script]}" \
      -v rr="${tps[records.$script]}" 'BEGIN {
    printf "| single-row %s | %.0f | %.0f | %.3f | %.0f | **%.3f** | %.0f | **%.3f** | %.0f | **%.3f** | %s / %s / %s / %s / %s |\n",
      toupper(s), u, w, w / u, d, d / u, c, c / u, r, r / u, ru, rw, rd, rc, rr }'
done
