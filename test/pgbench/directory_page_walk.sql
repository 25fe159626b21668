-- pg_memo_directory: users paging through the whole company (CEO scope,
-- default sort), pages 1..50 uniformly: 50 page keys sharing one count key.
--   pgbench -n -f page_walk.sql -c 2 -j 2 -T 30 <db seeded with directory_seed(500000)>
-- (In sort literals the colon is followed by a quote: pgbench's extended and
-- prepared modes would take ':asc' inside a string for a variable.)
\set page random(1, 50)
SELECT * FROM directory.cached_list_employees(1, :page, 20, 'full_name:' || 'asc', '{}');
