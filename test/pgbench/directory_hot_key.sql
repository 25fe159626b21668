-- pg_memo_directory: the hottest key. Page 1 of the whole company (CEO
-- scope), default sort, no filters: after the first call every transaction
-- is a cache hit for both memo.count and memo.list_as.
--   pgbench -n -f hot_key.sql -c 2 -j 2 -T 30 <db seeded with directory_seed(500000)>
-- (In sort literals the colon is followed by a quote: pgbench's extended and
-- prepared modes would take ':asc' inside a string for a variable.)
SELECT * FROM directory.cached_list_employees(1, 1, 20, 'full_name:' || 'asc', '{}');
