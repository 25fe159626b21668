# Instructions per transaction, counted by callgrind (sourced by
# bench/instructions.sh and bench/unregistered.sh after bench/cluster.sh).
# The postmaster runs under callgrind with --trace-children, so every
# backend writes its own file into $CALLGRIND_OUT as it exits.

# Starts the bench cluster's postmaster under callgrind, its files tagged $1.
callgrind_start() {
  mkdir -p "$CALLGRIND_OUT"
  chown postgres "$CALLGRIND_OUT"
  as_pg valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$CALLGRIND_OUT/$1.%p" \
    "$BENCH_BIN/postgres" -D "$BENCH_DIR/data" >"$BENCH_DIR/valgrind.$1.log" 2>&1 &
  until bench_psql -c 'SELECT 1' >/dev/null 2>&1; do sleep 1; done
}

callgrind_stop() {
  as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -w stop -m fast >/dev/null
  wait || true
}

callgrind_total() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }

# The client's backend: of the callgrind files that appeared, the one with
# the largest total, once it is at least 20,000 instructions a transaction
# above the smallest (a backend writes its file as it exits, some time after
# pgbench returns; every child counts from what the postmaster had counted
# when it forked, so a connection that ran nothing is the baseline:
# callgrind_run opens one after the client's).
callgrind_backend_file() {  # $1 = a file listing the files that were there before, $2 = transactions
  local f t best most least i
  for i in $(seq 1 240); do
    best= most=0 least=
    for f in $(comm -13 "$1" <(ls "$CALLGRIND_OUT" | sort)); do
      t=$(callgrind_total "$CALLGRIND_OUT/$f" || true)
      [ -n "$t" ] || continue
      if [ "$t" -gt "$most" ]; then best=$CALLGRIND_OUT/$f most=$t; fi
      if [ -z "$least" ] || [ "$t" -lt "$least" ]; then least=$t; fi
    done
    if [ -n "$best" ] && [ $((most - least)) -ge $(($2 * 20000)) ]; then echo "$best"; return; fi
    sleep 0.5
  done
  echo "no callgrind file of the client's backend appeared" >&2; exit 1
}

# Runs one pgbench client for $1 transactions (the rest: pgbench's options)
# and prints its backend's file.
callgrind_run() {
  local n=$1 before
  shift
  before=$(mktemp)
  ls "$CALLGRIND_OUT" | sort >"$before"
  bench_pgbench -n -c 1 -t "$n" "$@" >/dev/null 2>&1
  bench_psql -c 'SELECT 1' >/dev/null
  callgrind_backend_file "$before" "$n"
  rm -f "$before"
}

# Instructions per transaction from a SHORT run's file and a LONG run's.
callgrind_per_xact() {  # $1 = short file, $2 = long file, $3 = long - short
  echo "$(callgrind_total "$2") $(callgrind_total "$1")" | awk -v d="$3" '{printf "%.0f", ($1 - $2) / d}'
}
