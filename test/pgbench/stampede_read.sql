-- The hot key: a count whose computation scans the whole table (tens of ms).
SELECT memo.count('stampede', 'SELECT * FROM stampede_items WHERE payload LIKE $1', '{%7abc%}');
