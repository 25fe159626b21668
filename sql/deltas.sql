-- Deltas: a write that cannot change a result leaves it alone, a count is
-- corrected, and every write whose rows pg_memo cannot account for falls
-- back to table-level invalidation (docs/consistency.md, "Deltas").
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

-- What became of the entries of one cache name.
CREATE FUNCTION delta_counters(name text)
RETURNS TABLE (computations bigint, hits bigint, kept bigint, corrected bigint, fallbacks bigint)
LANGUAGE sql AS $$
  SELECT computations, hits, delta_kept, delta_corrected, delta_fallbacks
    FROM memo.stats WHERE datname = current_database() AND cache_name = name
$$;

CREATE TABLE people (id int PRIMARY KEY, team int NOT NULL, name text NOT NULL COLLATE "C", note text);
INSERT INTO people SELECT g, g % 5, 'p' || lpad(g::text, 3, '0'), NULL FROM generate_series(1, 100) g;
SELECT memo.watch('people', deltas => true);
SELECT table_name, triggers_enabled, deltas FROM memo.watched WHERE table_name = 'people'::regclass;

CREATE FUNCTION team_count(t int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('people.count', 'SELECT * FROM people WHERE team = $1', ARRAY[t::text]) $$;
CREATE FUNCTION team_page(t int, n int, skip int) RETURNS text LANGUAGE sql
  AS $$ SELECT string_agg(name, ',') FROM memo.list('people.page',
          'SELECT name FROM people WHERE team = $1 ORDER BY name, id LIMIT $2 OFFSET $3',
          ARRAY[t::text, n::text, skip::text]) AS x(name text) $$;
CREATE FUNCTION team_list(t int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM memo.list('people.all', 'SELECT id FROM people WHERE team = $1',
          ARRAY[t::text]) AS x(id int) $$;

SELECT team_count(1), team_page(1, 3, 0), team_list(1);

-- 1. a count is corrected, not recomputed: inserts, deletes, and updates
--    that move rows in or out of its WHERE
INSERT INTO people VALUES (101, 1, 'p101');
SELECT team_count(1), (SELECT count(*) FROM people WHERE team = 1) AS truth;
UPDATE people SET team = 1 WHERE id IN (2, 3);
DELETE FROM people WHERE id = 6;
SELECT team_count(1), (SELECT count(*) FROM people WHERE team = 1) AS truth;
-- an update inside the WHERE, twice in one transaction: nothing to correct
BEGIN;
UPDATE people SET note = 'a' WHERE id = 11;
UPDATE people SET note = 'b' WHERE id = 11;
COMMIT;
SELECT team_count(1);
SELECT computations, kept, corrected, fallbacks FROM delta_counters('people.count');

-- 2. a full page survives rows that sort after its last row, and not a row
--    at or before it; a list without ORDER BY ... LIMIT dies with any match
SELECT team_page(1, 3, 0), team_list(1);
UPDATE people SET note = 'c' WHERE id = 96;     -- team 1, sorts last
INSERT INTO people VALUES (102, 2, 'a102');     -- another team, sorts first
SELECT team_page(1, 3, 0);
SELECT computations AS page_computations FROM delta_counters('people.page') \gset
INSERT INTO people VALUES (103, 1, 'a103');     -- team 1, sorts first
SELECT team_page(1, 3, 0);
SELECT computations - :page_computations AS recomputed FROM delta_counters('people.page');
-- a tie with the last row's keys could take its place: recomputed (the
-- result is the same here, so only the counter tells)
SELECT team_page(1, 2, 0);
SELECT computations AS page_computations FROM delta_counters('people.page') \gset
UPDATE people SET note = 'd' WHERE id = 1;      -- p001 (team 1) is the page's last row
SELECT team_page(1, 2, 0), (SELECT string_agg(name, ',' ORDER BY name, id) FROM
        (SELECT name, id FROM people WHERE team = 1 ORDER BY name, id LIMIT 2) p) AS truth;
SELECT computations - :page_computations AS recomputed FROM delta_counters('people.page');
-- a page that was not full grows at its end
SELECT team_page(4, 50, 10);
INSERT INTO people VALUES (104, 4, 'z104');
SELECT team_page(4, 50, 10) LIKE '%z104' AS sees_new_row;
-- the unordered list
SELECT computations AS list_computations FROM delta_counters('people.all') \gset
UPDATE people SET note = 'e' WHERE id = 10;      -- team 0
SELECT team_list(1);
UPDATE people SET note = 'f' WHERE id = 21;      -- team 1
SELECT team_list(1), computations - :list_computations AS recomputed FROM delta_counters('people.all');

-- 3. writes whose rows are not accounted for fall back: each one makes the
--    next call recompute, and the result is right (next_count says which)
CREATE FUNCTION next_count() RETURNS text LANGUAGE plpgsql AS $$
DECLARE before bigint; answer bigint; truth bigint;
BEGIN
  SELECT computations INTO before FROM delta_counters('people.count');
  answer := team_count(1);
  SELECT count(*) INTO truth FROM people WHERE team = 1;
  RETURN format('%s: %s', CASE WHEN answer <> truth THEN 'WRONG' WHEN
                (SELECT computations FROM delta_counters('people.count')) > before
                THEN 'recomputed' ELSE 'kept' END, answer);
END $$;
SELECT team_count(1);
BEGIN; INSERT INTO people VALUES (105, 1, 'p105'); SAVEPOINT s; INSERT INTO people VALUES (106, 1, 'p106');
ROLLBACK TO s; COMMIT;
SELECT next_count();
SET pg_memo.max_delta_rows = 2;
UPDATE people SET note = 'g' WHERE team = 1;
RESET pg_memo.max_delta_rows;
SELECT next_count();
BEGIN; INSERT INTO people VALUES (107, 1, 'p107'); SELECT memo.invalidate('people'); COMMIT;
SELECT next_count();
ALTER TABLE people DISABLE TRIGGER pg_memo_delta_insert;
INSERT INTO people VALUES (108, 1, 'p108');
SELECT next_count();
ALTER TABLE people ENABLE ALWAYS TRIGGER pg_memo_delta_insert;
BEGIN; ALTER TABLE people ADD COLUMN extra int; INSERT INTO people VALUES (109, 1, 'p109'); COMMIT;
SELECT next_count();
-- TRUNCATE (the rows it removed are not captured), here with the same rows
-- back (after the CREATE TABLE's own recomputation, a kept entry)
CREATE TABLE people_copy AS SELECT * FROM people;
SELECT next_count(), next_count();
BEGIN; TRUNCATE people; INSERT INTO people SELECT * FROM people_copy; COMMIT;
SELECT next_count();
DROP TABLE people_copy;
-- a delta trigger dropped: the writes after it are not captured (the drop
-- itself, DDL, recomputes once)
DROP TRIGGER pg_memo_delta_insert ON people;
SELECT next_count(), next_count();
INSERT INTO people VALUES (113, 1, 'p113');
SELECT next_count();
SELECT deltas FROM memo.watched WHERE table_name = 'people'::regclass;
SELECT memo.watch('people', deltas => true);
SELECT next_count();
INSERT INTO people VALUES (110, 1, 'p110');
SELECT next_count();
-- an aborted transaction publishes nothing, and changes nothing
BEGIN; INSERT INTO people VALUES (111, 1, 'p111'); ROLLBACK;
SELECT next_count();
SELECT delta_records > 0 AS records, delta_fallbacks >= 4 AS fallbacks FROM memo.info;

-- 4. a count of a UNION ALL of selections of the table (the directory's
--    shape): each branch a row satisfies counts
SELECT memo.count('people.union', 'SELECT id FROM people WHERE team = $1 UNION ALL SELECT id FROM people WHERE id = $2',
                  ARRAY['2', '7']);
UPDATE people SET team = 2 WHERE id = 7;
INSERT INTO people VALUES (112, 2, 'p112');
SELECT memo.count('people.union', 'SELECT id FROM people WHERE team = $1 UNION ALL SELECT id FROM people WHERE id = $2',
                  ARRAY['2', '7']),
       (SELECT count(*) FROM people WHERE team = 2) + (SELECT count(*) FROM people WHERE id = 7) AS truth;
SELECT computations, corrected FROM delta_counters('people.union');

-- 5. an error while evaluating a new row means "cannot tell": recomputed,
--    and the query's own error is raised by it
SELECT memo.count('people.div', 'SELECT * FROM people WHERE 1000 / (id - 200) < $1', ARRAY['0']);
INSERT INTO people VALUES (200, 3, 'p200');
SELECT try($$SELECT memo.count('people.div', 'SELECT * FROM people WHERE 1000 / (id - 200) < $1', ARRAY['0'])$$);
DELETE FROM people WHERE id = 200;
SELECT memo.count('people.div', 'SELECT * FROM people WHERE 1000 / (id - 200) < $1', ARRAY['0']);
SELECT computations, failures('people.div'), fallbacks FROM delta_counters('people.div');

-- 5b. a carry of many row versions (64 or more: the parameters are folded
--     into an evaluator built for it): a row moved back and forth between
--     teams by 40 commits, another renamed by 30; the count and a page,
--     against the table
SELECT memo.count('people.many', 'SELECT * FROM people WHERE team = $1', ARRAY['1']);
SELECT * FROM memo.list('people.many_page', 'SELECT id, name FROM people WHERE team = $1 ORDER BY name LIMIT 2',
                        ARRAY['1']) AS t(id int, name text);
DO $$ BEGIN
  FOR i IN 1 .. 40 LOOP
    UPDATE people SET team = CASE WHEN i % 2 = 1 THEN 3 ELSE 1 END WHERE id = 1;
    COMMIT;
  END LOOP;
  FOR i IN 1 .. 30 LOOP
    UPDATE people SET name = 'zz' || i WHERE id = 2;
    COMMIT;
  END LOOP;
END $$;
SELECT memo.count('people.many', 'SELECT * FROM people WHERE team = $1', ARRAY['1']),
       (SELECT count(*) FROM people WHERE team = 1) AS truth;
SELECT computations, kept + corrected AS carried FROM delta_counters('people.many');
SELECT * FROM memo.list('people.many_page', 'SELECT id, name FROM people WHERE team = $1 ORDER BY name LIMIT 2',
                        ARRAY['1']) AS t(id int, name text);
SELECT id, name FROM people WHERE team = 1 ORDER BY name LIMIT 2;
UPDATE people SET name = 'a first' WHERE id = 2;
SELECT * FROM memo.list('people.many_page', 'SELECT id, name FROM people WHERE team = $1 ORDER BY name LIMIT 2',
                        ARRAY['1']) AS t(id int, name text);

-- 6. what cannot keep deltas is refused by memo.watch; unwatch removes the
--    delta triggers; watching without deltas removes them too
CREATE TABLE parted (id int) PARTITION BY RANGE (id);
SELECT try($$SELECT memo.watch('parted', deltas => true)$$);
SELECT memo.watch('people');
SELECT deltas FROM memo.watched WHERE table_name = 'people'::regclass;
SELECT memo.watch('people', deltas => true);
SELECT memo.unwatch('people');
SELECT count(*) AS delta_triggers_left FROM pg_trigger WHERE tgrelid = 'people'::regclass;
DROP TABLE people, parted;
