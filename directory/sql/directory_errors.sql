-- pg_memo_directory: bad input gets a clear error with an SQLSTATE, never a
-- silent default, and cached_list_employees fails exactly like
-- list_employees.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
SELECT directory.directory_seed(300);

CREATE FUNCTION outcome(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM (' || query || ') AS q' INTO n;
    RETURN 'ok: ' || n || ' rows';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- Each case: the arguments, list_employees' outcome, and whether
-- cached_list_employees' outcome is the same.
SELECT args, outcome('SELECT * FROM directory.list_employees(' || args || ')') AS list_employees,
       outcome('SELECT * FROM directory.list_employees(' || args || ')')
         = outcome('SELECT * FROM directory.cached_list_employees(' || args || ')') AS cached_same
  FROM unnest(ARRAY[
    -- valid edge cases
    $$1$$,
    $$1, 1, 500$$,
    $$1, 1, 1, 'org_depth:desc'$$,
    $$1, 2147483647, 500$$,
    $$300, 1, 20, 'hired_on:asc', '{"department": "no such department"}'$$,
    $$1, 1, 20, 'full_name:asc', '{"name_prefix": ""}'$$,
    -- NULL for any argument
    $$NULL$$,
    $$1, NULL$$,
    $$1, 1, NULL$$,
    $$1, 1, 20, NULL$$,
    $$1, 1, 20, 'full_name:asc', NULL$$,
    -- scope_root
    $$999999$$,
    $$-1$$,
    -- page and page_size
    $$1, 0$$,
    $$1, -3$$,
    $$1, 1, 0$$,
    $$1, 1, 501$$,
    $$1, 1, -20$$,
    -- sort
    $$1, 1, 20, 'salary:asc'$$,
    $$1, 1, 20, 'id:asc'$$,
    $$1, 1, 20, 'full_name'$$,
    $$1, 1, 20, 'full_name:'$$,
    $$1, 1, 20, 'full_name:up'$$,
    $$1, 1, 20, 'full_name:ASC'$$,
    $$1, 1, 20, 'Full_Name:asc'$$,
    $$1, 1, 20, 'full_name:asc:desc'$$,
    $$1, 1, 20, ' full_name:asc'$$,
    $$1, 1, 20, ''$$,
    -- filters
    $$1, 1, 20, 'full_name:asc', '[]'$$,
    $$1, 1, 20, 'full_name:asc', '"Sales"'$$,
    $$1, 1, 20, 'full_name:asc', 'null'$$,
    $$1, 1, 20, 'full_name:asc', '{"dept": "Sales"}'$$,
    $$1, 1, 20, 'full_name:asc', '{"department": "Sales", "manager": "x"}'$$,
    $$1, 1, 20, 'full_name:asc', '{"department": 5}'$$,
    $$1, 1, 20, 'full_name:asc', '{"title": null}'$$,
    $$1, 1, 20, 'full_name:asc', '{"location": ["Berlin"]}'$$,
    $$1, 1, 20, 'full_name:asc', '{"name_prefix": {"starts": "A"}}'$$,
    $$1, 1, 20, 'full_name:asc', '{"name_prefix": true}'$$,
    -- malformed values are rejected by the types themselves
    $$1, 1, 20, 'full_name:asc', '{"department": '$$,
    $$'one'$$
  ]) WITH ORDINALITY AS c(args, n)
 ORDER BY n;

-- The messages, as a client sees them.
\set SHOW_CONTEXT never
SELECT * FROM directory.cached_list_employees(1, 1, 20, 'name:asc');
SELECT * FROM directory.cached_list_employees(1, 1, 20, 'full_name:sideways');
SELECT * FROM directory.cached_list_employees(1, 1, 20, 'full_name:asc', '{"dept": "Sales"}');

-- Write functions.
SELECT args, outcome('SELECT directory.' || args) AS outcome
  FROM unnest(ARRAY[
    $$move_employee(2, 2)$$,
    $$move_employee(2, (SELECT max(id) FROM directory.employees WHERE path @> ARRAY[2::bigint]))$$,
    $$move_employee(1, 5)$$,
    $$move_employee(999999, 1)$$,
    $$move_employee(20, 999999)$$,
    $$move_employee(NULL, 1)$$,
    $$move_employee(20, NULL)$$,
    $$rename_employee(999999, 'X')$$,
    $$rename_employee(20, NULL)$$,
    $$hire_employee(999999, 'X')$$,
    $$hire_employee(NULL, 'X')$$,
    $$hire_employee(1, NULL)$$,
    $$remove_employee(1)$$,
    $$remove_employee(999999)$$,
    $$remove_employee(NULL)$$,
    $$directory_seed(0)$$,
    $$directory_seed(NULL)$$,
    $$directory_seed(10, NULL)$$
  ]) WITH ORDINALITY AS c(args, n)
 ORDER BY n;
-- Moving under one's current manager changes nothing.
SELECT directory.move_employee(20, (SELECT manager_id FROM directory.employees WHERE id = 20));
SELECT count(*) AS inconsistent FROM directory.check_consistency();

-- Structural writes need READ COMMITTED.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT directory.hire_employee(1, 'Late Hire');
ROLLBACK;
