-- A memo.count hit on one hot key (the cache is warm after the first call).
SELECT memo.count('hot.count', 'SELECT * FROM stampede_items WHERE category = $1::int', '{7}');
