-- pg_memo_directory: install, seed shape and determinism, derived columns,
-- and the guard on structural writes.
CREATE EXTENSION pg_memo_directory CASCADE;
SELECT extname, extversion, extnamespace::regnamespace AS schema
  FROM pg_extension WHERE extname LIKE 'pg_memo%' ORDER BY extname;
-- Watched at install.
SELECT table_name, triggers_enabled FROM memo.watched;

-- A small org: one CEO, 8 executives, then 4..10 reports per manager.
SELECT directory.directory_seed(2000);
SELECT org_depth, count(*) AS employees,
       count(*) FILTER (WHERE sub_org_size > 1) AS managers,
       min(sub_org_size) AS min_size, max(sub_org_size) AS max_size
  FROM directory.employees GROUP BY org_depth ORDER BY org_depth;
SELECT id, manager_id, title, department, path, org_depth, sub_org_size
  FROM directory.employees WHERE org_depth <= 1 ORDER BY id;
-- Managers below the executives lead 1..10 people (fewer than 4 only where
-- the last level ran out).
SELECT min(reports) AS min_reports, max(reports) AS max_reports,
       round(avg(reports), 1) AS avg_reports
  FROM (SELECT manager_id, count(*) AS reports FROM directory.employees
         WHERE manager_id > 1 GROUP BY manager_id) AS r;
SELECT count(DISTINCT full_name) AS distinct_names, count(DISTINCT title) AS titles,
       count(DISTINCT department) AS departments, count(DISTINCT location) AS locations,
       min(hired_on) >= DATE '2005-01-01' AND max(hired_on) < DATE '2025-01-01' AS hire_dates_in_range,
       count(*) = count(DISTINCT email) AS unique_emails
  FROM directory.employees;
-- Departments follow the executive at the top of each branch.
SELECT count(*) AS wrong_department
  FROM directory.employees e JOIN directory.employees x ON x.id = e.path[2]
 WHERE e.department <> x.department;
-- Stored path, org_depth and sub_org_size agree with manager_id.
SELECT count(*) AS inconsistent FROM directory.check_consistency();
SELECT last_value FROM directory.employees_id_seq;

-- Deterministic: the same arguments give the same rows; another seed,
-- another org.
SELECT md5(string_agg(e::text, E'\n' ORDER BY e.id)) AS first_hash FROM directory.employees AS e \gset
SELECT directory.directory_seed(2000, 2);
SELECT md5(string_agg(e::text, E'\n' ORDER BY e.id)) = :'first_hash' AS same_as_seed_1
  FROM directory.employees AS e;
SELECT count(*) AS inconsistent FROM directory.check_consistency();
SELECT directory.directory_seed(2000);
SELECT md5(string_agg(e::text, E'\n' ORDER BY e.id)) = :'first_hash' AS same_as_before
  FROM directory.employees AS e;

-- Small and odd sizes still give one consistent tree of exactly n rows.
CREATE FUNCTION seed_shape(n int, OUT employees bigint, OUT executives bigint, OUT depth int,
                           OUT inconsistent bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM directory.directory_seed(n);
    SELECT count(*), count(*) FILTER (WHERE org_depth = 1), max(org_depth)
      INTO employees, executives, depth FROM directory.employees;
    SELECT count(*) INTO inconsistent FROM directory.check_consistency();
END;
$$;
SELECT n, s.* FROM unnest(ARRAY[1, 2, 9, 10, 57, 300, 5000]) AS n, LATERAL seed_shape(n) AS s;
-- Seeding twice in one transaction works too.
BEGIN;
SELECT directory.directory_seed(100), directory.directory_seed(2000);
COMMIT;
SELECT md5(string_agg(e::text, E'\n' ORDER BY e.id)) = :'first_hash' AS same_as_before
  FROM directory.employees AS e;

-- Structural writes must go through the functions; other columns may be
-- updated directly.
\set SHOW_CONTEXT never
INSERT INTO directory.employees (manager_id, full_name, email, title, department, location, hired_on, path, org_depth, sub_org_size)
VALUES (1, 'Direct Insert', 'x@example.com', 'Intern', 'Sales', 'Remote', DATE '2024-01-01', '{1,5000}', 1, 1);
DELETE FROM directory.employees WHERE id = 2000;
UPDATE directory.employees SET manager_id = 3 WHERE id = 2000;
UPDATE directory.employees SET sub_org_size = 7 WHERE id = 2000;
\set SHOW_CONTEXT errors
UPDATE directory.employees SET title = 'Principal Engineer', location = 'Remote' WHERE id = 2000;
SELECT id, title, location FROM directory.employees WHERE id = 2000;
SELECT count(*) AS inconsistent FROM directory.check_consistency();
