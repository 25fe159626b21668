-- pg_memo_directory: 99% reads of the kinds above plus filtered and
-- re-sorted listings, 1% writes (a third each: rename, hire, move). Every
-- committed write invalidates all cached listings of directory.employees.
-- Writes pick existing rows by "first id >= random", so removed ids or a
-- different seed size never make a statement fail; a move whose target is
-- inside the moved sub-organisation is skipped by its WHERE clause.
-- max_id should match the seed (directory_seed(500000) by default).
--   pgbench -n -f mixed_writes.sql -c 2 -j 2 -T 60 <db>
-- (In sort literals the colon is followed by a quote: pgbench's extended and
-- prepared modes would take ':asc' inside a string for a variable.)
\set max_id 500000
\set kind random(1, 1000)
\set r random(2, :max_id)
\set r2 random(2, :max_id)
\set page random(1, 50)
\set sortno random(0, 5)
\set dirno random(0, 1)
\set deptno random(0, 7)
\if :kind <= 300
-- hot key
SELECT * FROM directory.cached_list_employees(1, 1, 20, 'full_name:' || 'asc', '{}');
\elif :kind <= 550
-- page walk
SELECT * FROM directory.cached_list_employees(1, :page, 20, 'full_name:' || 'asc', '{}');
\elif :kind <= 800
-- a manager's own sub-organisation
SELECT coalesce((SELECT e.manager_id FROM directory.employees e
                  WHERE e.id >= :r ORDER BY e.id LIMIT 1), 1) AS scope \gset
SELECT * FROM directory.cached_list_employees(:scope, 1, 20, 'full_name:' || 'asc', '{}');
\elif :kind <= 990
-- one department of the company, any sort key and direction
SELECT * FROM directory.cached_list_employees(
    1, 1 + :page % 5, 20,
    (ARRAY['full_name', 'title', 'department', 'location', 'hired_on', 'org_depth'])[1 + :sortno]
        || ':' || (ARRAY['asc', 'desc'])[1 + :dirno],
    jsonb_build_object('department',
        (ARRAY['Engineering', 'Sales', 'Marketing', 'Finance', 'Operations',
               'Human Resources', 'Legal', 'Product'])[1 + :deptno]));
\elif :kind <= 993
SELECT directory.rename_employee(e.id, 'Renamed ' || e.id)
  FROM (SELECT x.id FROM directory.employees x WHERE x.id >= :r ORDER BY x.id LIMIT 1) AS e;
\elif :kind <= 996
SELECT directory.hire_employee(m.id, 'New Hire ' || :r::text)
  FROM (SELECT x.id FROM directory.employees x WHERE x.id >= :r ORDER BY x.id LIMIT 1) AS m;
\else
SELECT directory.move_employee(e.id, m.id)
  FROM (SELECT x.id FROM directory.employees x WHERE x.id >= :r ORDER BY x.id LIMIT 1) AS e,
       (SELECT x.id, x.path FROM directory.employees x WHERE x.id >= :r2 ORDER BY x.id LIMIT 1) AS m
 WHERE NOT m.path @> ARRAY[e.id];
\endif
