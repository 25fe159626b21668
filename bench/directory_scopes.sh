#!/usr/bin/env bash
# What one team's writes make stale (issue 31's second target): with the
# first page and count of T teams cached (default 1,000; pg_memo_directory
# watches directory.employees with the scope column path), W writes
# (default 1,000 single-row title changes, one transaction each) spread
# over K of those teams (default 10: each write in the subtree of one of
# them), then every team read once. It reports how many of the 2T entries
# were plain hits, carried (delta_kept, delta_corrected) or computed again,
# against the bound: the page and count of every cached team whose
# subtree holds a written employee (the K teams and their cached
# ancestors), and how many more hash sharing explains: a team's two scope
# counters (its path element's and its id's) share one of the 65,536
# slots with one of the V values the writes bumped with probability about
# 1 - (1 - V/65536)^2. And the writers' counters: memo.info's
# writing_commits and counters_bumped (the table's counter and each path
# element's and id's).
#
#   bench/directory_scopes.sh [--rows N] [--teams T] [--touched K] [--writes W]
#
# Needs root, and pg_memo and pg_memo_directory installed (scripts/build.sh).
# About a minute at the defaults (100,000 rows). Not run by CI: the same
# check at a smaller size is directory/sql/directory_scopes.sql.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55483}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_scopes}
. "$SRC/bench/cluster.sh"
ROWS=100000 TEAMS=1000 TOUCHED=10 WRITES=1000
while [ $# -gt 0 ]; do
  case $1 in
    --rows) ROWS=$2; shift 2 ;;
    --teams) TEAMS=$2; shift 2 ;;
    --touched) TOUCHED=$2; shift 2 ;;
    --writes) WRITES=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

trap bench_stop EXIT
bench_start
bench_psql -c 'CREATE EXTENSION pg_memo_directory'
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null
bench_psql >/dev/null <<SQL
CREATE SCHEMA bench;
-- The cached teams, and the touched ones among them (the first K by hash).
CREATE TABLE bench.teams AS
  SELECT row_number() OVER (ORDER BY hashint8(e.id), e.id) AS n, e.id
    FROM directory.employees e WHERE e.sub_org_size > 1 ORDER BY hashint8(e.id), e.id LIMIT $TEAMS;
CREATE TABLE bench.touched AS SELECT id FROM bench.teams WHERE n <= $TOUCHED;
-- The employees each write changes: W draws among the touched teams' subtrees.
CREATE TABLE bench.written AS
  SELECT w, (SELECT e.id FROM directory.employees e WHERE e.path @> ARRAY[t.id]
              ORDER BY hashint8(e.id + w) LIMIT 1) AS id
    FROM generate_series(1, $WRITES) w, LATERAL (SELECT id FROM bench.touched ORDER BY id
                                                 OFFSET (w % $TOUCHED) LIMIT 1) t;
SQL
read -r scope_columns < <(bench_psql -At -c "SELECT scope_columns FROM memo.watched WHERE table_name = 'directory.employees'::regclass")
# Warm-up: every team's first page and count.
bench_psql -c "SELECT count(*) FROM bench.teams t, directory.cached_list_employees(t.id) x" >/dev/null
bench_psql -c "SELECT memo.reset_stats()" >/dev/null
read -r commits0 bumped0 < <(bench_psql -At -F' ' -c "SELECT writing_commits, counters_bumped FROM memo.info")
# The writes, one transaction each.
bench_psql -At -c "SELECT id FROM bench.written ORDER BY w" |
  awk '{printf "UPDATE directory.employees SET title = (ARRAY['"'"'Engineer'"'"','"'"'Analyst'"'"','"'"'Designer'"'"'])[1 + %d %% 3] WHERE id = %s;\n", NR, $1}' |
  bench_psql >/dev/null
read -r commits1 bumped1 < <(bench_psql -At -F' ' -c "SELECT writing_commits, counters_bumped FROM memo.info")
# Every team once.
bench_psql -c "SELECT count(*) FROM bench.teams t, directory.cached_list_employees(t.id) x" >/dev/null
read -r calls hits carried computed < <(bench_psql -At -F' ' -c "SELECT sum(calls), sum(hits),
  sum(delta_kept + delta_corrected), sum(computations) FROM memo.stats WHERE cache_name LIKE 'employees.%'")
read -r bound_teams < <(bench_psql -At -c "SELECT count(*) FROM bench.teams t
  WHERE EXISTS (SELECT 1 FROM bench.written w JOIN directory.employees e ON e.id = w.id WHERE e.path @> ARRAY[t.id])")
read -r values < <(bench_psql -At -c "SELECT (SELECT count(DISTINCT p) FROM bench.written w
    JOIN directory.employees e ON e.id = w.id, unnest(e.path) p) + (SELECT count(DISTINCT id) FROM bench.written)")
shared=$(awk -v u=$((TEAMS - bound_teams)) -v v="$values" 'BEGIN {printf "%.1f", 2 * u * (1 - (1 - v / 65536) ^ 2)}')
plain=$((hits - carried))
echo "machine: $(machine_description)"
echo "rows $ROWS, scope columns $scope_columns; $TEAMS teams cached (page + count: $((2 * TEAMS)) entries);"
echo "$WRITES single-row title changes over $TOUCHED teams; then every team read once"
echo "writing commits $((commits1 - commits0)), counters bumped $((bumped1 - bumped0))" \
     "($(awk -v b=$((bumped1 - bumped0)) -v c=$((commits1 - commits0)) 'BEGIN {printf "%.1f", b / c}') per write)"
echo "entry reads $calls: plain hits $plain, carried $carried, computed again $computed"
echo "bound: the page and count of the $bound_teams cached teams whose subtree holds a written employee: $((2 * bound_teams)) entries"
echo "hash sharing: the writes bumped the counters of $values values; expected entries of untouched teams on a shared counter: $shared"
echo "carried or computed beyond the bound: $((carried + computed - 2 * bound_teams))"
