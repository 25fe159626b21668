-- The hot key as an application sends it, registered with memo.cache_statement
-- (bench/stampede.sh --registered): the same count, served by the pg_memo node.
SELECT count(*) FROM stampede_items WHERE payload LIKE '%7abc%';
