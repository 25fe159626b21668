-- pg_memo_directory 1.1: directory.cached_count_employees, the total of a
-- listing on its own. It equals the uncached count; it answers when a page
-- is past the end or the filters match nothing; it shares the memo.count
-- entry of cached_list_employees (one computation for both); it validates
-- its arguments exactly like cached_list_employees; and it arrives by
-- ALTER EXTENSION ... UPDATE from 1.0.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
SELECT directory.directory_seed(2000);

SELECT extversion FROM pg_extension WHERE extname = 'pg_memo_directory';
-- Declared VOLATILE (memo.count is), PARALLEL UNSAFE, without SET or
-- SECURITY DEFINER (the memo key holds the caller's role and search_path),
-- with a comment; a member of the extension.
SELECT p.oid::regprocedure AS function, pg_get_function_arguments(p.oid) AS arguments,
       p.prorettype::regtype AS returns, l.lanname AS language, p.provolatile AS volatile,
       p.proparallel AS parallel, p.prosecdef AS security_definer, p.proconfig AS settings,
       obj_description(p.oid, 'pg_proc') AS comment,
       EXISTS (SELECT FROM pg_depend d
                WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_memo_directory'))
         AS extension_member
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.oid = 'directory.cached_count_employees(bigint, jsonb)'::regprocedure;
-- Its definition as a fresh install makes it, to compare after the upgrade.
SELECT md5(pg_get_functiondef('directory.cached_count_employees(bigint, jsonb)'::regprocedure))
         AS fresh_definition \gset

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------

-- The uncached truth: the rows of list_employees across all its pages
-- (2000 employees, pages of 500).
CREATE FUNCTION uncached_total(scope bigint, filters jsonb) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM generate_series(1, 5) AS p,
           LATERAL directory.list_employees(scope, p, 500, 'full_name:asc', filters);
$$;

CREATE FUNCTION count_outcome(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM (' || query || ') AS q' INTO n;
    RETURN 'ok: ' || n || ' rows';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END;
$$;

CREATE FUNCTION count_cache_stats(OUT cache_name text, OUT calls bigint, OUT hits bigint, OUT misses bigint)
RETURNS SETOF record LANGUAGE sql AS $$
    SELECT s.cache_name, s.calls, s.hits, s.misses FROM memo.stats s
     WHERE s.datname = current_database() AND s.cache_name LIKE 'employees.%'
     ORDER BY s.cache_name;
$$;

-- The page-plus-total pattern of an API (README): one call for the page;
-- only when it is empty, the companion, to tell "past the end" from "no
-- matches". Returns the rows on the page, the total and a verdict.
CREATE FUNCTION api_page(scope bigint, page int, page_size int, sort text, filters jsonb,
                         OUT rows int, OUT total bigint, OUT verdict text)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT count(*), max(r.total_count) INTO rows, total
      FROM directory.cached_list_employees(scope, page, page_size, sort, filters) AS r;
    IF rows > 0 THEN
        verdict := 'page';
    ELSE
        total := directory.cached_count_employees(scope, filters);
        verdict := CASE WHEN total = 0 THEN 'no matches' ELSE 'past the end' END;
    END IF;
END;
$$;

-------------------------------------------------------------------------------
-- The total equals the uncached count, for several scopes and filters
-------------------------------------------------------------------------------

-- Scopes: the CEO, two executives, a vice president, a leaf.
SELECT id, title, org_depth, sub_org_size FROM directory.employees
 WHERE id IN (1, 2, 3, 12, 1999) ORDER BY id;

SELECT s.scope, f.filters, directory.cached_count_employees(s.scope, f.filters) AS total,
       directory.cached_count_employees(s.scope, f.filters) = uncached_total(s.scope, f.filters) AS equals_uncached
  FROM unnest('{1,2,3,12,1999}'::bigint[]) WITH ORDINALITY AS s(scope, so),
       unnest(ARRAY['{}', '{"department": "Engineering"}', '{"title": "Director"}', '{"location": "Berlin"}',
                    '{"name_prefix": "Ma"}', '{"name_prefix": ""}', '{"department": "Sales", "location": "London"}',
                    '{"title": "Director", "name_prefix": "S"}', '{"name_prefix": "Zzz_%"}',
                    '{"department": "no such department"}']::jsonb[]) WITH ORDINALITY AS f(filters, fo)
 ORDER BY s.so, f.fo;
-- Without filters, the default: the scope's sub_org_size.
SELECT count(*) AS scopes_checked,
       count(*) FILTER (WHERE directory.cached_count_employees(e.id) <> e.sub_org_size) AS mismatches
  FROM directory.employees e WHERE e.id % 97 = 1 OR e.id <= 9;
-- And the total_count of every row of a non-empty page.
SELECT DISTINCT r.total_count = directory.cached_count_employees(3, '{"location": "Berlin"}') AS same_total
  FROM directory.cached_list_employees(3, 1, 20, 'full_name:asc', '{"location": "Berlin"}') AS r;

-------------------------------------------------------------------------------
-- Past the end, and no matches: the page is empty, the companion answers
-------------------------------------------------------------------------------

-- Past the end: 0 rows, yet the total.
SELECT count(*) AS rows FROM directory.cached_list_employees(2, 1000, 20, 'hired_on:desc', '{"location": "Berlin"}');
SELECT directory.cached_count_employees(2, '{"location": "Berlin"}') AS total,
       uncached_total(2, '{"location": "Berlin"}') AS uncached;
-- The last page holds the tail, the next one nothing.
SELECT count(*) AS rows_on_last_page FROM directory.cached_list_employees(2, 2, 50, 'full_name:asc', '{"location": "Berlin"}');
SELECT count(*) AS rows_after_last_page FROM directory.cached_list_employees(2, 3, 50, 'full_name:asc', '{"location": "Berlin"}');
-- No matches: 0 rows, and a total of 0.
SELECT count(*) AS rows FROM directory.cached_list_employees(2, 1, 20, 'full_name:asc', '{"department": "Sales"}');
SELECT directory.cached_count_employees(2, '{"department": "Sales"}') AS total;
SELECT directory.cached_count_employees(1999, '{"name_prefix": "Zzz"}') AS total;
-- A leaf's scope is the leaf alone.
SELECT directory.cached_count_employees(1999) AS total;

-- The pattern, as an API runs it: a page, the last page, past the end, no
-- matches on page 1 and on page 9.
SELECT v.scope, v.page, v.filters, p.*
  FROM (VALUES (2, 1, '{"location": "Berlin"}'::jsonb), (2, 4, '{"location": "Berlin"}'),
               (2, 5, '{"location": "Berlin"}'), (2, 1, '{"department": "Sales"}'),
               (2, 9, '{"department": "Sales"}')) AS v(scope, page, filters),
       LATERAL api_page(v.scope, v.page, 20, 'full_name:asc', v.filters) AS p;

-------------------------------------------------------------------------------
-- One memo.count entry for both: after the listing, the companion is a hit,
-- and the other way round
-------------------------------------------------------------------------------
SELECT memo.reset() >= 0 AS reset, memo.reset_stats();
-- A page past the end computes the count and the (empty) page.
SELECT count(*) AS rows FROM directory.cached_list_employees(3, 1000, 20, 'title:desc', '{"location": "Berlin"}');
SELECT * FROM count_cache_stats();
-- The companion: a hit on the listing's count entry.
SELECT directory.cached_count_employees(3, '{"location": "Berlin"}') AS total;
SELECT * FROM count_cache_stats();
-- The other way round, with the filter keys in another order (jsonb keeps
-- one order), another sort and another page: the companion computes, the
-- listing's count is a hit (its page is a miss).
SELECT directory.cached_count_employees(3, '{"location": "London", "department": "Sales"}') AS total;
SELECT count(*) AS rows FROM directory.cached_list_employees(3, 2, 10, 'org_depth:asc', '{"department": "Sales", "location": "London"}');
SELECT * FROM count_cache_stats();
-- No matches: the list computes a count of 0 (and an empty page), the
-- companion hits it.
SELECT count(*) AS rows FROM directory.cached_list_employees(3, 1, 20, 'full_name:asc', '{"title": "no such title"}');
SELECT directory.cached_count_employees(3, '{"title": "no such title"}') AS total;
SELECT * FROM count_cache_stats();
-- The companion twice: the second call is a hit.
SELECT memo.reset_stats();
SELECT directory.cached_count_employees(12, '{"name_prefix": "A"}') AS total;
SELECT directory.cached_count_employees(12, '{"name_prefix": "A"}') AS total;
SELECT * FROM count_cache_stats();

-- A write invalidates the entry; the companion sees the new total.
SELECT directory.cached_count_employees(12) AS total_before;
SELECT directory.hire_employee(12, 'Tess Total') AS hired \gset
SELECT directory.cached_count_employees(12) AS total_after, uncached_total(12, '{}') AS uncached;
SELECT count(*) = directory.cached_count_employees(12) - 1 AS others_unchanged
  FROM directory.employees WHERE path @> ARRAY[12::bigint] AND id <> :hired;
SELECT directory.remove_employee(:hired);
SELECT directory.cached_count_employees(12) AS total_after_remove;

-------------------------------------------------------------------------------
-- The same checks as cached_list_employees: same SQLSTATE, same message
-------------------------------------------------------------------------------
-- Each case: the arguments, the companion's outcome, and whether
-- cached_list_employees(scope_root, 1, 20, 'full_name:asc', filters) fails
-- the same way (or, for valid arguments, succeeds too).
SELECT args, count_outcome('SELECT directory.cached_count_employees(' || args || ')') AS cached_count_employees,
       regexp_replace(count_outcome('SELECT directory.cached_count_employees(' || args || ')'), '^ok: .*', 'ok')
         = regexp_replace(count_outcome('SELECT * FROM directory.cached_list_employees(' ||
                                  CASE WHEN args LIKE '%,%' THEN regexp_replace(args, ',', ', 1, 20, ''full_name:asc'',')
                                       ELSE args END || ')'), '^ok: .*', 'ok') AS same_as_list
  FROM unnest(ARRAY[
    -- valid
    $$1$$,
    $$1, '{}'$$,
    $$300, '{"department": "no such department"}'$$,
    -- NULL
    $$NULL$$,
    $$1, NULL$$,
    $$NULL, NULL$$,
    -- scope_root
    $$999999$$,
    $$-1$$,
    $$0$$,
    -- filters
    $$1, '[]'$$,
    $$1, '"Sales"'$$,
    $$1, 'null'$$,
    $$1, '5'$$,
    $$1, '{"dept": "Sales"}'$$,
    $$1, '{"department": "Sales", "manager": "x", "boss": "y"}'$$,
    $$1, '{"department": 5}'$$,
    $$1, '{"title": null}'$$,
    $$1, '{"location": ["Berlin"]}'$$,
    $$1, '{"name_prefix": {"starts": "A"}}'$$,
    $$1, '{"name_prefix": true}'$$,
    -- bad input rejected by the argument types
    $$1, '{"department": '$$,
    $$1, '{"title": "\u0000"}'$$,
    $$1, '{"title": "\ud800"}'$$,
    $$1, '{"title": 1e1000000}'$$,
    $$1, convert_from('\x7b7d00', 'UTF8')::jsonb$$,
    $$'one'$$,
    $$'1.5'$$,
    $$'99999999999999999999'$$
  ]) WITH ORDINALITY AS c(args, n)
 ORDER BY n;
-- The scope check also follows the data: after TRUNCATE, no scope exists.
BEGIN;
TRUNCATE directory.employees;
SELECT count_outcome('SELECT directory.cached_count_employees(1)') AS cached_count_employees,
       count_outcome('SELECT * FROM directory.cached_list_employees(1)') AS cached_list_employees;
ROLLBACK;
-- The message as a client sees it.
\set SHOW_CONTEXT never
SELECT directory.cached_count_employees(1, '{"dept": "Sales"}');
SELECT directory.cached_count_employees(424242);
\set SHOW_CONTEXT errors

-------------------------------------------------------------------------------
-- Upgrade from 1.0
-------------------------------------------------------------------------------
DROP EXTENSION pg_memo_directory;
CREATE EXTENSION pg_memo_directory VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_memo_directory';
SELECT to_regprocedure('directory.cached_count_employees(bigint, jsonb)') AS companion_in_1_0;
ALTER EXTENSION pg_memo_directory UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_memo_directory';
-- 1.1 watches the table with deltas, 1.2 with the scope column path.
SELECT deltas, scope_columns FROM memo.watched WHERE table_name = 'directory.employees'::regclass;
-- The same function as a fresh 1.1 install makes, a member of the extension.
SELECT md5(pg_get_functiondef('directory.cached_count_employees(bigint, jsonb)'::regprocedure)) = :'fresh_definition'
         AS same_as_fresh,
       obj_description('directory.cached_count_employees(bigint, jsonb)'::regprocedure, 'pg_proc') IS NOT NULL
         AS commented,
       EXISTS (SELECT FROM pg_depend d
                WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                  AND d.objid = 'directory.cached_count_employees(bigint, jsonb)'::regprocedure
                  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_memo_directory'))
         AS extension_member;
-- And it works: totals, past the end, no matches, the shared entry.
SELECT directory.directory_seed(2000);
SELECT s.scope, directory.cached_count_employees(s.scope, f.filters) AS total,
       directory.cached_count_employees(s.scope, f.filters) = uncached_total(s.scope, f.filters) AS equals_uncached
  FROM unnest('{1,2,12}'::bigint[]) AS s(scope),
       unnest(ARRAY['{}', '{"location": "Berlin"}']::jsonb[]) WITH ORDINALITY AS f(filters, fo)
 ORDER BY s.scope, f.fo;
SELECT memo.reset() >= 0 AS reset, memo.reset_stats();
SELECT v.scope, v.page, v.filters, p.*
  FROM (VALUES (2, 1, '{"location": "Berlin"}'::jsonb), (2, 5, '{"location": "Berlin"}'),
               (2, 1, '{"department": "Sales"}')) AS v(scope, page, filters),
       LATERAL api_page(v.scope, v.page, 20, 'full_name:asc', v.filters) AS p;
SELECT * FROM count_cache_stats();
-- Writes after the update are carried: a rename and a hire correct the
-- count and keep the listing exact, without recomputing the count.
SELECT directory.cached_count_employees(2) AS before_writes;
SELECT computations AS count_computations FROM memo.stats
 WHERE datname = current_database() AND cache_name = 'employees.count' \gset
SELECT directory.rename_employee(12, 'Ada Delta');
SELECT directory.hire_employee(2, 'Bob Delta') > 0 AS hired;
SELECT directory.cached_count_employees(2) = uncached_total(2, '{}') AS count_exact,
       (SELECT array_agg(c.id) FROM directory.cached_list_employees(2) c)
         = (SELECT array_agg(u.id) FROM directory.list_employees(2) u) AS page_exact;
SELECT computations = :count_computations AS count_not_recomputed, delta_corrected > 0 AS corrected
  FROM memo.stats WHERE datname = current_database() AND cache_name = 'employees.count';
