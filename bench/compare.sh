#!/usr/bin/env bash
# pg_memo's performance targets, measured side by side in one run on a
# 500,000-employee directory (pg_memo_directory). The comparisons of 1, 2, 5
# and 7 alternate their two sides in pairs and report medians; 3 runs its
# two sides in pairs too, and 4 runs its three sides in rounds whose order
# reverses every other round, medians again. Prints Markdown.
#
#   1. hits against the physical limit: cached_list_employees(1) against a
#      20-row table holding the same rows, and a memo.count hit against a
#      one-row, one-column table (-M simple and -M prepared, -c 8 -j 2);
#      and both against floor_rows(1) (bench/floor), a C function with the
#      same signature that returns the 20 rows from backend memory: the
#      least any function call in FROM costs; with -M simple also
#      floor_rows_1(1), the same C function declared with one argument and
#      no defaults, which the parser and planner do not have to fill in;
#   2. against pgpool-II's query cache (bench/pgpool.sh), the same page and
#      count sent through pgpool as plain SQL;
#   3. the speed-up of the hot request over the uncached query;
#   4. hit TPS from 1 to 128 clients, beside page_snapshot and floor_rows;
#   5. writers: single-row UPDATE and INSERT on the same table watched and
#      unwatched (the 100,000-row UPDATE is bench/big_update.sh);
#   6. memory: arena bytes per cached page against the raw size of its rows;
#   7. the miss path: a miss that computes against the uncached query.
# The stampede target (128 clients) is bench/directory.sh --clients 128.
#
#   bench/compare.sh [--pairs N] [--writer-pairs N] [--seconds S] [--rows N] [--skip-pgpool]
#                    [--only "4 7"]   (only those comparisons; 3 comes with 1)
# Comparison 4 also plots hit TPS against clients to $PLOT_DIR/hit_clients.png
# (bench/plot.sh).
#
# --pairs (default 3) applies to every comparison but the writers'. The
# writers' TPS is bound by the WAL's fsync, the noisiest part of this VM, so
# they get --writer-pairs (default 10).
# Needs root, pg_memo and pg_memo_directory installed (scripts/build.sh),
# and for 2 the pgpool2 package. Takes about 20 minutes (30 with --pairs 5).
# Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55475}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_compare}
PGPOOL_PORT=${PGPOOL_PORT:-55476}
# Only pg_memo: pg_stat_statements would add the same cost to both sides of
# every comparison and flatter the ratios.
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
. "$SRC/bench/pgpool.sh"
. "$SRC/bench/plot.sh"
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
PAIRS=3 WRITER_PAIRS=10 SECONDS_PER_RUN=5 ROWS=500000 PGPOOL=yes ONLY=
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --writer-pairs) WRITER_PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --skip-pgpool) PGPOOL=no; shift ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$PGPOOL" = no ] || pgpool_require

cleanup() { pgpool_stop; bench_stop; }
trap cleanup EXIT  # set first: bench_start may fail after the cluster is up
pgpool_stop       # one left by an interrupted run: bench_start wipes its pid file
bench_start
O=$BENCH_DIR/out
mkdir -p "$O" && chown postgres "$O"

# --- Data ----------------------------------------------------------------------
bench_psql -c 'CREATE EXTENSION pg_memo_directory' >/dev/null
bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null  # it analyzes the table
# The physical limit: the hot page and its total as plain tables.
bench_psql <<'SQL' >/dev/null
CREATE TABLE page_snapshot AS SELECT * FROM directory.list_employees(1);
CREATE TABLE count_snapshot AS SELECT count(*) AS n FROM directory.employees;
-- The writers' table, watched and unwatched in turn.
CREATE TABLE writes (id bigint PRIMARY KEY, n bigint NOT NULL, note text NOT NULL);
INSERT INTO writes SELECT g, 0, md5(g::text) FROM generate_series(1, 100000) g;
CREATE SEQUENCE writes_new_id START 1000001;
VACUUM ANALYZE page_snapshot, count_snapshot, writes;
SQL
# floor_rows: built here from bench/floor, loaded by its path, never installed.
cp -r "$SRC/bench/floor" "$BENCH_DIR/floor" && chown -R postgres "$BENCH_DIR/floor"
as_pg make -s -C "$BENCH_DIR/floor" PG_CONFIG="$BENCH_BIN/pg_config" >/dev/null
bench_psql >/dev/null <<SQL
CREATE FUNCTION floor_rows(scope_root bigint, page integer DEFAULT 1, page_size integer DEFAULT 20,
                           sort text DEFAULT 'full_name:asc', filters jsonb DEFAULT '{}')
RETURNS SETOF directory.employee_row LANGUAGE c AS '$BENCH_DIR/floor/floor_rows.so', 'floor_rows';
CREATE FUNCTION floor_rows_1(scope_root bigint)
RETURNS SETOF directory.employee_row LANGUAGE c AS '$BENCH_DIR/floor/floor_rows.so', 'floor_rows';
SQL

script() {  # NAME SQL...
  local name=$1; shift
  printf '%s\n' "$@" >"$BENCH_DIR/$name.sql"
  chown postgres "$BENCH_DIR/$name.sql"
}
script cached 'SELECT * FROM directory.cached_list_employees(1);'
script floor 'SELECT * FROM floor_rows(1);'
script floor_no_defaults 'SELECT * FROM floor_rows_1(1);'
script snapshot 'SELECT * FROM page_snapshot;'
script memo_count "SELECT memo.count('bench.count', 'SELECT 1 FROM directory.employees', '{}');"
script count_table 'SELECT n FROM count_snapshot;'
script uncached 'SELECT * FROM directory.list_employees(1);'
script update '\set id random(1, 100000)' 'UPDATE writes SET n = n + 1 WHERE id = :id;'
script insert "INSERT INTO writes VALUES (nextval('writes_new_id'), 0, 'new');"
# A miss every time: both sides pay the same invalidation first.
script miss "SELECT memo.invalidate('directory.employees');" 'SELECT * FROM directory.cached_list_employees(1);'
script miss_uncached "SELECT memo.invalidate('directory.employees');" 'SELECT * FROM directory.list_employees(1);'
# The request as plain SQL for pgpool (which caches no function calls): the
# builder's count and page queries with their parameters inlined.
bench_psql -At >"$BENCH_DIR/pgpool_request.sql" <<'SQL'
SELECT format('SELECT count(*) - 1 FROM (%s) AS c;', replace(q.count_sql, '$1::bigint', '1::bigint'))
       || E'\n' ||
       format('%s;', replace(replace(replace(replace(q.page_sql, '$4::bigint', (memo.count('employees.count', q.count_sql, q.count_params) - 1)::text || '::bigint'),
                     '$3::bigint', '0::bigint'), '$2::bigint', '20::bigint'), '$1::bigint', '1::bigint'))
  FROM directory.build_list_query(1, 1, 20, 'full_name:asc', '{}') AS q;
SQL
chown postgres "$BENCH_DIR/pgpool_request.sql"
same=$(bench_psql -At -c "SELECT (SELECT array_agg(t::text) FROM directory.cached_list_employees(1) t)
  = (SELECT array_agg(t::text) FROM page_snapshot t)")
[ "$same" = t ] || { echo "page_snapshot does not hold cached_list_employees(1)'s rows" >&2; exit 1; }
same=$(bench_psql -At -c "SELECT (SELECT array_agg(t::text) FROM floor_rows(1) t)
  = (SELECT array_agg(t::text) FROM page_snapshot t)")
[ "$same" = t ] || { echo "floor_rows(1) does not return page_snapshot's rows" >&2; exit 1; }

run() {  # OUT SCRIPT CLIENTS PROTOCOL
  local out=$1 script=$2 clients=$3 protocol=$4 jobs=2
  [ "$clients" -lt 2 ] && jobs=1
  bench_pgbench -n -M "$protocol" -c "$clients" -j "$jobs" -T "$SECONDS_PER_RUN" \
    -f "$BENCH_DIR/$script.sql" >"$O/$out" 2>&1 || { cat "$O/$out" >&2; return 1; }
}
warm() { bench_pgbench -n -t 1 -f "$BENCH_DIR/$1.sql" >/dev/null 2>&1; }

# pair NAME A B CLIENTS PROTOCOL: PAIRS alternated runs of scripts A and B;
# prints "| A | B | median TPS A | median TPS B | A/B | runs |".
pair() {
  local name=$1 a=$2 b=$3 clients=$4 protocol=$5 i first second ta=() tb=()
  for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then first=$a second=$b; else first=$b second=$a; fi
    run "${name}_${first}_$i" "$first" "$clients" "$protocol"
    run "${name}_${second}_$i" "$second" "$clients" "$protocol"
    ta+=("$(tps_of "$O/${name}_${a}_$i")") tb+=("$(tps_of "$O/${name}_${b}_$i")")
  done
  local ma mb
  ma=$(printf '%s\n' "${ta[@]}" | median) mb=$(printf '%s\n' "${tb[@]}" | median)
  awk -v a="$a" -v b="$b" -v p="$protocol" -v ma="$ma" -v mb="$mb" -v ra="${ta[*]}" -v rb="${tb[*]}" 'BEGIN {
    printf "| %s | %s | %s | %.0f | %.0f | **%.2f** | %s / %s |\n", p, a, b, ma, mb, ma / mb, ra, rb }'
}

# medians NAME CLIENTS PROTOCOL SCRIPT...: PAIRS rounds of one run per
# script, the order reversed every other round; prints the median TPS of
# each script, in the order given.
medians() {
  local name=$1 clients=$2 protocol=$3 i s order=(); shift 3
  for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then order=("$@"); else mapfile -t order < <(printf '%s\n' "$@" | tac); fi
    for s in "${order[@]}"; do run "${name}_${s}_$i" "$s" "$clients" "$protocol"; done
  done
  for s in "$@"; do
    for i in $(seq 1 "$PAIRS"); do tps_of "$O/${name}_${s}_$i"; done | median
  done | paste -sd' '
}

echo "Machine: $(machine_description)"
echo "Cluster: bench/cluster.sh: unix socket, shared_buffers 1GB, jit off, autovacuum off,"
echo "shared_preload_libraries = pg_memo only, pg_memo defaults (cache_size 64MB, singleflight on)."
echo "pgbench -T $SECONDS_PER_RUN per run, $PAIRS alternated pairs per comparison, medians; $ROWS employees."
echo

# --- 1 and 3. Hits against the physical limit, and the speed-up --------------
if want 1; then
warm cached; warm memo_count  # floor_rows reads its rows once per backend: nothing to warm
echo "## 1. Hits against the physical limit (-c 8 -j 2)"
echo
echo '| protocol | A | B | TPS A | TPS B | A / B | runs A / runs B |'
echo '|---|---|---|---|---|---|---|'
for protocol in simple prepared; do
  pair "limit_page_$protocol" cached snapshot 8 "$protocol"
  pair "limit_floor_$protocol" floor snapshot 8 "$protocol"
  pair "limit_cached_floor_$protocol" cached floor 8 "$protocol"
  # A prepared statement fills in the defaults once; a simple one, every time.
  [ "$protocol" = prepared ] || pair "limit_floor_1_$protocol" floor_no_defaults snapshot 8 "$protocol"
  pair "limit_count_$protocol" memo_count count_table 8 "$protocol"
done
echo
echo "## 3. Speed-up of the hot request over the uncached query (-c 8 -j 2, prepared)"
echo
echo '| protocol | A | B | TPS A | TPS B | A / B (speed-up) | runs A / runs B |'
echo '|---|---|---|---|---|---|---|'
pair speedup cached uncached 8 prepared
echo
fi

# --- 2. pgpool-II's query cache -------------------------------------------------
if want 2; then
if [ "$PGPOOL" = yes ]; then
  echo "## 2. pg_memo against pgpool-II's query cache (-c 8 -j 2)"
  echo
  echo "pgpool-II $("$PGPOOL_BIN" --version 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1) (bench/pgpool.sh: raw mode, memqcache_method = shmem)"
  echo "serves the page and its count as two plain statements, from its cache;"
  echo "pg_memo serves one call of cached_list_employees(1), directly."
  echo
  pgpool_start "$PGPOOL_PORT" "$BENCH_DIR" "$BENCH_PORT" 8
  pool_run() {  # OUT PROTOCOL
    pgpool_pgbench -n -M "$2" -c 8 -j 2 -T "$SECONDS_PER_RUN" \
      -f "$BENCH_DIR/pgpool_request.sql" >"$O/$1" 2>&1 || { cat "$O/$1" >&2; return 1; }
  }
  echo '| protocol | pg_memo TPS | pgpool TPS | pg_memo / pgpool | pgpool cache hits / misses (SHOW pool_cache) | runs pg_memo / pgpool |'
  echo '|---|---|---|---|---|---|'
  for protocol in simple prepared; do
    pgpool_pgbench -n -M "$protocol" -t 1 \
      -f "$BENCH_DIR/pgpool_request.sql" >/dev/null 2>&1   # warm pgpool's cache
    read -r hits0 selects0 < <(pgpool_cache_stats)
    tm=() tp=()
    for i in $(seq 1 "$PAIRS"); do
      if [ $((i % 2)) -eq 1 ]; then
        run "pool_memo_${protocol}_$i" cached 8 "$protocol"; pool_run "pool_pgpool_${protocol}_$i" "$protocol"
      else
        pool_run "pool_pgpool_${protocol}_$i" "$protocol"; run "pool_memo_${protocol}_$i" cached 8 "$protocol"
      fi
      tm+=("$(tps_of "$O/pool_memo_${protocol}_$i")") tp+=("$(tps_of "$O/pool_pgpool_${protocol}_$i")")
    done
    read -r hits1 selects1 < <(pgpool_cache_stats)
    awk -v p="$protocol" -v m="$(printf '%s\n' "${tm[@]}" | median)" -v q="$(printf '%s\n' "${tp[@]}" | median)" \
        -v h=$((hits1 - hits0)) -v s=$((selects1 - selects0)) -v rm="${tm[*]}" -v rq="${tp[*]}" 'BEGIN {
      printf "| %s | %.0f | %.0f | **%.2f** | %d / %d | %s / %s |\n", p, m, q, m / q, h, s, rm, rq }'
  done
  pgpool_stop
  echo
fi
fi

# --- 4. Concurrency -------------------------------------------------------------
if want 4; then
echo "## 4. Hit TPS by clients (prepared; -j 2, -j 1 for one client; medians of $PAIRS rounds)"
echo
echo '| clients | cached_list_employees(1) hit TPS | floor_rows(1) TPS | page_snapshot TPS | hit / snapshot | floor / snapshot |'
echo '|---|---|---|---|---|---|'
: >"$O/conc.plot"
for clients in 1 2 4 8 16 64 128; do
  # Through a file, not a process substitution: set -e must see a failed run.
  medians "conc_$clients" "$clients" prepared cached floor snapshot >"$O/conc_$clients.medians"
  read -r c f s <"$O/conc_$clients.medians"
  echo "$clients $c $s $f" >>"$O/conc.plot"
  awk -v n="$clients" -v c="$c" -v f="$f" -v s="$s" \
    'BEGIN {printf "| %d | %.0f | %.0f | %.0f | %.2f | %.2f |\n", n, c, f, s, c / s, f / s}'
done
mkdir -p "$PLOT_DIR"
plot_series "$PLOT_DIR/hit_clients.png" 'Hits by client count (-M prepared)' 'pgbench clients' 'requests per second' \
  log "$O/conc.plot" 'cached_list_employees(1) hit' 'page_snapshot: the same 20 rows in a table' \
  'floor_rows(1): a C function returning them from memory' >&2
echo
fi

# --- 5. Writers -------------------------------------------------------------------
if want 5; then
# watched/unwatched: the same table, memo.watch and memo.unwatch in turn.
echo "## 5. Writers on the same table, watched and unwatched (-c 8 -j 2, $WRITER_PAIRS pairs)"
echo
echo '| protocol | statement | watched TPS | unwatched TPS | watched / unwatched | runs watched / unwatched |'
echo '|---|---|---|---|---|---|'
writer_pair() {  # STATEMENT PROTOCOL
  local statement=$1 protocol=$2 i mode tw=() tu=()
  for i in $(seq 1 "$WRITER_PAIRS"); do
    for mode in $([ $((i % 2)) -eq 1 ] && echo "watch unwatch" || echo "unwatch watch"); do
      bench_psql -c "SELECT memo.$mode('writes')" -c 'VACUUM writes' >/dev/null
      run "writer_${statement}_${protocol}_${mode}_$i" "$statement" 8 "$protocol"
    done
    tw+=("$(tps_of "$O/writer_${statement}_${protocol}_watch_$i")")
    tu+=("$(tps_of "$O/writer_${statement}_${protocol}_unwatch_$i")")
  done
  awk -v p="$protocol" -v s="$statement" -v w="$(printf '%s\n' "${tw[@]}" | median)" -v u="$(printf '%s\n' "${tu[@]}" | median)" \
      -v rw="${tw[*]}" -v ru="${tu[*]}" 'BEGIN {
    printf "| %s | %s | %.0f | %.0f | **%.3f** | %s / %s |\n", p, s, w, u, w / u, rw, ru }'
}
for protocol in simple prepared; do
  writer_pair update "$protocol"
  writer_pair insert "$protocol"
done
echo
# The 100,000-row UPDATE: bench/big_update.sh.
fi

# --- 6. Memory ------------------------------------------------------------------
if want 6; then
# 200 pages of the CEO's scope, each an entry of its own (plus one count).
echo "## 6. Memory: arena bytes per cached page"
echo
bench_psql -c 'SELECT memo.reset()' >/dev/null
read -r used0 < <(bench_psql -At -c 'SELECT used_bytes FROM memo.info')
bench_psql -c 'SELECT count(*) FROM generate_series(1, 200) p, directory.cached_list_employees(1, p) t' >/dev/null
read -r arena used entries < <(bench_psql -At -F' ' -c 'SELECT arena_bytes, used_bytes, entries FROM memo.info')
# Raw: the rows' own size (pg_column_size of each row value) and the same
# rows as the text a client receives, summed over the 200 pages.
read -r raw_tuple raw_text < <(bench_psql -At -F' ' -c "SELECT sum(pg_column_size(t.*)), sum(octet_length(t::text))
  FROM generate_series(1, 200) p, directory.list_employees(1, p) t")
awk -v a="$arena" -v u0="$used0" -v u="$used" -v e="$entries" -v rt="$raw_tuple" -v rx="$raw_text" 'BEGIN {
  per_page = (u - u0) / 200   # the one count entry is charged to the pages
  printf "| entries | arena bytes used | bytes per page entry | raw row bytes per page (pg_column_size) | ratio | raw text bytes per page | pages the arena holds |\n"
  printf "|---|---|---|---|---|---|---|\n"
  printf "| %d | %d | %.0f | %.0f | **%.2f** | %.0f | %.0f (%d MB / %.0f B) |\n\n", e, u - u0, per_page, rt / 200, per_page / (rt / 200), rx / 200, a / per_page, a / 1048576, per_page }'
fi

# --- 7. The miss path -----------------------------------------------------------
if want 7; then
bench_psql -c 'SELECT memo.reset_stats()' >/dev/null  # section 7's own computations below
echo "## 7. The miss path (-c 1, prepared): invalidate, then the request"
echo
echo '| miss: cached_list_employees(1) ms | uncached: list_employees(1) ms | miss / uncached | runs miss / uncached |'
echo '|---|---|---|---|'
mm=() mu=()
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) -eq 1 ]; then order="miss miss_uncached"; else order="miss_uncached miss"; fi
  for s in $order; do SECONDS_PER_RUN=$((SECONDS_PER_RUN * 2)) run "path_${s}_$i" "$s" 1 prepared; done
  mm+=("$(latency_of "$O/path_miss_$i")") mu+=("$(latency_of "$O/path_miss_uncached_$i")")
done
awk -v m="$(printf '%s\n' "${mm[@]}" | median)" -v u="$(printf '%s\n' "${mu[@]}" | median)" -v rm="${mm[*]}" -v ru="${mu[*]}" 'BEGIN {
  printf "| %.2f | %.2f | **%.3f** | %s / %s |\n", m, u, m / u, rm, ru }'
read -r computations misses < <(bench_psql -At -F' ' -c "SELECT sum(computations), sum(misses) FROM memo.stats WHERE cache_name LIKE 'employees.%'")
echo
echo "memo.stats after the run: employees.* computations $computations, misses $misses."
fi
