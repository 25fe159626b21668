#!/usr/bin/env bash
# Tenants behind row level security (issue 48), as PostgREST serves them:
# each request is a transaction that takes on the request's role and claims
# (set_config('role', ..., true) and request.jwt.claims), then reads a page
# of the tenant's rows (joined with their authors) and the tenant's total
# count, both registered statements sent unchanged; 5 % of the requests
# insert a row in their tenant. 1,000 tenants over one table (ROWS_PER_TENANT
# rows each), a policy tenant_id = bt_tenant() (a STABLE SQL helper over
# the claims) and the table's tenant_id a scope column.
#
# 1. Throughput: pgbench -c 4 -j 2, pg_memo serving against the same
#    requests with pg_memo.serve_statements = off, alternately in one run.
# 2. Other tenants keep their entries: every tenant's page and count read
#    once (warm), one write in tenant 1, every tenant read again: the
#    share of the other tenants' reads that were plain hits.
#
#   bench/tenants.sh [--rounds N] [--seconds S] [--rows-per-tenant N]
# Needs root and an installed pg_memo (scripts/build.sh). Not run by CI.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_PORT=${BENCH_PORT:-55491}
BENCH_DIR=${BENCH_DIR:-/tmp/pg_memo_bench_tenants}
BENCH_PRELOAD=pg_memo
. "$SRC/bench/cluster.sh"
ROUNDS=3 SECONDS_PER_RUN=20 ROWS_PER_TENANT=1000
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rows-per-tenant) ROWS_PER_TENANT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
trap bench_stop EXIT
bench_start >/dev/null
bench_psql -v rows="$ROWS_PER_TENANT" <<'SQL'
CREATE ROLE bt_web NOLOGIN;
GRANT bt_web TO postgres;
CREATE FUNCTION bt_tenant() RETURNS int LANGUAGE sql STABLE
  AS $$ SELECT (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant')::int $$;
CREATE TABLE bt_users (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO bt_users SELECT g, 'user ' || g FROM generate_series(1, 10000) g;
CREATE TABLE bt_items (id bigserial PRIMARY KEY, tenant_id int NOT NULL, author_id int NOT NULL,
                       title text NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL, body text);
INSERT INTO bt_items (tenant_id, author_id, title, status, created_at, body)
  SELECT t, 1 + (t * 7 + g) % 10000, 'item ' || g, (ARRAY['open', 'closed', 'archived'])[1 + g % 3],
         timestamptz '2026-01-01' + g * interval '1 minute', repeat(md5(g::text), 4)
    FROM generate_series(1, 1000) t, generate_series(1, :rows) g;
CREATE INDEX ON bt_items (tenant_id, created_at DESC);
VACUUM ANALYZE bt_items, bt_users;
ALTER TABLE bt_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_reads ON bt_items FOR SELECT TO bt_web USING (tenant_id = bt_tenant());
CREATE POLICY tenant_writes ON bt_items FOR INSERT TO bt_web WITH CHECK (tenant_id = bt_tenant());
GRANT SELECT, INSERT ON bt_items TO bt_web;
GRANT USAGE ON SEQUENCE bt_items_id_seq TO bt_web;
GRANT SELECT ON bt_users TO bt_web;
SELECT memo.watch('bt_items', deltas => true, scope_columns => '{tenant_id}');
SELECT memo.watch('bt_users');
SELECT memo.cache_statement($q$SELECT i.id, i.title, i.status, i.created_at, u.name FROM bt_items i JOIN bt_users u ON u.id = i.author_id WHERE i.status <> 'archived' ORDER BY i.created_at DESC, i.id LIMIT 20$q$, cache_name => 'bt.page');
SELECT memo.cache_statement($q$SELECT count(*) FROM bt_items i WHERE i.status <> 'archived'$q$, cache_name => 'bt.count');
SQL
cp "$SRC"/test/pgbench/tenants_*.sql "$BENCH_DIR/" && chown postgres "$BENCH_DIR"/tenants_*.sql

tps() {  # PGOPTIONS for the side
  PGOPTIONS="$1" bench_pgbench -n -c 4 -j 2 -T "$SECONDS_PER_RUN" -f "$BENCH_DIR/tenants_read.sql@95" \
    -f "$BENCH_DIR/tenants_write.sql@5" | awk '/^tps = / {print $3}'
}
echo "## Tenants behind row level security: $(nproc) cores, PostgreSQL 15, 1,000 tenants x $ROWS_PER_TENANT rows"
echo
echo "| round | served (tps) | uncached (tps) | served / uncached |"
echo "|---|---|---|---|"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then served=$(tps ''); uncached=$(tps '-c pg_memo.serve_statements=off')
  else uncached=$(tps '-c pg_memo.serve_statements=off'); served=$(tps ''); fi
  ratio=$(awk -v a="$served" -v b="$uncached" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$ratio")
  echo "| $r | $served | $uncached | $ratio |"
done
echo
echo "median served / uncached: $(printf '%s\n' "${ratios[@]}" | median)"
bench_psql -At -c "SELECT 'served: calls ' || sum(calls) || ', hits ' || sum(hits) || ', computations ' || sum(computations) || ', bypasses ' || sum(bypasses) FROM memo.stats WHERE cache_name LIKE 'bt.%'"

# 2. One write in tenant 1; every tenant's page and count read again.
every_tenant="$BENCH_DIR/every_tenant.sql"
for t in $(seq 1 1000); do
  sed "s/:tenant/$t/" "$SRC/test/pgbench/tenants_read.sql" | grep -v '^\\set'
done >"$every_tenant"
chown postgres "$every_tenant"
bench_psql -f "$every_tenant" >/dev/null   # warm: every tenant's entries current
counts() { bench_psql -At -c "SELECT sum(hits) || ' ' || sum(computations) FROM memo.stats WHERE cache_name LIKE 'bt.%'"; }
read -r hits0 comps0 <<<"$(counts)"
bench_psql -f "$every_tenant" >/dev/null   # all current: every read a hit
read -r hits1 comps1 <<<"$(counts)"
bench_psql -c "BEGIN; SELECT set_config('role', 'bt_web', true), set_config('request.jwt.claims', '{\"tenant\": 1}', true);
  INSERT INTO bt_items (tenant_id, author_id, title, status, created_at) VALUES (1, 1, 'one write', 'open', now()); COMMIT;" >/dev/null
bench_psql -f "$every_tenant" >/dev/null
read -r hits2 comps2 <<<"$(counts)"
echo
echo "every tenant read twice with nothing written: $((hits1 - hits0)) hits, $((comps1 - comps0)) computations of 2000 reads"
echo "after one write in tenant 1: $((hits2 - hits1)) hits, $((comps2 - comps1)) computations of 2000 reads;" \
     "other tenants' reads that were plain hits: $(awk -v h=$((hits2 - hits1)) 'BEGIN {printf "%.2f %%", 100 * h / 1998}')"
