-- Registered statements in pg_memo_directory (issue 30): the directory's page
-- and count queries as an API sends them, with bound parameters,
-- registered with memo.cache_statement and served from the cache with no
-- change to the statements. Each served result is printed on one line,
-- followed by the same statement's result computed inside a SQL function
-- (where pg_memo serves nothing): the two lines of each pair are equal,
-- before and after writes.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
SELECT directory.directory_seed(2000);

SELECT memo.cache_statement(
  'SELECT e.id, e.full_name, e.title, e.org_depth, e.sub_org_size
     FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]
    ORDER BY e.full_name, e.id LIMIT $2 OFFSET $3', cache_name => 'api.page') IS NOT NULL AS page_registered;
SELECT memo.cache_statement(
  'SELECT count(*) FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]',
  cache_name => 'api.count') IS NOT NULL AS count_registered;

-- The API's statements, prepared as a driver prepares them.
PREPARE api_page(bigint, bigint, bigint) AS
  SELECT e.id, e.full_name, e.title, e.org_depth, e.sub_org_size
    FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint]
   ORDER BY e.full_name, e.id LIMIT $2 OFFSET $3;
PREPARE api_count(bigint) AS
  SELECT count(*) FROM directory.employees e WHERE e.path @> ARRAY[$1::bigint];

-- The truth, printed as psql prints the statements' results below
-- (fields joined by ',', rows by ' ').
CREATE FUNCTION truth_page(scope bigint, size bigint, skip bigint) RETURNS text LANGUAGE sql
  RETURN (SELECT string_agg(concat_ws(',', id, full_name, title, org_depth, sub_org_size), ' '
                            ORDER BY full_name, id) FROM (
            SELECT e.id, e.full_name, e.title, e.org_depth, e.sub_org_size FROM directory.employees e
             WHERE e.path @> ARRAY[scope] ORDER BY e.full_name, e.id LIMIT size OFFSET skip) p);
CREATE FUNCTION truth_count(scope bigint) RETURNS bigint LANGUAGE sql
  RETURN (SELECT count(*) FROM directory.employees e WHERE e.path @> ARRAY[scope]);

EXPLAIN (COSTS OFF) EXECUTE api_page(1, 5, 0);

-- Each served result, then the truth: the CEO's org (pages 1 and 3) and
-- two teams.
\pset tuples_only on
\pset format unaligned
\pset fieldsep ','
\pset recordsep ' '
\set round 'EXECUTE api_page(1, 5, 0); SELECT truth_page(1, 5, 0); EXECUTE api_page(1, 5, 10); SELECT truth_page(1, 5, 10); EXECUTE api_page(5, 5, 0); SELECT truth_page(5, 5, 0); EXECUTE api_page(17, 5, 0); SELECT truth_page(17, 5, 0); EXECUTE api_count(1); SELECT truth_count(1); EXECUTE api_count(5); SELECT truth_count(5); EXECUTE api_count(17); SELECT truth_count(17);'
:round
:round
\pset tuples_only off
\pset format aligned
\pset recordsep '\n'
SELECT cache_name, calls, hits FROM memo.stats WHERE cache_name LIKE 'api.%' ORDER BY 1;
-- (the node's own lines: the rest of EXPLAIN ANALYZE differs between versions)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE api_count(1)\g | grep -E 'pg_memo|Cache:|Served:' | sed -E 's/ \(actual.*//'

-- Writes: a hire under a team, a rename, a move; each round sees them.
SELECT directory.hire_employee(5, 'Aabid Aalto', 'Engineer') IS NOT NULL AS hired;
\pset tuples_only on
\pset format unaligned
\pset recordsep ' '
:round
\pset tuples_only off
\pset format aligned
\pset recordsep '\n'
UPDATE directory.employees SET full_name = 'Aaaron Aardvark' WHERE id = 40;
SELECT directory.move_employee(17, 2);
\pset tuples_only on
\pset format unaligned
\pset recordsep ' '
:round
:round
\pset tuples_only off
\pset format aligned
\pset recordsep '\n'
SELECT cache_name, calls, hits FROM memo.stats WHERE cache_name LIKE 'api.%' ORDER BY 1;

DELETE FROM memo.statements WHERE cache_name LIKE 'api.%';
DEALLOCATE api_page;
DEALLOCATE api_count;
