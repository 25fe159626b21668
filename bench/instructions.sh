#!/usr/bin/env bash
# The hit and miss paths counted in instructions, which this shared
# machine's TPS cannot resolve to a few percent. For each build the
# postmaster runs under callgrind, and one pgbench client (-c 1) runs each
# side SHORT and then LONG transactions, each time in a new backend:
#   hit       the directory's hot page, cached_list_employees(1), a hit
#   snapshot  the 20-row table that holds the same rows (page_snapshot)
#   count     a memo.count hit called directly (the CEO's direct reports)
#   miss      memo.count with a random key each call: every call computes
# A transaction's instructions are the difference of the two backends'
# totals over LONG - SHORT (the backend's start and exit cancel out); the
# same difference per function gives a profile's top entries, B against A,
# for the sides named by --profile. Prints Markdown.
#
#   bench/instructions.sh --a A.so --b B.so [--protocol prepared|simple]
#                         [--short N] [--long N] [--top N] [--profile "hit miss"]
# The extension is created at version 1.0, which every build serves. Leaves
# the system's pg_memo.so as it found it. Needs root, valgrind, pg_memo and
# pg_memo_directory installed (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55479}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_instructions}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
PROTOCOL=prepared SHORT=1000 LONG=3000 TOP=25 PROFILE="hit miss" A= B=
while [ $# -gt 0 ]; do
  case $1 in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    --short) SHORT=$2; shift 2 ;;
    --long) LONG=$2; shift 2 ;;
    --top) TOP=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$A" ] && [ -n "$B" ] || { echo "usage: $0 --a A.so --b B.so [--protocol prepared|simple]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

bench_library_keep
trap 'bench_stop; bench_library_restore' EXIT
bench_start
bench_psql -c "DROP EXTENSION pg_memo; CREATE EXTENSION pg_memo VERSION '1.0'" -c 'CREATE EXTENSION pg_memo_directory'
bench_psql -c 'SELECT directory.directory_seed(100000)' >/dev/null
bench_psql -c 'CREATE TABLE page_snapshot AS SELECT * FROM directory.list_employees(1)' -c 'VACUUM ANALYZE page_snapshot'
printf '%s\n' 'SELECT * FROM directory.cached_list_employees(1);' >"$BENCH_DIR/hit.sql"
printf '%s\n' 'SELECT * FROM page_snapshot;' >"$BENCH_DIR/snapshot.sql"
printf '%s\n' "SELECT memo.count('bench.count', 'SELECT * FROM directory.employees WHERE manager_id = \$1::bigint', '{1}');" \
  >"$BENCH_DIR/count.sql"
printf '%s\n' '\set k random(1, 1000000000)' \
  "SELECT memo.count('bench.miss', 'SELECT * FROM directory.employees WHERE id = \$1::bigint', ARRAY[:k::text]);" \
  >"$BENCH_DIR/miss.sql"
CALLGRIND_OUT=$BENCH_DIR/callgrind
. "$SRC/bench/callgrind.sh"
chown postgres "$BENCH_DIR"/*.sql
run_side() { callgrind_run "$2" -M "$PROTOCOL" -f "$BENCH_DIR/$1.sql"; }  # $1 = side, $2 = transactions
declare -A FILES
for tag in a b; do
  lib=$A; [ "$tag" = b ] && lib=$B
  bench_stop
  cp "$lib" "$BENCH_LIB"
  callgrind_start "$tag"
  for side in hit count; do  # cached
    bench_pgbench -n -M "$PROTOCOL" -c 1 -t 50 -f "$BENCH_DIR/$side.sql" >/dev/null 2>&1
  done
  for side in hit snapshot count miss; do
    for n in "$SHORT" "$LONG"; do FILES[$tag.$side.$n]=$(run_side "$side" "$n"); done
  done
  callgrind_stop
done

per_xact() { callgrind_per_xact "${FILES[$1.$2.$SHORT]}" "${FILES[$1.$2.$LONG]}" $((LONG - SHORT)); }
echo "Machine: $(machine_description)"
echo "A: $A; B: $B. One pgbench client, -M $PROTOCOL; instructions per transaction from $SHORT and $LONG transactions; 100,000 employees."
echo
echo '| build | directory hit | page_snapshot | snapshot / hit | memo.count hit | memo.count miss |'
echo '|---|---|---|---|---|---|'
for tag in a b; do
  h=$(per_xact "$tag" hit) s=$(per_xact "$tag" snapshot) c=$(per_xact "$tag" count) m=$(per_xact "$tag" miss)
  echo "| $tag | $h | $s | $(awk -v h="$h" -v s="$s" 'BEGIN {printf "%.3f", s / h}') | $c | $m |"
done
for side in $PROFILE; do
  echo
  echo "Instructions per transaction of the $side side by function (self), the $TOP largest differences, B - A:"
  echo
  /usr/bin/python3 - "$LONG" "$SHORT" "$TOP" "${FILES[a.$side.$SHORT]}" "${FILES[a.$side.$LONG]}" \
    "${FILES[b.$side.$SHORT]}" "${FILES[b.$side.$LONG]}" <<'PY'
import re, subprocess, sys
long_n, short_n, top = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def costs(path):
    out = subprocess.run(['callgrind_annotate', '--inclusive=no', '--auto=no', '--threshold=100', path],
                         capture_output=True, text=True, check=True).stdout
    by_name = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+) \([ \d.]+%\)\s+(\S.*)', line)
        if not m or 'PROGRAM TOTALS' in line: continue
        name = re.sub(r'\s*\[[^\]]*\]$', '', m.group(2))
        name = re.sub(r'^[^\s():]*:(?!:)', '', name)  # the source file (inlined code counts to its function)
        by_name[name] = by_name.get(name, 0) + int(m.group(1).replace(',', ''))
    return by_name
a_short, a_long, b_short, b_long = (costs(p) for p in sys.argv[4:8])
d = long_n - short_n
def per(s, l, k): return (l.get(k, 0) - s.get(k, 0)) / d
rows = [(k, per(a_short, a_long, k), per(b_short, b_long, k)) for k in set(a_long) | set(b_long)]
rows.sort(key=lambda r: -abs(r[2] - r[1]))
print('| function | A | B | B - A |')
print('|---|---|---|---|')
for k, a, b in rows[:top]:
    print(f'| `{k[:90]}` | {a:.0f} | {b:.0f} | {b - a:+.0f} |')
PY
done
