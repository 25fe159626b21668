#!/usr/bin/env bash
# Readers under a steady trickle of writes, on a 500,000-employee directory
# (pg_memo_directory): what each committed write costs the readers today,
# when every write invalidates every cached listing of directory.employees.
#
# For each write rate (default 0, 1, 10 and 100 writes per second), C
# readers (default 32; pgbench -M prepared -j 2) run a mix of three requests
# for --seconds while one writer (a second pgbench, -c 1 --rate R) commits
# writes; rate 0 runs no writer and is the read-only baseline:
#   50% the CEO's first page     test/pgbench/directory_hot_key.sql
#   20% a page 1..50 of the CEO  test/pgbench/directory_page_walk.sql
#   30% a manager's team, page 1 test/pgbench/directory_writes_team.sql
# The managers are a fixed pool (--managers, default 1000, drawn by a hash
# of the id among the employees who lead a team, sub_org_size > 1, after
# the seed), held in bench.managers. The writer
# (test/pgbench/directory_writes_writer.sql) mixes 30% renames, 30% title
# changes, 15% hires, 15% removes of a leaf and 10% moves of a leaf, all
# through the directory's write functions (title: a plain UPDATE, which the
# directory's write guard allows), so the tree stays exact; the script
# checks directory.check_consistency() at the end. With --writer title the
# writer only changes titles (-D title_only=1): the cheapest write, for
# high rates.
#
# Every run starts from the same state: VACUUM, memo.reset(), then the
# CEO's pages 1..50 and every pool manager's first page computed once
# (warm-up), then memo.reset_stats() and pg_stat_statements_reset(). Per
# run it reports read TPS, the readers' p50 and p99 (pgbench -l, every
# transaction) and p99 per request, the ratio to the read-only TPS, the
# writes done (the writer's transactions, and memo.generation of the table
# as a check), and the recomputations:
#   - of the CEO-scope count, by pg_stat_statements (track = all sees the
#     count pg_memo runs inside memo.count; the team requests run as another
#     role, bench_team, through a SECURITY DEFINER wrapper, so the role
#     tells the two scopes apart);
#   - of 'employees.count' and 'employees.page' in memo.stats, which sums
#     all scopes (CEO and teams): CEO + team = memo.stats is checked.
# One more run is the floor: the same mix through directory.list_employees
# (no cache), no writer; --floor-rates "0 10 100" runs it under those write
# rates too. The read TPS against the write rate, cached and uncached, is
# plotted to $PLOT_DIR/directory_writes.png (bench/plot.sh).
#
# With --max-staleness V, the directory's API is configured the way the
# resilience issue suggests (ALTER FUNCTION directory.cached_list_employees
# SET pg_memo.max_staleness = V) for every run, the read-only one included;
# --no-floor skips the uncached run.
#
#   bench/directory_writes.sh [--seconds S] [--rows N] [--rates "0 1 10 100"]
#                             [--clients C] [--managers M] [--mix "50 20 30"]
#                             [--max-staleness V] [--no-floor] [--floor-rates R]
#                             [--writer mix|title]
#
# Needs root, and pg_memo and pg_memo_directory installed (scripts/build.sh).
# Takes about 35 s to seed 500,000 rows on the shared 2-core machine, then
# about seconds + 5 per rate (warm-up included) and seconds for the floor:
# about 3.5 minutes with the defaults. Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Its own cluster, so that it never touches another benchmark's.
BENCH_PORT=${BENCH_PORT:-55479}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_writes}
. "$SRC/bench/cluster.sh"   # BENCH_PRELOAD: pg_memo, pg_stat_statements
. "$SRC/bench/plot.sh"
SECONDS_PER_RUN=30 ROWS=500000 RATES="0 1 10 100" CLIENTS=32 MANAGERS=1000 MIX="50 20 30" MAX_STALENESS= FLOOR=1
FLOOR_RATES=0 WRITER=mix
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --managers) MANAGERS=$2; shift 2 ;;
    --mix) MIX=$2; shift 2 ;;
    --max-staleness) MAX_STALENESS=$2; shift 2 ;;
    --no-floor) FLOOR=; shift ;;
    --floor-rates) FLOOR_RATES=$2; shift 2 ;;
    --writer) WRITER=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ ! -f "$("$BENCH_BIN/pg_config" --sharedir)/extension/pg_memo_directory.control" ]; then
  echo "pg_memo_directory is not installed: run scripts/build.sh (or make -C directory install)" >&2
  exit 1
fi
[[ $BENCH_PRELOAD == *pg_stat_statements* ]] || { echo "BENCH_PRELOAD must include pg_stat_statements" >&2; exit 2; }
read -r W_HOT W_WALK W_TEAM <<<"$MIX"
# The read-only run is the denominator of the ratio: always run it, first.
RATES="0 $(printf '%s\n' $RATES | awk '$1 != 0' | sort -n | uniq | paste -sd' ')"
wall_start=$(date +%s)
load_start=$(cut -d" " -f1-3 /proc/loadavg)

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start
bench_psql -c 'CREATE EXTENSION pg_memo_directory'
if [ -n "$MAX_STALENESS" ]; then
  bench_psql -c "ALTER FUNCTION directory.cached_list_employees SET pg_memo.max_staleness = '$MAX_STALENESS'" >/dev/null
fi
seed_start=$(date +%s.%N)
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null  # it analyzes the table
seed_seconds=$(awk -v a="$seed_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')

# The manager pool, the team wrappers (run as bench_team: see
# test/pgbench/directory_writes_team.sql) and the scripts.
bench_psql >/dev/null <<SQL
CREATE ROLE bench_team SUPERUSER NOLOGIN;  -- superuser like the readers' role, so the same checks apply
CREATE SCHEMA bench;
CREATE TABLE bench.managers (n integer PRIMARY KEY, id bigint NOT NULL UNIQUE);
INSERT INTO bench.managers
  SELECT row_number() OVER (ORDER BY p.id), p.id
    FROM (SELECT e.id FROM directory.employees e WHERE e.sub_org_size > 1
           ORDER BY hashint8(e.id), e.id LIMIT $MANAGERS) AS p;
ANALYZE bench.managers;
CREATE FUNCTION bench.team_page(scope bigint) RETURNS SETOF directory.employee_row
  LANGUAGE sql VOLATILE SECURITY DEFINER
  AS \$\$ SELECT * FROM directory.cached_list_employees(scope, 1, 20, 'full_name:asc', '{}') \$\$;
CREATE FUNCTION bench.team_page_uncached(scope bigint) RETURNS SETOF directory.employee_row
  LANGUAGE sql VOLATILE SECURITY DEFINER
  AS \$\$ SELECT * FROM directory.list_employees(scope, 1, 20, 'full_name:asc', '{}') \$\$;
ALTER FUNCTION bench.team_page(bigint) OWNER TO bench_team;
ALTER FUNCTION bench.team_page_uncached(bigint) OWNER TO bench_team;
SQL
read -r pool all_managers max_depth < <(bench_psql -At -F' ' -c "SELECT (SELECT count(*) FROM bench.managers),
  (SELECT count(*) FROM directory.employees WHERE sub_org_size > 1),
  (SELECT max(org_depth) FROM directory.employees)")
read -r team_min team_median team_max < <(bench_psql -At -F' ' -c "SELECT min(e.sub_org_size),
  percentile_disc(0.5) WITHIN GROUP (ORDER BY e.sub_org_size), max(e.sub_org_size)
  FROM bench.managers b JOIN directory.employees e ON e.id = b.id")

cp "$SRC/test/pgbench/directory_hot_key.sql" "$BENCH_DIR/hot.sql"
cp "$SRC/test/pgbench/directory_page_walk.sql" "$BENCH_DIR/walk.sql"
cp "$SRC/test/pgbench/directory_writes_team.sql" "$BENCH_DIR/team.sql"
cp "$SRC/test/pgbench/directory_writes_writer.sql" "$BENCH_DIR/writer.sql"
case $WRITER in
  mix) TITLE_ONLY=0 ;;
  title) TITLE_ONLY=1 ;;
  *) echo "--writer is mix or title" >&2; exit 2 ;;
esac
# The floor: the same requests without the cache.
for s in hot walk team; do
  sed -e 's/directory\.cached_list_employees/directory.list_employees/' \
      -e 's/bench\.team_page(/bench.team_page_uncached(/' "$BENCH_DIR/$s.sql" >"$BENCH_DIR/${s}_uncached.sql"
  grep -qE 'directory\.list_employees|team_page_uncached' "$BENCH_DIR/${s}_uncached.sql" ||
    { echo "could not make the uncached variant of $s.sql" >&2; exit 1; }
done
chown postgres "$BENCH_DIR"/*.sql

# The statement pg_memo runs inside memo.count (its count wrapper).
PGSS_COUNT="query LIKE '%AS pg_memo_count%'"

readers() {  # LOGDIR SUFFIX: the reader mix for SECONDS_PER_RUN, logs in LOGDIR
  (cd "$1" && bench_pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" \
      -D managers="$pool" -l --log-prefix=tx \
      -f "$BENCH_DIR/hot$2.sql@$W_HOT" -f "$BENCH_DIR/walk$2.sql@$W_WALK" -f "$BENCH_DIR/team$2.sql@$W_TEAM" \
      >"$1/readers.out" 2>&1) || { cat "$1/readers.out" >&2; return 1; }
}

warm() {
  bench_psql -c 'VACUUM directory.employees' -c 'SELECT memo.reset()' >/dev/null
  bench_psql >/dev/null <<'SQL'
SELECT count(*) FROM generate_series(1, 50) p, directory.cached_list_employees(1, p);
SELECT count(*) FROM bench.managers b, bench.team_page(b.id);
SQL
  bench_psql -c 'SELECT memo.reset_stats()' -c 'SELECT pg_stat_statements_reset()' >/dev/null
}

# percentiles LOGDIR [SCRIPT_NO]: "p50 p95 p99 max" ms of the readers'
# transactions (pgbench -l: 3rd field latency in us, 4th the script number).
percentiles() {
  if [ $# -eq 1 ]; then latency_percentiles "$1"/tx.*
  else awk -v s="$2" '$4 == s' "$1"/tx.* | latency_percentiles
  fi
}

ROWS_MAIN=$BENCH_DIR/rows_main ROWS_CACHE=$BENCH_DIR/rows_cache
: >"$ROWS_MAIN"; : >"$ROWS_CACHE"
mkdir -p "$BENCH_DIR/out" && chown postgres "$BENCH_DIR/out"
ro_tps=

# start_writer DIR RATE: the writer in the background ($! is its pid).
start_writer() {
  (cd "$1" && bench_pgbench -n -M prepared -c 1 -j 1 -T "$SECONDS_PER_RUN" --rate "$2" \
      -D max_id="$ROWS" -D title_only="$TITLE_ONLY" -l --log-prefix=wx -f "$BENCH_DIR/writer.sql" >"$1/writer.out" 2>&1) &
}

PLOT_DATA=$BENCH_DIR/plot_data  # rate, cached TPS, uncached TPS
: >"$PLOT_DATA.cached"; : >"$PLOT_DATA.uncached"

run_rate() {  # RATE
  local rate=$1 d="$BENCH_DIR/out/rate_$1" writer=
  rm -rf "$d" && mkdir -p "$d" && chown postgres "$d"
  warm
  local gen0 commits0
  gen0=$(bench_psql -At -c "SELECT memo.generation('directory.employees')")
  commits0=$(bench_psql -At -c "SELECT writing_commits FROM memo.info")
  if [ "$rate" != 0 ]; then start_writer "$d" "$rate"; writer=$!; fi
  readers "$d" ""
  if [ -n "$writer" ]; then
    wait "$writer" || { cat "$d/writer.out" >&2; exit 1; }
  fi
  local gen1 tps writes wlat p50 p95 p99 max
  gen1=$(bench_psql -At -c "SELECT memo.generation('directory.employees')")
  tps=$(tps_of "$d/readers.out")
  [ -n "$ro_tps" ] || ro_tps=$tps
  echo "$rate $tps" >>"$PLOT_DATA.cached"
  if [ -n "$writer" ]; then
    writes=$(served_of "$d/writer.out")
    # With --rate, pgbench's latency counts from the scheduled start: the
    # write's own time is the latency minus the schedule lag (7th field).
    wlat=$(cat "$d"/wx.* | awk '{s += $3 - $7; n++} END {if (n) printf "%.1f", s / n / 1000; else print "-"}')
  else
    writes=0 wlat=-
  fi
  read -r p50 p95 p99 max < <(percentiles "$d")
  local h w t
  h=$(percentiles "$d" 0 | cut -d' ' -f3) w=$(percentiles "$d" 1 | cut -d' ' -f3) t=$(percentiles "$d" 2 | cut -d' ' -f3)
  local ceo team cc ch cs cm pc ph pm ck cr cf pk pf wf
  read -r ceo team < <(bench_psql -At -F' ' -c "SELECT
      coalesce(sum(calls) FILTER (WHERE userid = 'postgres'::regrole), 0),
      coalesce(sum(calls) FILTER (WHERE userid = 'bench_team'::regrole), 0)
    FROM pg_stat_statements WHERE $PGSS_COUNT")
  local sc sp stale commits
  commits=$(( $(bench_psql -At -c "SELECT writing_commits FROM memo.info") - commits0 ))
  stale=$(bench_psql -At -c "SELECT coalesce(sum(invalidations + delta_kept + delta_corrected), 0)
    FROM memo.stats WHERE datname = current_database()")
  read -r cc ch cm cs pc ph pm ck cr cf pk pf wf sc sp < <(bench_psql -At -F' ' -c "SELECT
      coalesce(max(calls) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(hits) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(computations) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(shared) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(calls) FILTER (WHERE cache_name = 'employees.page'), 0),
      coalesce(max(hits) FILTER (WHERE cache_name = 'employees.page'), 0),
      coalesce(max(computations) FILTER (WHERE cache_name = 'employees.page'), 0),
      coalesce(max(delta_kept) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(delta_corrected) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(delta_fallbacks) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(delta_kept) FILTER (WHERE cache_name = 'employees.page'), 0),
      coalesce(max(delta_fallbacks) FILTER (WHERE cache_name = 'employees.page'), 0),
      (SELECT delta_fallbacks FROM memo.info),
      coalesce(max(stale_hits) FILTER (WHERE cache_name = 'employees.count'), 0),
      coalesce(max(stale_hits) FILTER (WHERE cache_name = 'employees.page'), 0)
    FROM memo.stats WHERE datname = current_database()")
  awk -v r="$rate" -v s="$SECONDS_PER_RUN" -v w="$writes" -v g=$((gen1 - gen0)) -v tps="$tps" -v ro="$ro_tps" \
      -v p50="$p50" -v p99="$p99" -v h="$h" -v wk="$w" -v t="$t" -v ceo="$ceo" -v cm="$cm" -v wl="$wlat" \
      -v cpus="$(nproc)" 'BEGIN {
    share = wl == "-" ? "-" : sprintf("%.2f", w * wl / (s * 1000 * cpus))
    printf "| %s | %d (%.1f/s) | %d | %.0f | **%.2f** | %s | %s | %s / %s / %s | **%d** | %d | %s | %s |\n",
      r, w, w / s, g, tps, tps / ro, p50, p99, h, wk, t, ceo, cm, wl, share }' >>"$ROWS_MAIN"
  awk -v r="$rate" -v cc="$cc" -v ch="$ch" -v cm="$cm" -v cs="$cs" -v ceo="$ceo" -v team="$team" \
      -v pc="$pc" -v ph="$ph" -v pm="$pm" -v ck="$ck" -v cr="$cr" -v cf="$cf" -v pk="$pk" -v pf="$pf" -v wf="$wf" \
      -v sc="$sc" -v sp="$sp" -v stale="$stale" -v commits="$commits" 'BEGIN {
    printf "| %s | %d | %.2f%% | %d | %d | %d + %d = %d%s | %d / %d / %d | %d | %.2f%% | %d | %d / %d | %d | %d / %d | %s |\n",
      r, cc, cc ? 100 * ch / cc : 0, cm, cs, ceo, team, ceo + team, (ceo + team == cm ? "" : " (differs)"),
      ck, cr, cf, pc, pc ? 100 * ph / pc : 0, pm, pk, pf, wf, sc, sp,
      commits ? sprintf("%d / %d = %.1f", stale, commits, stale / commits) : "-" }' >>"$ROWS_CACHE"
}

run_floor() {  # RATE
  local rate=$1 d="$BENCH_DIR/out/floor_$1" writer=
  rm -rf "$d" && mkdir -p "$d" && chown postgres "$d"
  bench_psql -c 'VACUUM directory.employees' >/dev/null
  if [ "$rate" != 0 ]; then start_writer "$d" "$rate"; writer=$!; fi
  readers "$d" _uncached
  if [ -n "$writer" ]; then wait "$writer" || { cat "$d/writer.out" >&2; exit 1; }; fi
  local tps p50 p95 p99 max h w t
  tps=$(tps_of "$d/readers.out")
  echo "$rate $tps" >>"$PLOT_DATA.uncached"
  read -r p50 p95 p99 max < <(percentiles "$d")
  h=$(percentiles "$d" 0 | cut -d' ' -f3) w=$(percentiles "$d" 1 | cut -d' ' -f3) t=$(percentiles "$d" 2 | cut -d' ' -f3)
  awk -v r="$rate" -v tps="$tps" -v ro="$ro_tps" -v p50="$p50" -v p99="$p99" -v h="$h" -v wk="$w" -v t="$t" 'BEGIN {
    printf "| %s, **no cache** (list_employees) | - | - | %.1f | **%.4f** | %s | %s | %s / %s / %s | - | - | - |\n",
      r, tps, tps / ro, p50, p99, h, wk, t }' >>"$ROWS_MAIN"
}

for rate in $RATES; do run_rate "$rate"; done
[ -z "$FLOOR" ] || for rate in $FLOOR_RATES; do run_floor "$rate"; done
# rate, cached, uncached ("-" where a side did not run at that rate)
awk 'NR == FNR { u[$1] = $2; next } { print $1, $2, ($1 in u ? u[$1] : "-"); seen[$1] = 1 }
     END { for (r in u) if (!(r in seen)) print r, "-", u[r] }' "$PLOT_DATA.uncached" "$PLOT_DATA.cached" |
  sort -n >"$PLOT_DATA"
mkdir -p "$PLOT_DIR"
plot_series "$PLOT_DIR/directory_writes${MAX_STALENESS:+_stale}.png" \
  "Directory readers ($CLIENTS clients) under writes${MAX_STALENESS:+, max_staleness $MAX_STALENESS}" \
  'committed writes per second' 'read requests per second (log scale)' cat+logy "$PLOT_DATA" \
  'cached (cached_list_employees)' 'uncached (list_employees)' >&2
bad=$(bench_psql -At -c 'SELECT count(*) FROM directory.check_consistency()')
[ "$bad" = 0 ] || { echo "directory.check_consistency() reports $bad disagreements after the writes" >&2; exit 1; }
rows_now=$(bench_psql -At -c 'SELECT count(*) FROM directory.employees')

echo "Machine: $(machine_description)"
echo "Cluster: bench/cluster.sh (unix socket, shared_buffers 1GB, jit off, autovacuum off,"
echo "pg_stat_statements preloaded with track = all, pg_memo defaults: cache_size 64MB, singleflight on)."
[ -z "$MAX_STALENESS" ] || echo "directory.cached_list_employees SET pg_memo.max_staleness = '$MAX_STALENESS' (every run)."
echo "Seed: directory.directory_seed($ROWS) + ANALYZE in ${seed_seconds} s (org depth $max_depth); $rows_now employees after all runs,"
echo "directory.check_consistency() clean."
echo
echo "## Readers under writes"
echo
echo "$CLIENTS readers: pgbench -M prepared -c $CLIENTS -j 2 -T $SECONDS_PER_RUN, weights $W_HOT / $W_WALK / $W_TEAM:"
echo "the CEO's first page (cached_list_employees(1)) / a page 1..50 of the CEO's scope /"
echo "page 1 of a manager's team (uniform over a pool of $pool of the $all_managers managers at seed time;"
echo "team sizes $team_min..$team_max, median $team_median). One writer: pgbench -M prepared -c 1 --rate R, each"
if [ "$WRITER" = title ]; then
  echo "transaction one title change of an individual contributor (test/pgbench/directory_writes_writer.sql, title_only)."
  echo "Each run starts warm (memo.reset(), the CEO's 50 pages and"
else
  echo "transaction one write (30% rename, 30% title change, 15% hire, 15% leaf removal, 10% leaf move;"
  echo "test/pgbench/directory_writes_writer.sql). Each run starts warm (memo.reset(), the CEO's 50 pages and"
fi
echo "the pool's team pages computed once) with zeroed counters."
echo
echo "- writes: the writer's committed transactions (the rate is a Poisson schedule); generation: the"
echo "  rise of memo.generation('directory.employees') over the run, as pg_memo saw the writes."
echo "- read TPS / read-only: against the 0 writes/s run."
echo "- p99 by request: CEO page 1 / CEO page n / team page 1, in ms (pgbench -l, every transaction)."
echo "- CEO-count recomputations: pg_stat_statements calls of the count pg_memo runs inside memo.count, by"
echo "  the readers' role (the team requests count under bench_team). employees.count computations:"
echo "  memo.stats, all scopes (CEO and teams) together."
echo "- write ms: mean time of a write transaction (the schedule lag taken out); writer share: writes x"
echo "  write ms over the run's time on all $(nproc) cores, the part of the machine the writer kept busy."
echo
echo '| writes/s (target) | writes done | generation | read TPS | read TPS / read-only | p50 ms | p99 ms | p99 ms by request | CEO-count recomputations | employees.count computations | write ms | writer share |'
echo '|---|---|---|---|---|---|---|---|---|---|---|---|'
cat "$ROWS_MAIN"
echo
echo "## Cache counters per run (memo.stats after warm-up)"
echo
echo "count computations by scope: pg_stat_statements, readers' role (CEO) + bench_team (teams), which should"
echo "equal memo.stats' computations of employees.count."
echo
echo "count carried: delta_kept / delta_corrected / delta_fallbacks of employees.count (memo.stats); page"
echo "carried: delta_kept / delta_fallbacks of employees.page; writes without a record: memo.info's delta_fallbacks"
echo "(cumulative since the cluster started, the seed's included). Stale per write: the entries found stale"
echo "(memo.stats' invalidations + delta_kept + delta_corrected, every cache name) over the commits that bumped"
echo "counters in the run (memo.info's writing_commits): how many entries each write made stale."
echo
echo '| writes/s | employees.count calls | count hits | count computations | count shared (singleflight) | by scope: CEO + teams | count carried: kept / corrected / fallbacks | employees.page calls | page hits | page computations | page carried: kept / fallbacks | writes without a record | stale hits: count / page | stale per write |'
echo '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
cat "$ROWS_CACHE"
echo
echo "Wall time: $(( $(date +%s) - wall_start )) s. Load average (1, 5, 15 min) at the start: $load_start; at the end: $(cut -d" " -f1-3 /proc/loadavg)."
