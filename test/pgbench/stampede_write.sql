-- One committed write to the hot key's table.
\set id random(1, 400000)
UPDATE stampede_items SET category = category + 1 WHERE id = :id;
