-- pg_memo_directory: one write per transaction, of the kinds an HR system
-- commits, all through the directory's own rules (the write functions, and
-- a plain UPDATE of title, which its write guard allows), so path,
-- org_depth and sub_org_size stay exact (directory.check_consistency()):
--   30% rename        rename_employee: a random employee takes a new last
--                     name (first name kept, last name from the seed's list)
--   30% title change  UPDATE title: a random individual contributor gets
--                     another individual-contributor title of their department
--   15% hire          hire_employee under the manager of a random employee
--                     (teams hire in proportion to their size)
--   15% remove        remove_employee of a random leaf (nobody reports to it)
--                     that is not in bench.managers, so the scopes the
--                     readers of directory_writes_team.sql list never vanish
--   10% move          move_employee of a random leaf under the manager of
--                     another random employee (a leaf has no sub-organisation,
--                     so it can never be moved under itself)
-- "Random" is the first id >= a uniform draw from 2..:max_id (the seeded
-- ids; hires get ids above it and are found the same way): removed ids
-- never make a statement fail. Every statement matches a row with any
-- seed size; hires and removes balance, so the head count stays about the
-- same. bench/directory_writes.sh creates bench.managers and passes
-- -D max_id=N (the seed size) and -D title_only=0, or 1 for title changes
-- only: the cheapest write, for high rates (--writer title).
--   pgbench -n -M prepared -c 1 --rate 10 -D max_id=500000 -D title_only=0 -f directory_writes_writer.sql <db>
\set kind random(1, 100)
\if :title_only
\set kind 45
\endif
\set r random(2, :max_id)
\set r2 random(2, :max_id)
\set last random(1, 68)
\set t random(1, 6)
\if :kind <= 30
SELECT directory.rename_employee(e.id,
           split_part(e.full_name, ' ', 1) || ' ' || (directory.seed_last_names())[:last])
  FROM (SELECT x.id, x.full_name FROM directory.employees x
         WHERE x.id >= :r ORDER BY x.id LIMIT 1) AS e;
\elif :kind <= 60
UPDATE directory.employees x
   SET title = coalesce((directory.seed_ic_titles())
                            [array_position(directory.seed_departments(), x.department) - 1][:t],
                        x.title)
  FROM (SELECT y.id FROM directory.employees y
         WHERE y.id >= :r AND y.sub_org_size = 1 ORDER BY y.id LIMIT 1) AS e
 WHERE x.id = e.id;
\elif :kind <= 75
SELECT directory.hire_employee(m.manager_id,
           (directory.seed_first_names())[1 + :r2 % 68] || ' ' || (directory.seed_last_names())[:last])
  FROM (SELECT x.manager_id FROM directory.employees x
         WHERE x.id >= :r AND x.manager_id IS NOT NULL ORDER BY x.id LIMIT 1) AS m;
\elif :kind <= 90
SELECT directory.remove_employee(e.id)
  FROM (SELECT x.id FROM directory.employees x
         WHERE x.id >= :r AND x.sub_org_size = 1
           AND NOT EXISTS (SELECT FROM bench.managers b WHERE b.id = x.id)
         ORDER BY x.id LIMIT 1) AS e;
\else
SELECT directory.move_employee(e.id, m.id)
  FROM (SELECT x.id FROM directory.employees x
         WHERE x.id >= :r AND x.sub_org_size = 1 ORDER BY x.id LIMIT 1) AS e,
       (SELECT y.id, y.path FROM directory.employees y
         WHERE y.id = (SELECT z.manager_id FROM directory.employees z
                        WHERE z.id >= :r2 AND z.manager_id IS NOT NULL ORDER BY z.id LIMIT 1)) AS m
 WHERE e.id <> m.id AND NOT m.path @> ARRAY[e.id];
\endif
