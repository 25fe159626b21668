-- The same count, uncached, for comparison with hot_count.sql.
SELECT count(*) FROM stampede_items WHERE category = 7;
