#!/usr/bin/env bash
# Automatic admission (pg_memo.admission, issue 47) against its targets,
# each as ratios taken in one run, the sides alternated in every round
# (A B A B ...). Prints Markdown tables.
#   --no-harm (the default): pgbench's built-in select-only (-S) and
#     tpcb-like scripts, pgbench's four tables watched (so that admission
#     could serve them), pg_memo.admission off against auto, -c CLIENTS:
#     TPS per round and the median auto / off (target: 1). With
#     --instructions, the same two sides counted in instructions per
#     transaction instead (bench/callgrind.sh: one client, SHORT and LONG
#     transactions, as bench/unregistered.sh counts), which this machine's
#     TPS cannot resolve to a percent. Both sides then run with
#     pg_memo.admission_min_cost = CALLGRIND_MIN_COST (default 50 ms):
#     callgrind runs a statement some 50 times slower, and a shape whose
#     first, cold executions cost more than 1 ms there would be admitted
#     where at native speed it is not.
#   --mix: zero configuration. bench/directory.sh's org chart
#     (directory.directory_seed(ROWS)) read by the statements an ORM sends:
#     a page of a sub-organisation sorted by an unindexed column (ORDER BY
#     e.email, e.id LIMIT 20 OFFSET k), the total count of the same filter
#     (the GIN path index: several ms each), and point lookups by primary
#     key; 95% such reads, 5% one-row UPDATEs (a new email). Three sides
#     per round: off; hand (page and count registered with
#     memo.cache_statement with $n parameters, as a DBA following
#     memo.candidates would: not the point lookup, which a hit would not
#     make cheaper; admission off); auto (nothing registered, admission
#     auto, memo.admission_reset() first). Every side starts from an empty
#     cache (memo.reset()) and runs WARMUP seconds first, not counted (the
#     auto side's observation windows fall in it). TPS per round, the
#     served caches' hit rates, and the medians of hand / off, auto / off
#     and auto / hand (target: auto >= 0.9 x hand).
#   --demotion: a statement over a small table (DEMOTION_ROWS rows, a
#     GROUP BY of all of them) read by one pgbench client while a second
#     client updates one of its rows in a loop (faster than it is read, so
#     every served execution would recompute), admission off against auto.
#     Every 0.2 s memo.admission is polled: how many seconds after the
#     start (its state_since) the shape is demoted; and the reader's and
#     the writer's TPS, auto / off (target: auto loses nothing).
#
#   bench/admission.sh [--no-harm] [--mix] [--demotion] [--all] [--rounds N] [--seconds S]
#                      [--clients C] [--protocol simple|extended|prepared] [--scale N]
#                      [--instructions [--short N] [--long N] [--callgrind-min-cost MS]]
#                      [--rows N] [--warmup S] [--demotion-rows N]
# The parts named run in that order (--all: every part; none: --no-harm),
# on one cluster (bench/cluster.sh: pg_memo preloaded, not
# pg_stat_statements; every pg_memo setting at its default but
# pg_memo.admission, set per side through PGOPTIONS). --instructions
# applies to --no-harm.
# Needs root, pg_memo and pg_memo_directory installed (scripts/build.sh),
# and valgrind for --instructions. Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55491}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_admission}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROUNDS=3 SECONDS_PER_RUN=10 CLIENTS=4 PROTOCOL=simple SCALE=10 INSTRUCTIONS= SHORT=1000 LONG=3000
CALLGRIND_MIN_COST=50 ROWS=200000 WARMUP=3 DEMOTION_ROWS=20000 NO_HARM= MIX= DEMOTION=
while [ $# -gt 0 ]; do
  case $1 in
    --no-harm) NO_HARM=1; shift ;;
    --mix) MIX=1; shift ;;
    --demotion) DEMOTION=1; shift ;;
    --all) NO_HARM=1 MIX=1 DEMOTION=1; shift ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --instructions) INSTRUCTIONS=1; shift ;;
    --short) SHORT=$2; shift 2 ;;
    --long) LONG=$2; shift 2 ;;
    --callgrind-min-cost) CALLGRIND_MIN_COST=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --demotion-rows) DEMOTION_ROWS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$NO_HARM$MIX$DEMOTION" ] || NO_HARM=1
if [ -n "$MIX" ] && [ ! -f "$("$BENCH_BIN/pg_config" --sharedir)/extension/pg_memo_directory.control" ]; then
  echo "pg_memo_directory is not installed: run scripts/build.sh (or make -C directory install)" >&2
  exit 1
fi
if [ -n "$NO_HARM" ] && [ -n "$INSTRUCTIONS" ] && ! command -v valgrind >/dev/null; then
  echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2
fi

trap bench_stop EXIT  # set first: bench_start may fail after the cluster is up
bench_start >/dev/null
mkdir -p "$BENCH_DIR/out" && chown postgres "$BENCH_DIR/out"
O=$BENCH_DIR/out
bench_up() { as_pg "$BENCH_BIN/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w start >/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
side_options() { echo "-c pg_memo.admission=$1"; }  # $1 = off|auto
# Under callgrind a statement runs some 50 times slower, and admission
# decides by measured time: its bar is raised as much (on both sides, so
# that they differ in pg_memo.admission alone), for auto to decide as it
# would at native speed.
callgrind_options() { echo "$(side_options "$1") -c pg_memo.admission_min_cost=$CALLGRIND_MIN_COST"; }

# run_pgbench OUT SIDE CLIENTS SECONDS [more pgbench options...]: one run,
# its output in OUT (shown if it fails).
run_pgbench() {
  local out=$1 side=$2 clients=$3 secs=$4 jobs=1
  shift 4
  [ "$clients" -gt 1 ] && jobs=2
  PGOPTIONS=$(side_options "$side") bench_pgbench -n -M "$PROTOCOL" -c "$clients" -j "$jobs" -T "$secs" "$@" \
    >"$out" 2>&1 || { cat "$out" >&2; return 1; }
}

# The shapes memo.admission shows, as a Markdown table. $1 = a filter, $2 =
# the admission_min_cost the shapes were decided with: a reason's sentence
# quotes the settings of the session that reads memo.admission, which is
# given those of the sessions that decided.
shapes_table() {
  echo '| state | reason | calls | mean ms | served | recomputed | saved ms | demotions | query |'
  echo '|---|---|---|---|---|---|---|---|---|'
  bench_psql -At -F' | ' -c "SET pg_memo.admission = auto" -c "SET pg_memo.admission_min_cost = ${2:-1}" \
    -c "SELECT '| ' || state, reason, calls, round(mean_ms::numeric, 3), served_calls, recomputed,
      round(saved_ms::numeric, 1), demotions, '\`' || left(regexp_replace(query, '\s+', ' ', 'g'), 110) || '\` |'
    FROM memo.admission WHERE ${1:-true} ORDER BY calls DESC, query"
}

echo "Machine: $(machine_description)"
echo "Cluster: bench/cluster.sh (unix socket, shared_buffers 1GB, jit off, autovacuum off, pg_memo preloaded, pg_memo defaults but pg_memo.admission, set per side with PGOPTIONS)."
echo

# --- 1. No harm: pgbench's built-in scripts ----------------------------------
no_harm() {
  bench_pgbench -i -q -s "$SCALE" >/dev/null 2>&1
  bench_psql >/dev/null <<'SQL'
SELECT memo.watch('pgbench_accounts'), memo.watch('pgbench_branches'),
       memo.watch('pgbench_tellers'), memo.watch('pgbench_history');
SQL
  local scripts="select-only tpcb-like"
  echo "## No harm: pgbench's built-in scripts, admission off and auto"
  echo
  if [ -n "$INSTRUCTIONS" ]; then
    CALLGRIND_OUT=$BENCH_DIR/callgrind
    . "$SRC/bench/callgrind.sh"
    bench_stop
    declare -A files
    local script side
    # Each script on a fresh postmaster per side (fresh shapes too),
    # select-only before any write: tpcb-like's dead rows (autovacuum is
    # off) would make a later side's reads dearer, vacuumed away before
    # each run.
    for script in $scripts; do
      for side in off auto; do
        callgrind_start "$side.$script"
        # Every page in shared buffers: a read from the kernel's cache costs
        # instructions that differ from one run of random keys to the next.
        bench_psql -c 'VACUUM pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history' \
          -c 'CREATE EXTENSION IF NOT EXISTS pg_prewarm' \
          -c "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.relname LIKE 'pgbench%' AND c.relkind IN ('r', 'i')" \
          >/dev/null 2>&1
        # Warm, through callgrind_run so that its backend's file is written
        # before the counted runs look for theirs; under auto, the shapes'
        # first windows are decided in it.
        PGOPTIONS=$(callgrind_options "$side") callgrind_run 50 -M "$PROTOCOL" -b "$script" >/dev/null
        for t in "$SHORT" "$LONG"; do
          files[$side.$script.$t]=$(PGOPTIONS=$(callgrind_options "$side") callgrind_run "$t" -M "$PROTOCOL" -b "$script")
        done
        if [ "$side" = auto ]; then
          shapes_table "query LIKE '%pgbench%'" "$CALLGRIND_MIN_COST" >"$O/no_harm_shapes.$script"
        fi
        callgrind_stop
        # pgbench's failures are not reported by callgrind_run: a backend
        # that died (pg_memo.so replaced under a running server, say) would
        # count a shorter run.
        if grep -q 'terminated by signal\|was terminated by exception' "$BENCH_DIR/valgrind.$side.$script.log"; then
          echo "a backend died in the $side $script run ($BENCH_DIR/valgrind.$side.$script.log):" >&2
          grep 'terminated by\|Failed process' "$BENCH_DIR/valgrind.$side.$script.log" >&2
          exit 1
        fi
      done
    done
    bench_up
    echo "One pgbench client, -M $PROTOCOL, scale $SCALE, pgbench's four tables watched; instructions per transaction from $SHORT and $LONG transactions, each side on a fresh postmaster after 50 transactions of warm-up."
    echo "Both sides with pg_memo.admission_min_cost = $CALLGRIND_MIN_COST (callgrind runs statements some 50 times slower: auto decides as at native speed)."
    echo "auto / off as throughput: off's instructions over auto's. Target: 1."
    echo
    echo "| script | off | auto | auto / off |"
    echo "|---|---|---|---|"
    local per_off per_auto
    for script in $scripts; do
      per_off=$(callgrind_per_xact "${files[off.$script.$SHORT]}" "${files[off.$script.$LONG]}" $((LONG - SHORT)))
      per_auto=$(callgrind_per_xact "${files[auto.$script.$SHORT]}" "${files[auto.$script.$LONG]}" $((LONG - SHORT)))
      echo "| $script | $per_off | $per_auto | $(awk -v a="$per_auto" -v o="$per_off" 'BEGIN {printf "%.4f", o / a}') |"
    done
    for script in $scripts; do
      echo
      echo "What auto decided for $script (at the end of its long run):"
      echo
      cat "$O/no_harm_shapes.$script"
    done
    echo
    return
  fi
  echo "pgbench -M $PROTOCOL -c $CLIENTS -j 2 -T $SECONDS_PER_RUN, scale $SCALE, pgbench's four tables watched;"
  echo "in each round off, then auto (memo.admission_reset() before it); pgbench's tables vacuumed before every run. Target: auto / off = 1."
  echo
  echo "| script | round | off TPS | auto TPS | auto / off |"
  echo "|---|---|---|---|---|"
  local script side i off auto r ratios
  for script in $scripts; do
    ratios=()
    for i in $(seq 1 "$ROUNDS"); do
      for side in off auto; do
        bench_psql -c 'VACUUM pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history' >/dev/null
        [ "$side" = auto ] && bench_psql -c 'SELECT memo.admission_reset()' >/dev/null
        run_pgbench "$O/no_harm_${script}_${side}_$i" "$side" "$CLIENTS" "$SECONDS_PER_RUN" -b "$script"
      done
      off=$(tps_of "$O/no_harm_${script}_off_$i") auto=$(tps_of "$O/no_harm_${script}_auto_$i")
      r=$(ratio "$auto" "$off")
      ratios+=("$r")
      printf '| %s | %s | %.0f | %.0f | %s |\n' "$script" "$i" "$off" "$auto" "$r"
    done
    echo "| $script | median | | | $(printf '%s\n' "${ratios[@]}" | median) |"
    shapes_table "query LIKE '%pgbench%'" >"$O/no_harm_shapes.$script"
  done
  for script in $scripts; do
    echo
    echo "What auto decided for $script (its last auto run):"
    echo
    cat "$O/no_harm_shapes.$script"
  done
  echo
}

# --- 2. Zero configuration: an ORM's mix -------------------------------------
# The statements, with $n where the pgbench scripts bind :variables.
MIX_PAGE='SELECT e.id, e.full_name, e.email, e.title, e.department, e.location FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint] ORDER BY e.email, e.id LIMIT 20 OFFSET $2'
MIX_COUNT='SELECT count(*) FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]'
MIX_POINT='SELECT e.id, e.full_name, e.email, e.title, e.department, e.location, e.manager_id, e.hired_on FROM directory.employees e WHERE e.id = $1'
MIX_WRITE='UPDATE directory.employees SET email = md5($1::text || $2::text) || '"'@example.com'"' WHERE id = $1'
mix() {
  bench_psql -c 'CREATE EXTENSION pg_memo_directory' >/dev/null
  bench_psql -c "SELECT directory.directory_seed($ROWS)" >/dev/null  # it analyzes the table
  # Sub-organisations: the eight heads of department (ids 2 to 9, 16,000 to
  # 44,000 employees each under the default 200,000); pages 1 to 5.
  local scopes
  scopes=$(bench_psql -At -c "SELECT min(id) || ', ' || max(id) FROM directory.employees WHERE org_depth = 1")
  { echo "\\set scope random($scopes)"; echo '\set off 20 * random(0, 4)'
    echo "${MIX_PAGE/\$1/:scope};" | sed 's/\$2/:off/'; } >"$BENCH_DIR/mix_page.sql"
  { echo "\\set scope random($scopes)"; echo "${MIX_COUNT/\$1/:scope};"; } >"$BENCH_DIR/mix_count.sql"
  { echo "\\set id random(1, $ROWS)"; echo "${MIX_POINT/\$1/:id};"; } >"$BENCH_DIR/mix_point.sql"
  { echo "\\set id random(1, $ROWS)"; echo '\set r random(1, 1000000000)'
    echo "${MIX_WRITE//\$1/:id};" | sed 's/\$2/:r/'; } >"$BENCH_DIR/mix_write.sql"
  chown postgres "$BENCH_DIR"/mix_*.sql
  local mix_files=(-f "$BENCH_DIR/mix_page.sql@40" -f "$BENCH_DIR/mix_count.sql@25"
                   -f "$BENCH_DIR/mix_point.sql@30" -f "$BENCH_DIR/mix_write.sql@5")
  register() { echo "SELECT memo.cache_statement(:'page', cache_name => 'mix.page'), memo.cache_statement(:'count', cache_name => 'mix.count')" |
                 bench_psql -v page="$MIX_PAGE" -v count="$MIX_COUNT" >/dev/null; }
  unregister() { echo "SELECT memo.uncache_statement(:'page'), memo.uncache_statement(:'count')" |
                   bench_psql -v page="$MIX_PAGE" -v count="$MIX_COUNT" >/dev/null; }
  # Hit rate of what pg_memo served in the last run: hits / calls over
  # every cache of this database (memo.reset_stats() before the run).
  hit_rate() {
    bench_psql -At -c "SELECT coalesce(round(sum(hits)::numeric / nullif(sum(calls), 0), 3)::text, '-')
                         FROM memo.stats WHERE datname = current_database()"
  }
  echo "## Zero configuration: an ORM's statements over the directory, off, registered by hand, admitted automatically"
  echo
  echo "directory.directory_seed($ROWS); pgbench -M $PROTOCOL -c $CLIENTS -j 2, $WARMUP s of warm-up (not counted) then $SECONDS_PER_RUN s per side;"
  echo "each side from an empty cache (memo.reset()). The scripts' weights: page 40, count 25, point lookup 30, write 5"
  echo "(scope: a head of department, random($scopes); OFFSET 20 * random(0, 4); id random(1, $ROWS)):"
  echo
  echo '```sql'
  printf -- '-- page\n%s;\n-- count\n%s;\n-- point lookup\n%s;\n-- write\n%s;\n' "$MIX_PAGE" "$MIX_COUNT" "$MIX_POINT" "$MIX_WRITE"
  echo '```'
  echo
  echo "hand: page and count registered (memo.cache_statement), admission off. auto: nothing registered, pg_memo.admission = auto, memo.admission_reset() first."
  echo "Hit rate: memo.stats hits / calls over the served caches in the counted run. Target: auto / hand >= 0.9."
  echo
  echo '| round | off TPS | hand TPS | auto TPS | hand / off | auto / off | auto / hand | hand hit rate | auto hit rate |'
  echo '|---|---|---|---|---|---|---|---|---|'
  local i side off hand auto hand_off=() auto_off=() auto_hand=() hand_hits auto_hits
  for i in $(seq 1 "$ROUNDS"); do
    for side in off hand auto; do
      bench_psql -c 'SELECT memo.reset()' >/dev/null
      [ "$side" = hand ] && register
      [ "$side" = auto ] && bench_psql -c 'SELECT memo.admission_reset()' >/dev/null
      local admission=off; [ "$side" = auto ] && admission=auto
      run_pgbench "$O/mix_warm_${side}_$i" "$admission" "$CLIENTS" "$WARMUP" "${mix_files[@]}"
      bench_psql -c 'SELECT memo.reset_stats()' >/dev/null
      run_pgbench "$O/mix_${side}_$i" "$admission" "$CLIENTS" "$SECONDS_PER_RUN" "${mix_files[@]}"
      [ "$side" = hand ] && hand_hits=$(hit_rate) && unregister
      if [ "$side" = auto ]; then
        auto_hits=$(hit_rate)
        shapes_table "query LIKE '%directory.employees%'" >"$O/mix_shapes"
      fi
    done
    off=$(tps_of "$O/mix_off_$i") hand=$(tps_of "$O/mix_hand_$i") auto=$(tps_of "$O/mix_auto_$i")
    hand_off+=("$(ratio "$hand" "$off")") auto_off+=("$(ratio "$auto" "$off")") auto_hand+=("$(ratio "$auto" "$hand")")
    printf '| %s | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s |\n' "$i" "$off" "$hand" "$auto" \
      "${hand_off[-1]}" "${auto_off[-1]}" "${auto_hand[-1]}" "$hand_hits" "$auto_hits"
  done
  echo "| median | | | | $(printf '%s\n' "${hand_off[@]}" | median) | $(printf '%s\n' "${auto_off[@]}" | median) | $(printf '%s\n' "${auto_hand[@]}" | median) | | |"
  echo
  echo "What auto decided (its last run; mean ms is the uncached mean it observed):"
  echo
  cat "$O/mix_shapes"
  echo
}

# --- 3. Demotion: a shape whose table is written faster than it is read ------
DEMOTION_READ='SELECT grp, count(*), sum(v) FROM adm_hot GROUP BY grp ORDER BY grp'
demotion() {
  bench_psql >/dev/null <<SQL
CREATE TABLE adm_hot (id int PRIMARY KEY, grp int NOT NULL, v int NOT NULL);
INSERT INTO adm_hot SELECT g, g % 50, 0 FROM generate_series(1, $DEMOTION_ROWS) g;
VACUUM ANALYZE adm_hot;
SELECT memo.watch('adm_hot');
SQL
  echo "$DEMOTION_READ;" >"$BENCH_DIR/demotion_read.sql"
  { echo "\\set id random(1, $DEMOTION_ROWS)"; echo 'UPDATE adm_hot SET v = v + 1 WHERE id = :id;'; } >"$BENCH_DIR/demotion_write.sql"
  chown postgres "$BENCH_DIR"/demotion_*.sql
  # One run: the writer and the reader for SECONDS_PER_RUN each, started
  # together, memo.admission polled every 0.2 s meanwhile (in both sides,
  # so that both pay for the polling). Leaves the polls in OUT.polls as
  # "seconds since start, state, seconds from start to its state_since".
  run_demotion() {  # $1 = off|auto, $2 = round
    local side=$1 out=$O/demotion_$1_$2 start writer stop
    bench_psql -c 'VACUUM adm_hot' >/dev/null  # autovacuum is off: the same table each run
    [ "$side" = auto ] && bench_psql -c 'SELECT memo.admission_reset()' >/dev/null
    stop=$out.stop; rm -f "$stop"; : >"$out.polls"
    start=$(date +%s.%N)
    ( until [ -f "$stop" ]; do
        bench_psql -At -F' ' -c "SELECT round((extract(epoch FROM clock_timestamp()) - $start)::numeric, 2), state,
                                        round((extract(epoch FROM state_since) - $start)::numeric, 2)
                                   FROM memo.admission WHERE query LIKE 'SELECT grp, count(*)%'" >>"$out.polls" || true
        sleep 0.2
      done ) &
    local poller=$!
    run_pgbench "$out.write" "$side" 1 "$SECONDS_PER_RUN" -f "$BENCH_DIR/demotion_write.sql" &
    writer=$!
    run_pgbench "$out.read" "$side" 1 "$SECONDS_PER_RUN" -f "$BENCH_DIR/demotion_read.sql"
    wait "$writer"
    touch "$stop"; wait "$poller"
    if [ "$side" = auto ]; then
      shapes_table "query LIKE 'SELECT grp, count(*)%'" >"$O/demotion_shapes"
    fi
  }
  echo "## Demotion: a shape whose table is written faster than it is read"
  echo
  echo "adm_hot: $DEMOTION_ROWS rows, watched. One pgbench client reads \`$DEMOTION_READ\`, a second"
  echo "updates one random row in a loop (\`UPDATE adm_hot SET v = v + 1 WHERE id = :id\`); -M $PROTOCOL, $SECONDS_PER_RUN s per side,"
  echo "in each round off, then auto (memo.admission_reset() and VACUUM adm_hot before every run). memo.admission polled every 0.2 s:"
  echo "demoted after = the shape's state_since once a poll saw it demoted, in seconds from the start (- if none did)."
  echo "Target: auto / off = 1 (auto loses nothing)."
  echo
  echo '| round | off reads TPS | off writes TPS | auto reads TPS | auto writes TPS | reads auto / off | writes auto / off | demoted after s | state at the end |'
  echo '|---|---|---|---|---|---|---|---|---|'
  local i reads=() writes=() demoted_after=() ro rw ao aw demoted final
  for i in $(seq 1 "$ROUNDS"); do
    run_demotion off "$i"
    run_demotion auto "$i"
    ro=$(tps_of "$O/demotion_off_$i.read") rw=$(tps_of "$O/demotion_off_$i.write")
    ao=$(tps_of "$O/demotion_auto_$i.read") aw=$(tps_of "$O/demotion_auto_$i.write")
    reads+=("$(ratio "$ao" "$ro")") writes+=("$(ratio "$aw" "$rw")")
    demoted=$(awk '$2 == "demoted" || $2 == "retired" {print $3; exit}' "$O/demotion_auto_$i.polls")
    final=$(tail -n 1 "$O/demotion_auto_$i.polls" | awk '{print $2}')
    [ -n "$demoted" ] && demoted_after+=("$demoted")
    printf '| %s | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s |\n' "$i" "$ro" "$rw" "$ao" "$aw" \
      "${reads[-1]}" "${writes[-1]}" "${demoted:--}" "${final:-not observed}"
  done
  echo "| median | | | | | $(printf '%s\n' "${reads[@]}" | median) | $(printf '%s\n' "${writes[@]}" | median) | $( ((${#demoted_after[@]})) && printf '%s\n' "${demoted_after[@]}" | median || echo -) | |"
  echo
  echo "The shape at the end of the last auto run:"
  echo
  cat "$O/demotion_shapes"
  echo
}

[ -n "$NO_HARM" ] && no_harm
[ -n "$MIX" ] && mix
[ -n "$DEMOTION" ] && demotion
exit 0
