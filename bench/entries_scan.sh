#!/usr/bin/env bash
# What reading memo.entries costs: the wall time of SELECT count(*) FROM
# memo.entries over N cached entries, and the TPS and latency of a hot
# memo.count hit while such scans run back to back, against no scan and
# against a query of the same CPU cost that takes no pg_memo lock (the two
# cores are shared: a scan takes CPU from the hits whatever it locks). The
# three are alternated, rounds times, medians. Prints a Markdown table.
#
#   bench/entries_scan.sh [--entries N] [--rounds R] [--seconds S]
# PG_BINDIR: the PostgreSQL binaries whose pg_memo is used (default the
# system's). Needs root. Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55472}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_entries}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
BENCH_BIN=${PG_BINDIR:-$BENCH_BIN}
ENTRIES=1000000 ROUNDS=3 SECONDS_PER_RUN=15
while [ $# -gt 0 ]; do
  case $1 in
    --entries) ENTRIES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap 'kill_loop; bench_stop' EXIT
# About 600 bytes an entry with its key: 2 GB holds a million with room.
bench_start "pg_memo.cache_size = '2GB'" "shared_buffers = '128MB'"

# The entries, 50,000 calls a statement.
for ((from = 1; from <= ENTRIES; from += 50000)); do
  to=$((from + 49999 < ENTRIES ? from + 49999 : ENTRIES))
  bench_psql -c "SELECT count(memo.count('fill', 'SELECT \$1::int', ARRAY[g::text])) FROM generate_series($from, $to) g" >/dev/null
done
stored=$(bench_psql -At -c 'SELECT entries FROM memo.info')
evicted=$(bench_psql -At -c 'SELECT evictions FROM memo.info')
bench_psql -c "SELECT memo.count('hot', 'SELECT \$1::int + 0', '{7}')" >/dev/null
echo "SELECT memo.count('hot', 'SELECT \$1::int + 0', '{7}');" >"$BENCH_DIR/hot.sql"
chown postgres "$BENCH_DIR/hot.sql"

scan_ms() {  # one scan's wall time, in ms
  bench_psql -c '\timing on' -c 'SELECT count(*) FROM memo.entries' | grep -oE '^Time: [0-9.]+' | grep -oE '[0-9.]+'
}
temp_bytes() { bench_psql -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = 'postgres'"; }
scans=()
temp_before=$(temp_bytes)
for i in 1 2 3; do scans+=("$(scan_ms)"); done
sleep 1  # the statistics collector's report
temp_per_scan=$(( ($(temp_bytes) - temp_before) / 3 / 1048576 ))
scan=$(printf '%s\n' "${scans[@]}" | median)
# A query of about the scan's CPU time that reads no pg_memo structure.
series=$(awk -v ms="$scan" 'BEGIN {printf "%d", ms * 9000}')  # generate_series does ~9 rows a µs here
control_ms() {
  bench_psql -c '\timing on' -c "SELECT count(*) FROM generate_series(1, $series)" | grep -oE '^Time: [0-9.]+' | grep -oE '[0-9.]+'
}
control=$(control_ms)

# The loop runs the statement until told to stop, and is waited for: a
# statement still running would take CPU from the next variant's run.
LOOP_PID=
kill_loop() {
  if [ -n "$LOOP_PID" ]; then touch "$BENCH_DIR/stop"; wait "$LOOP_PID" 2>/dev/null || true; LOOP_PID=; fi
}
start_loop() {  # $1 = the statement to run back to back
  rm -f "$BENCH_DIR/stop"
  (while [ ! -e "$BENCH_DIR/stop" ]; do bench_psql -c "$1" >/dev/null; done) &
  LOOP_PID=$!
}
# One pgbench run of the hit; prints "tps p99_ms max_ms".
hit_run() {  # $1 = name for the log
  rm -f "$BENCH_DIR"/log_"$1".*
  local tps
  tps=$(bench_pgbench -n -M prepared -c 4 -j 2 -T "$SECONDS_PER_RUN" -l --log-prefix="$BENCH_DIR/log_$1" \
          -f "$BENCH_DIR/hot.sql" 2>&1 | grep -oE 'tps = [0-9.]+ \(without' | grep -oE '[0-9.]+')
  read -r _ _ p99 max < <(latency_percentiles "$BENCH_DIR"/log_"$1".*)
  echo "$tps $p99 $max"
}
declare -A tps p99 max
for variant in none scan control; do tps[$variant]="" p99[$variant]="" max[$variant]=""; done
for round in $(seq 1 "$ROUNDS"); do
  for variant in none scan control; do
    case $variant in
      scan) start_loop 'SELECT count(*) FROM memo.entries' ;;
      control) start_loop "SELECT count(*) FROM generate_series(1, $series)" ;;
    esac
    read -r t p m < <(hit_run "$variant")
    kill_loop
    tps[$variant]+="$t " p99[$variant]+="$p " max[$variant]+="$m "
  done
done
med() { tr ' ' '\n' | grep . | median; }

echo "Machine: $(machine_description)"
echo "$stored entries ($evicted evicted while filling), pg_memo.cache_size = 2GB."
echo "SELECT count(*) FROM memo.entries: ${scans[*]} ms (median $scan ms), $temp_per_scan MB of temporary files a scan (work_mem 4MB); the control query: $control ms."
echo "pgbench -M prepared -c 4 -j 2 -T $SECONDS_PER_RUN of a memo.count hit, $ROUNDS rounds alternated, medians."
echo
echo '| while the hits run | TPS | p99 latency (ms) | max latency (ms) | runs (TPS) |'
echo '|---|---|---|---|---|'
for variant in none scan control; do
  case $variant in
    none) label='nothing else' ;;
    scan) label='`SELECT count(*) FROM memo.entries`, back to back' ;;
    control) label="\`SELECT count(*) FROM generate_series(1, $series)\`, back to back (same CPU, no pg_memo lock)" ;;
  esac
  echo "| $label | $(echo "${tps[$variant]}" | med) | $(echo "${p99[$variant]}" | med) | $(echo "${max[$variant]}" | med) | ${tps[$variant]}|"
done
