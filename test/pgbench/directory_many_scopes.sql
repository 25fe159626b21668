-- pg_memo_directory: managers looking at their own sub-organisation. The
-- scope is the manager of a uniformly random employee, so a manager is
-- picked in proportion to their number of direct reports; every manager is
-- a distinct count key and page key. The lookup is a primary-key probe that
-- tolerates gaps in the ids (falls back to the CEO past the last id).
-- max_id should match the seed (directory_seed(500000) by default).
--   pgbench -n -f many_scopes.sql -c 2 -j 2 -T 30 <db>
-- (In sort literals the colon is followed by a quote: pgbench's extended and
-- prepared modes would take ':asc' inside a string for a variable.)
\set max_id 500000
\set r random(2, :max_id)
SELECT coalesce((SELECT e.manager_id FROM directory.employees e
                  WHERE e.id >= :r ORDER BY e.id LIMIT 1), 1) AS scope \gset
SELECT * FROM directory.cached_list_employees(:scope, 1, 20, 'full_name:' || 'asc', '{}');
