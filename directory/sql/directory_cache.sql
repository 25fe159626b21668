-- pg_memo_directory: cached_list_employees returns exactly what
-- list_employees returns, for every sort key and direction, each filter,
-- several scopes and pages, before and after every kind of write; both agree
-- with an oracle recomputed from manager_id alone; and repeated calls are
-- served from the cache.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
SELECT directory.directory_seed(2000);

-------------------------------------------------------------------------------
-- Test helpers (created before anything is cached)
-------------------------------------------------------------------------------

-- The oracle: the org recomputed from manager_id alone (recursive walk), in
-- a temporary table, which pg_memo's dependency tracking never sees.
CREATE TEMP TABLE oracle_pairs (ancestor bigint, employee bigint);
CREATE INDEX ON oracle_pairs (ancestor);
CREATE TEMP TABLE oracle_rows (
    id bigint PRIMARY KEY, full_name text, title text, department text, location text,
    hired_on date, manager_id bigint, org_depth int, sub_org_size bigint);

CREATE FUNCTION refresh_oracle() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- DELETE, not TRUNCATE, and ANALYZE once before the runs (below):
    -- both send the temporary tables' relcache invalidations, which bump
    -- their counters at commit, and a counter shared by hash with one the
    -- cached entries depend on (the OIDs shift with every object an install
    -- creates) would make a run miss for a reason that is not the test's.
    DELETE FROM oracle_pairs;
    DELETE FROM oracle_rows;
    INSERT INTO oracle_pairs
    WITH RECURSIVE pairs(ancestor, employee) AS (
        SELECT e.id, e.id FROM directory.employees e
        UNION ALL
        SELECT p.ancestor, c.id FROM pairs p JOIN directory.employees c ON c.manager_id = p.employee)
    SELECT * FROM pairs;
    INSERT INTO oracle_rows
    SELECT e.id, e.full_name, e.title, e.department, e.location, e.hired_on, e.manager_id,
           up.n - 1, down.n
      FROM directory.employees e
      LEFT JOIN (SELECT p.employee, count(*) AS n FROM oracle_pairs p GROUP BY p.employee) AS up
             ON up.employee = e.id
      LEFT JOIN (SELECT p.ancestor, count(*) AS n FROM oracle_pairs p GROUP BY p.ancestor) AS down
             ON down.ancestor = e.id;
END;
$$;

-- One page as text rows, in the order returned.
CREATE FUNCTION cached_page(scope bigint, page int, page_size int, sort text, filters jsonb)
RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(ROW(x.id, x.full_name, x.title, x.department, x.location, x.manager_id,
                                  x.org_depth, x.sub_org_size, x.total_count)::text ORDER BY x.n), '{}')
      FROM directory.cached_list_employees(scope, page, page_size, sort, filters)
           WITH ORDINALITY AS x(id, full_name, title, department, location, manager_id,
                                org_depth, sub_org_size, total_count, n);
$$;

CREATE FUNCTION uncached_page(scope bigint, page int, page_size int, sort text, filters jsonb)
RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(ROW(x.id, x.full_name, x.title, x.department, x.location, x.manager_id,
                                  x.org_depth, x.sub_org_size, x.total_count)::text ORDER BY x.n), '{}')
      FROM directory.list_employees(scope, page, page_size, sort, filters)
           WITH ORDINALITY AS x(id, full_name, title, department, location, manager_id,
                                org_depth, sub_org_size, total_count, n);
$$;

CREATE FUNCTION oracle_total(scope bigint, filters jsonb) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM oracle_pairs p JOIN oracle_rows o ON o.id = p.employee
     WHERE p.ancestor = scope
       AND (filters->>'department' IS NULL OR o.department = filters->>'department')
       AND (filters->>'title' IS NULL OR o.title = filters->>'title')
       AND (filters->>'location' IS NULL OR o.location = filters->>'location')
       AND (filters->>'name_prefix' IS NULL OR starts_with(o.full_name, filters->>'name_prefix'));
$$;

CREATE FUNCTION oracle_page(scope bigint, page int, page_size int, sort text, filters jsonb)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    result text[];
BEGIN
    EXECUTE format($q$
        SELECT coalesce(array_agg(r ORDER BY n), '{}') FROM (
            SELECT ROW(o.id, o.full_name, o.title, o.department, o.location, o.manager_id,
                       o.org_depth, o.sub_org_size, $6)::text AS r,
                   row_number() OVER (ORDER BY o.%1$I %2$s, o.id %2$s) AS n
              FROM oracle_pairs p JOIN oracle_rows o ON o.id = p.employee
             WHERE p.ancestor = $1
               AND ($5->>'department' IS NULL OR o.department = $5->>'department')
               AND ($5->>'title' IS NULL OR o.title = $5->>'title')
               AND ($5->>'location' IS NULL OR o.location = $5->>'location')
               AND ($5->>'name_prefix' IS NULL OR starts_with(o.full_name, $5->>'name_prefix'))) AS s
         WHERE n > ($2 - 1)::bigint * $3 AND n <= $2::bigint * $3$q$,
        split_part(sort, ':', 1), split_part(sort, ':', 2))
    INTO result USING scope, page, page_size, sort, filters, oracle_total(scope, filters);
    RETURN result;
END;
$$;

-- Cases: every sort key and direction over the given scopes, on pages 1, 2,
-- the last one and one past it (page size 7), plus filter combinations over
-- the first and third scopes; each case compares cached with uncached, and
-- uncached with the oracle.
CREATE FUNCTION run_matrix(scopes bigint[])
RETURNS TABLE (scope bigint, sort text, filters jsonb, page int, page_size int,
               rows int, total bigint, cached_ok boolean, oracle_ok boolean)
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    cached text[];
    uncached text[];
BEGIN
    PERFORM refresh_oracle();
    FOR c IN
        WITH sorts AS (
            SELECT k || ':' || d AS sort
              FROM unnest(ARRAY['full_name', 'title', 'department', 'location', 'hired_on', 'org_depth'])
                   WITH ORDINALITY AS ks(k, ko),
                   unnest(ARRAY['asc', 'desc']) WITH ORDINALITY AS ds(d, dor)
             ORDER BY ko, dor),
        scope_list AS (SELECT s, o FROM unnest(scopes) WITH ORDINALITY AS x(s, o)),
        plain AS (
            SELECT sl.s AS scope, so.sort, '{}'::jsonb AS filters, 7 AS page_size, sl.o
              FROM scope_list sl CROSS JOIN sorts so),
        filtered AS (
            SELECT sl.s, so.sort, f.filters, 7, sl.o
              FROM scope_list sl
             CROSS JOIN (VALUES ('full_name:asc'), ('hired_on:desc')) AS so(sort)
             CROSS JOIN (VALUES ('{"department": "Engineering"}'::jsonb),
                                ('{"title": "Director"}'),
                                ('{"location": "Berlin"}'),
                                ('{"name_prefix": "Ma"}'),
                                ('{"name_prefix": "Zzz_%"}'),
                                ('{"department": "Sales", "location": "London"}'),
                                ('{"title": "Director", "name_prefix": "S"}'),
                                ('{"department": "Sales", "title": "Director", "location": "Austin", "name_prefix": "M"}'))
                        AS f(filters)
             WHERE sl.o IN (1, 3)),
        all_cases AS (
            SELECT a.*, oracle_total(a.scope, a.filters) AS total
              FROM (SELECT * FROM plain UNION ALL SELECT * FROM filtered) AS a)
        SELECT a.scope, a.sort, a.filters, a.page_size, p.page, a.total
          FROM all_cases a,
               LATERAL (SELECT DISTINCT unnest(ARRAY[1, 2, greatest(1, ceil(a.total / 7.0)::int),
                                                     greatest(1, ceil(a.total / 7.0)::int) + 1])) AS p(page)
         ORDER BY a.o, a.filters::text, a.sort, p.page
    LOOP
        cached := cached_page(c.scope, c.page, c.page_size, c.sort, c.filters);
        uncached := uncached_page(c.scope, c.page, c.page_size, c.sort, c.filters);
        scope := c.scope;
        sort := c.sort;
        filters := c.filters;
        page := c.page;
        page_size := c.page_size;
        rows := cardinality(uncached);
        total := c.total;
        cached_ok := cached IS NOT DISTINCT FROM uncached;
        oracle_ok := uncached IS NOT DISTINCT FROM oracle_page(c.scope, c.page, c.page_size, c.sort, c.filters);
        RETURN NEXT;
    END LOOP;
END;
$$;

-- The last run, for summaries.
CREATE TEMP TABLE last_run AS SELECT * FROM run_matrix('{}') LIMIT 0;
CREATE FUNCTION matrix_summary(scopes bigint[])
RETURNS TABLE (cases bigint, nonempty bigint, cached_mismatches bigint, oracle_mismatches bigint)
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE last_run;
    INSERT INTO last_run SELECT * FROM run_matrix(scopes);
    RETURN QUERY
    SELECT count(*), count(*) FILTER (WHERE l.rows > 0),
           count(*) FILTER (WHERE NOT l.cached_ok), count(*) FILTER (WHERE NOT l.oracle_ok)
      FROM last_run l;
END;
$$;

CREATE FUNCTION cache_stats(OUT cache_name text, OUT calls bigint, OUT hits bigint, OUT misses bigint)
RETURNS SETOF record LANGUAGE sql AS $$
    SELECT s.cache_name, s.calls, s.hits, s.misses FROM memo.stats s
     WHERE s.datname = current_database() AND s.cache_name LIKE 'employees.%'
     ORDER BY s.cache_name;
$$;

-- Scopes: the CEO, two executives, a vice president, a leaf.
SELECT id, title, org_depth, sub_org_size FROM directory.employees
 WHERE id IN (1, 2, 3, 12, 1999) ORDER BY id;
\set scopes '{1,2,3,12,1999}'

SELECT refresh_oracle();
ANALYZE oracle_pairs, oracle_rows;
SELECT memo.reset() >= 0 AS reset, memo.reset_stats();

-------------------------------------------------------------------------------
-- Fresh seed: every case, one line per scope and sort (booleans per page)
-------------------------------------------------------------------------------
TRUNCATE last_run;
INSERT INTO last_run SELECT * FROM run_matrix(:'scopes');
SELECT scope, sort, array_agg(page ORDER BY page) AS pages, array_agg(rows ORDER BY page) AS rows,
       min(total) AS total, array_agg(cached_ok ORDER BY page) AS cached_ok,
       array_agg(oracle_ok ORDER BY page) AS oracle_ok
  FROM last_run WHERE filters = '{}'
 GROUP BY scope, sort ORDER BY array_position(:'scopes'::bigint[], scope), sort;
SELECT scope, filters, sort, array_agg(page ORDER BY page) AS pages, array_agg(rows ORDER BY page) AS rows,
       min(total) AS total, array_agg(cached_ok ORDER BY page) AS cached_ok,
       array_agg(oracle_ok ORDER BY page) AS oracle_ok
  FROM last_run WHERE filters <> '{}'
 GROUP BY scope, filters, sort ORDER BY scope, filters::text, sort;
SELECT count(*) AS cases, count(*) FILTER (WHERE NOT cached_ok) AS cached_mismatches,
       count(*) FILTER (WHERE NOT oracle_ok) AS oracle_mismatches FROM last_run;

-- The first run computed; nothing changed since, so the second run is all
-- cache hits: calls and hits both grow by the number of cases.
SELECT * FROM cache_stats();
SELECT memo.reset_stats();
SELECT * FROM matrix_summary(:'scopes');
SELECT * FROM cache_stats();
-- And a single repeated call: the second one is a hit.
SELECT memo.reset_stats();
SELECT count(*) FROM directory.cached_list_employees(1, 3, 50, 'title:asc', '{"location": "Toronto"}');
SELECT * FROM cache_stats();
SELECT count(*) FROM directory.cached_list_employees(1, 3, 50, 'title:asc', '{"location": "Toronto"}');
SELECT * FROM cache_stats();

-- A page larger than work_mem: its rows leave memory, and the total is
-- written into a new set instead of in place (a hit and a miss, both exact).
SET work_mem = '64kB';
SELECT page, cached_page(1, page, 500, 'hired_on:desc', '{}') = uncached_page(1, page, 500, 'hired_on:desc', '{}') AS same,
       cached_page(1, page, 500, 'hired_on:desc', '{}') = uncached_page(1, page, 500, 'hired_on:desc', '{}') AS same_on_hit
  FROM generate_series(1, 2) AS page;
RESET work_mem;

-------------------------------------------------------------------------------
-- Rename: a row moves from the first page to the last
-------------------------------------------------------------------------------
SELECT id AS first_id FROM directory.cached_list_employees(1, 1, 7) LIMIT 1 \gset
SELECT :first_id = ANY (SELECT id FROM directory.cached_list_employees(1, 1, 7)) AS on_first_page;
SELECT directory.rename_employee(:first_id, 'Zzz_%Zimmer');
SELECT :first_id = ANY (SELECT id FROM directory.cached_list_employees(1, 1, 7)) AS still_on_first_page,
       (SELECT id FROM directory.cached_list_employees(1, 1, 1, 'full_name:desc')) = :first_id AS first_descending,
       (SELECT id FROM directory.cached_list_employees(1, 286, 7) OFFSET 4) = :first_id AS last_on_last_page;
SELECT * FROM matrix_summary(:'scopes');
-- name_prefix escapes LIKE wildcards: 'Zzz_%' matches the new name only,
-- 'Zzz%' and 'Z_z' nothing (as LIKE patterns they would match it).
SELECT count(*) AS like_would_match FROM directory.employees
 WHERE full_name LIKE 'Zzz%' AND full_name LIKE 'Z_z%';
SELECT f AS filters, (SELECT array_agg(id) FROM directory.cached_list_employees(1, 1, 20, 'full_name:asc', f::jsonb)) AS ids
  FROM unnest(ARRAY['{"name_prefix": "Zzz_%"}', '{"name_prefix": "Zzz%"}', '{"name_prefix": "Z_z"}']) AS f;

-- Inside a transaction, pg_memo bypasses the cache after the transaction's
-- own write; a rollback leaves the cached results valid.
BEGIN;
SELECT directory.rename_employee(:first_id, 'Aaa Aardvark');
SELECT (SELECT id FROM directory.cached_list_employees(1, 1, 1)) = :first_id AS first_in_transaction;
ROLLBACK;
SELECT (SELECT id FROM directory.cached_list_employees(1, 1, 1)) = :first_id AS first_after_rollback,
       (SELECT full_name FROM directory.cached_list_employees(1, 1, 1, 'full_name:desc')) AS last_name_after_rollback;

-------------------------------------------------------------------------------
-- Hires: under a leaf (who becomes a manager) and under an executive
-------------------------------------------------------------------------------
SELECT total_count, sub_org_size FROM directory.cached_list_employees(1999, 1, 7);
SELECT directory.hire_employee(1999, 'Nora New') AS hire_1 \gset
SELECT directory.hire_employee(1999, 'Ned New', 'Software Engineer', 'Engineering', 'Remote', DATE '2024-06-01') AS hire_2 \gset
SELECT directory.hire_employee(3, 'Nils New') AS hire_3 \gset
SELECT :hire_1 = 2001 AND :hire_2 = 2002 AND :hire_3 = 2003 AS ids_follow_seed;
SELECT id, full_name, title, department, location, manager_id, org_depth, sub_org_size, total_count
  FROM directory.cached_list_employees(1999, 1, 7, 'org_depth:asc') ORDER BY id;
SELECT total_count FROM directory.cached_list_employees(1, 1, 1);
SELECT * FROM matrix_summary(:'scopes');

-------------------------------------------------------------------------------
-- Deletes: a leaf, and a manager whose reports move up to their manager
-------------------------------------------------------------------------------
SELECT id, manager_id, sub_org_size FROM directory.employees WHERE id IN (12, 84) ORDER BY id;
SELECT count(*) FILTER (WHERE manager_id = 12) AS reports_of_12,
       count(*) FILTER (WHERE manager_id = 84) AS reports_of_84
  FROM directory.employees;
SELECT directory.remove_employee(:hire_2);
SELECT directory.remove_employee(84);
SELECT count(*) FILTER (WHERE manager_id = 12) AS reports_of_12,
       (SELECT sub_org_size FROM directory.employees WHERE id = 12) AS size_of_12
  FROM directory.employees;
SELECT total_count FROM directory.cached_list_employees(1, 1, 1);
SELECT * FROM matrix_summary(:'scopes');

-------------------------------------------------------------------------------
-- Move a whole sub-organisation: vice president 12 (under executive 2) goes
-- under director 117 in executive 3's branch; depths and sizes change
-------------------------------------------------------------------------------
SELECT id, manager_id, org_depth, sub_org_size FROM directory.employees WHERE id IN (2, 3, 12, 117) ORDER BY id;
SELECT (SELECT total_count FROM directory.cached_list_employees(2, 1, 1)) AS exec_2_total,
       (SELECT total_count FROM directory.cached_list_employees(3, 1, 1)) AS exec_3_total,
       (SELECT max(org_depth) FROM directory.cached_list_employees(12, 1, 500)) AS deepest_under_12;
SELECT directory.move_employee(12, 117);
SELECT id, manager_id, org_depth, sub_org_size FROM directory.employees WHERE id IN (2, 3, 12, 117) ORDER BY id;
SELECT (SELECT total_count FROM directory.cached_list_employees(2, 1, 1)) AS exec_2_total,
       (SELECT total_count FROM directory.cached_list_employees(3, 1, 1)) AS exec_3_total,
       (SELECT max(org_depth) FROM directory.cached_list_employees(12, 1, 500)) AS deepest_under_12,
       (SELECT org_depth || '/' || sub_org_size FROM directory.cached_list_employees(3, 1, 1, 'org_depth:asc')
         WHERE id = 3) AS exec_3_depth_size;
SELECT count(*) AS inconsistent FROM directory.check_consistency();
SELECT * FROM matrix_summary(:'scopes');
-- And back up again, directly under the CEO.
SELECT directory.move_employee(12, 1);
SELECT (SELECT org_depth FROM directory.cached_list_employees(12, 1, 1, 'org_depth:asc')) AS depth_of_12;
SELECT * FROM matrix_summary(:'scopes');

-------------------------------------------------------------------------------
-- A direct UPDATE of a listed column
-------------------------------------------------------------------------------
SELECT count(*) AS berlin FROM directory.cached_list_employees(1, 1, 500, 'full_name:asc', '{"location": "Berlin"}');
UPDATE directory.employees SET location = 'Berlin' WHERE department = 'Legal' AND location = 'London';
SELECT count(*) AS berlin FROM directory.cached_list_employees(1, 1, 500, 'full_name:asc', '{"location": "Berlin"}');
SELECT * FROM matrix_summary(:'scopes');

-------------------------------------------------------------------------------
-- TRUNCATE, then re-seeding
-------------------------------------------------------------------------------
SELECT total_count FROM directory.cached_list_employees(1, 1, 1);
TRUNCATE directory.employees;
\set SHOW_CONTEXT never
SELECT * FROM directory.cached_list_employees(1);
SELECT * FROM directory.list_employees(1);
\set SHOW_CONTEXT errors
SELECT directory.directory_seed(1500, 3);
SELECT total_count FROM directory.cached_list_employees(1, 1, 1);
SELECT * FROM matrix_summary('{1,2,3,12,1499}');
SELECT directory.directory_seed(2000);
SELECT total_count FROM directory.cached_list_employees(1, 1, 1);
SELECT * FROM matrix_summary(:'scopes');
SELECT count(*) AS inconsistent FROM directory.check_consistency();
