#!/usr/bin/env bash
# Checks the window between a commit becoming visible and pg_memo's bump:
# a writing backend is held by gdb in pg_memo's XACT_EVENT_COMMIT callback,
# after its commit became visible to new snapshots and before pg_memo bumps
# the generations (once the commit's invalidations are sent). Meanwhile another session's plain SELECT already
# sees the new row; its next memo.count must not return the old count.
#
#   test/consistency/remaining_window.sh      # as root (gdb attaches to a backend)
#
# Prints the two reads made inside the window and two made after it; exits
# 0 when the read inside the window is fresh (the commit was announced at
# pre-commit, so no entry is served until its bump), 1 when it is stale,
# 2 when the window was not reached. Starts its own
# cluster under /tmp (unix socket, a port in 55600-55699) and stops it.
set -euo pipefail
BINDIR=$(pg_config --bindir)
DIR=$(mktemp -d /tmp/pgm_window.XXXXXX)
chown postgres "$DIR"
PORT=$((55600 + RANDOM % 100))
as_pg() { runuser -u postgres -- "$@"; }
stop() { as_pg "$BINDIR/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap stop EXIT

as_pg "$BINDIR/initdb" -D "$DIR/data" -A trust -U postgres --no-sync >/dev/null
cat >>"$DIR/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_memo'
listen_addresses = ''
unix_socket_directories = '$DIR'
port = $PORT
CONF
as_pg "$BINDIR/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
PSQL="runuser -u postgres -- $BINDIR/psql -h $DIR -p $PORT -X -q -A -t -d postgres"
$PSQL -c "CREATE EXTENSION pg_memo" -c "CREATE TABLE t (id int PRIMARY KEY)" \
      -c "INSERT INTO t VALUES (1)" -c "SELECT memo.watch('t')" >/dev/null
COUNT="SELECT memo.count('window', 'SELECT * FROM t', '{}')"
[ "$($PSQL -c "$COUNT")" = 1 ] || { echo "setup failed" >&2; exit 1; }  # cached now

# The writer: a psql coprocess whose backend gdb holds at the callback.
coproc WRITER { $PSQL; }
echo 'SELECT pg_backend_pid();' >&"${WRITER[1]}"
read -r WPID <&"${WRITER[0]}"
READS="$DIR/in_window.txt"
cat >"$DIR/gdb.cmd" <<GDB
set pagination off
# first argument (x86-64: rdi) 0 = XACT_EVENT_COMMIT
break pgmemo::(anonymous namespace)::memo_xact_callback if \$rdi == 0
commands 1
  shell $PSQL -c "SELECT count(*) FROM t" > $READS; $PSQL -c "$COUNT" >> $READS
  detach
  quit
end
echo attached\\n
continue
GDB
# Bounded: a breakpoint that never fires (a renamed or inlined callback)
# ends as "inconclusive" instead of a hang.
timeout 120 gdb -q -p "$WPID" -batch -x "$DIR/gdb.cmd" >"$DIR/gdb.log" 2>&1 &
GDB_PID=$!
# Wait until gdb has attached and set the breakpoint (it prints "attached").
for _ in $(seq 1 300); do grep -q '^attached' "$DIR/gdb.log" && break; sleep 0.1; done
grep -q '^attached' "$DIR/gdb.log" || { cat "$DIR/gdb.log" >&2; echo "gdb did not attach" >&2; exit 1; }
echo 'INSERT INTO t VALUES (2);' >&"${WRITER[1]}"
wait "$GDB_PID" || true
echo '\q' >&"${WRITER[1]}"

[ -f "$READS" ] || : >"$READS"  # the breakpoint never fired
mapfile -t in_window <"$READS"
after_plain=$($PSQL -c "SELECT count(*) FROM t")
after_memo=$($PSQL -c "$COUNT")
echo "inside the window (writer held in the commit callback, its commit visible):"
echo "  SELECT count(*) FROM t            -> ${in_window[0]:-?}"
echo "  memo.count (the next statement)   -> ${in_window[1]:-?}"
echo "after the callback ran:"
echo "  SELECT count(*) FROM t            -> $after_plain"
echo "  memo.count                        -> $after_memo"
if [ "${in_window[0]:-}" = 2 ] && [ "${in_window[1]:-}" = 2 ]; then
  echo "closed: a session that already sees the commit is not served the result from before it"
  exit 0
fi
if [ "${in_window[0]:-}" = 2 ] && [ "${in_window[1]:-}" = 1 ]; then
  echo "STALE: a session that already sees the commit was served the result from before it"
  exit 1
fi
echo "inconclusive: the window was not reached"
exit 2
