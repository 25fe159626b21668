-- Scopes: a write makes stale only the entries whose scope its rows touch
-- (docs/consistency.md, "Scopes"). A plain hit counts in hits alone; an
-- entry carried past a write also counts in delta_kept or delta_corrected;
-- one computed again, in computations.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

CREATE FUNCTION scope_counters(name text)
RETURNS TABLE (computations bigint, hits bigint, carried bigint, fallbacks bigint)
LANGUAGE sql AS $$
  SELECT computations, hits, delta_kept + delta_corrected, delta_fallbacks
    FROM memo.stats WHERE datname = current_database() AND cache_name = name
$$;

CREATE TABLE staff (id int PRIMARY KEY, team int, tags int[], name text NOT NULL);
INSERT INTO staff SELECT g, g % 4, ARRAY[g % 3, 10 + g % 2], 's' || g FROM generate_series(1, 40) g;

-- 1. scope columns are declared at watch time, need deltas, and must hash
SELECT memo.watch('staff', false, '{team}');
SELECT memo.watch('staff', deltas => true, scope_columns => '{nosuch}');
CREATE TABLE shapes (id int PRIMARY KEY, at point);
SELECT memo.watch('shapes', deltas => true, scope_columns => '{at}');
SELECT memo.watch('staff', deltas => true, scope_columns => '{team, tags, team}');
SELECT table_name, deltas, scope_columns FROM memo.watched WHERE table_name = 'staff'::regclass;
SELECT tgname, pg_get_triggerdef(oid) LIKE '%delta_trigger(''2'', ''3'')' AS carries_attnums
  FROM pg_trigger WHERE tgrelid = 'staff'::regclass AND tgname LIKE 'pg_memo_delta%' ORDER BY 1;

CREATE FUNCTION staff_team_count(t int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.team', 'SELECT * FROM staff WHERE team = $1', ARRAY[t::text]) $$;
CREATE FUNCTION staff_team_names(t int) RETURNS text LANGUAGE sql
  AS $$ SELECT string_agg(name, ',') FROM memo.list('scope.names',
          'SELECT name FROM staff WHERE team = $1 ORDER BY id LIMIT 3', ARRAY[t::text]) AS x(name text) $$;
CREATE FUNCTION staff_tag_count(g int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.tag', 'SELECT * FROM staff WHERE tags @> ARRAY[$1::int]', ARRAY[g::text]) $$;
CREATE FUNCTION staff_any_tag_count(g int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.any', 'SELECT * FROM staff WHERE $1::int = ANY (tags)', ARRAY[g::text]) $$;
CREATE FUNCTION staff_teams_count(a int, b int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.in', 'SELECT * FROM staff WHERE team IN ($1, $2) AND id > 0',
                          ARRAY[a::text, b::text]) $$;
CREATE FUNCTION staff_all_count() RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.none', 'SELECT * FROM staff WHERE team = 1 OR team = 2', ARRAY[]::text[]) $$;
CREATE FUNCTION staff_twice_count(t int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.twice',
          'SELECT * FROM staff s WHERE team = $1 AND EXISTS (SELECT 1 FROM staff o WHERE o.id = s.id + 1)',
          ARRAY[t::text]) $$;

CREATE FUNCTION staff_check_all() RETURNS TABLE (name text, cached bigint, truth bigint) LANGUAGE sql AS $$
  SELECT 'team 1', staff_team_count(1), (SELECT count(*) FROM staff WHERE team = 1)
  UNION ALL SELECT 'team 2', staff_team_count(2), (SELECT count(*) FROM staff WHERE team = 2)
  UNION ALL SELECT 'names 1', length(staff_team_names(1)),
                   (SELECT length(string_agg(name, ',')) FROM (SELECT name FROM staff WHERE team = 1 ORDER BY id LIMIT 3) x)
  UNION ALL SELECT 'tag 1', staff_tag_count(1), (SELECT count(*) FROM staff WHERE tags @> ARRAY[1])
  UNION ALL SELECT 'tag 2', staff_tag_count(2), (SELECT count(*) FROM staff WHERE tags @> ARRAY[2])
  UNION ALL SELECT 'any 11', staff_any_tag_count(11), (SELECT count(*) FROM staff WHERE 11 = ANY (tags))
  UNION ALL SELECT 'in 0,3', staff_teams_count(0, 3), (SELECT count(*) FROM staff WHERE team IN (0, 3))
  UNION ALL SELECT 'none', staff_all_count(), (SELECT count(*) FROM staff WHERE team IN (1, 2))
  UNION ALL SELECT 'twice 1', staff_twice_count(1),
                   (SELECT count(*) FROM staff s WHERE team = 1 AND EXISTS (SELECT 1 FROM staff o WHERE o.id = s.id + 1))
$$;
CREATE FUNCTION staff_mismatches() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM staff_check_all() WHERE cached IS DISTINCT FROM truth
$$;

SELECT * FROM staff_check_all();
SELECT staff_mismatches();

-- 2. a write to team 2 leaves team 1's entries plain hits (no carry, no
--    computation), and team 2's are carried
SELECT memo.reset_stats();
UPDATE staff SET name = name || '+' WHERE id = 2;   -- team 2, tags {2,10}
SELECT staff_team_count(1), staff_team_count(2), staff_team_names(1);
SELECT * FROM scope_counters('scope.team');
SELECT * FROM scope_counters('scope.names');
-- tags: the entry of tag 1 is untouched, tag 2's carried
SELECT staff_tag_count(1), staff_tag_count(2);
SELECT * FROM scope_counters('scope.tag');
-- team IN (0, 3) and 11 = ANY (tags): untouched
SELECT staff_teams_count(0, 3), staff_any_tag_count(11);
SELECT * FROM scope_counters('scope.in');
SELECT * FROM scope_counters('scope.any');
-- every read of the table scoped (two UNION ALL branches): scoped too
SELECT memo.count('scope.union', 'SELECT id FROM staff WHERE team = $1 UNION ALL SELECT id FROM staff WHERE tags @> ARRAY[$2::int]',
                  ARRAY['1', '1']) AS union_count;
UPDATE staff SET name = name WHERE id = 3;  -- team 3, tags {0,11}
SELECT memo.count('scope.union', 'SELECT id FROM staff WHERE team = $1 UNION ALL SELECT id FROM staff WHERE tags @> ARRAY[$2::int]',
                  ARRAY['1', '1']) AS union_count;
SELECT * FROM scope_counters('scope.union');
UPDATE staff SET name = name WHERE id = 7;  -- team 3, tags {1,11}
SELECT memo.count('scope.union', 'SELECT id FROM staff WHERE team = $1 UNION ALL SELECT id FROM staff WHERE tags @> ARRAY[$2::int]',
                  ARRAY['1', '1']) AS union_count;
SELECT * FROM scope_counters('scope.union');
-- entries without a scope predicate (an OR; the table read again by id,
-- which is not a scope column) keep the table's counter: carried or
-- computed at every write
SELECT staff_all_count(), staff_twice_count(1);
SELECT * FROM scope_counters('scope.none');
SELECT * FROM scope_counters('scope.twice');
SELECT staff_mismatches();

-- 3. a row moved from one scope to another makes both stale
SELECT memo.reset_stats();
SELECT staff_team_count(1), staff_team_count(2), staff_team_count(3);
UPDATE staff SET team = 2 WHERE id = 1;  -- from team 1 to team 2
SELECT staff_team_count(1), staff_team_count(2), staff_team_count(3);
SELECT * FROM scope_counters('scope.team');
SELECT staff_mismatches();
-- arrays gaining and losing elements
SELECT memo.reset_stats();
SELECT staff_tag_count(0), staff_tag_count(1), staff_tag_count(2);
UPDATE staff SET tags = array_remove(tags, 1) || 0 WHERE id = 4;  -- {1,10} to {10,0}
SELECT staff_tag_count(0), staff_tag_count(1), staff_tag_count(2);
SELECT * FROM scope_counters('scope.tag');
SELECT staff_mismatches();

-- 4. NULL scope values: a row entering or leaving NULL changes the scope
--    it comes from or goes to; a NULL parameter depends on the table
UPDATE staff SET team = NULL, tags = NULL WHERE id = 5;
SELECT staff_mismatches();
UPDATE staff SET team = 1, tags = ARRAY[NULL, 1]::int[] WHERE id = 5;
SELECT staff_mismatches();
SELECT memo.count('scope.null', 'SELECT * FROM staff WHERE team = $1', ARRAY[NULL]);
INSERT INTO staff VALUES (100, NULL, NULL, 'null team');
SELECT memo.count('scope.null', 'SELECT * FROM staff WHERE team = $1', ARRAY[NULL]);

-- 5. inserts and deletes; a rolled back savepoint; a rolled back write
INSERT INTO staff VALUES (41, 1, ARRAY[1], 'new');
SELECT staff_mismatches();
DELETE FROM staff WHERE id = 41;
SELECT staff_mismatches();
BEGIN;
SAVEPOINT s;
UPDATE staff SET team = 3 WHERE id = 9;
ROLLBACK TO SAVEPOINT s;
UPDATE staff SET team = 2 WHERE id = 13;
COMMIT;
SELECT staff_mismatches();
BEGIN;
UPDATE staff SET team = 3 WHERE team = 1;
SELECT staff_team_count(1), staff_team_count(3);  -- its own writes: computed, not stored
ROLLBACK;
SELECT staff_mismatches();

-- 6. writes whose scopes are unknown fall back to every scope: a statement
--    past pg_memo.max_delta_rows, TRUNCATE, DDL, memo.invalidate
SELECT staff_team_count(1), staff_team_count(2);
SET pg_memo.max_delta_rows = 2;
UPDATE staff SET name = name WHERE team = 3;
RESET pg_memo.max_delta_rows;
SELECT memo.reset_stats();
SELECT staff_team_count(1);
SELECT * FROM scope_counters('scope.team');
SELECT staff_mismatches();
ALTER TABLE staff RENAME COLUMN team TO squad;  -- the scope column follows
SELECT table_name, scope_columns FROM memo.watched WHERE table_name = 'staff'::regclass;
ALTER TABLE staff RENAME COLUMN squad TO team;
SELECT memo.reset_stats();
SELECT staff_team_count(1);
SELECT * FROM scope_counters('scope.team');
SELECT memo.invalidate('staff');
SELECT memo.reset_stats();
SELECT staff_team_count(1);
SELECT * FROM scope_counters('scope.team');
BEGIN;
TRUNCATE staff;
INSERT INTO staff VALUES (1, 1, ARRAY[1], 'only');
COMMIT;
SELECT staff_mismatches();

-- 7. two-phase commit: the prepared transaction's scopes are bumped by
--    COMMIT PREPARED
SELECT staff_team_count(1), staff_team_count(2);
BEGIN;
INSERT INTO staff VALUES (2, 2, ARRAY[2], 'two');
PREPARE TRANSACTION 'scopes';
SELECT staff_team_count(2);
SELECT memo.reset_stats();
COMMIT PREPARED 'scopes';
SELECT staff_team_count(1), staff_team_count(2);
SELECT * FROM scope_counters('scope.team');
SELECT staff_mismatches();

-- 8. a function that reads the table across scopes (issue 45): its read
--    is not the text's own, so the entry depends on the whole table. The
--    first computation learns it and stores nothing; a row written in
--    another scope (team 0) changes the function's value and the result.
CREATE FUNCTION staff_has(i int) RETURNS boolean LANGUAGE sql IMMUTABLE
  AS 'SELECT EXISTS (SELECT 1 FROM staff WHERE id = $1)';
CREATE FUNCTION staff_if_40(t int) RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('scope.function', 'SELECT * FROM staff WHERE team = $1 AND staff_has(40)',
                          ARRAY[t::text]) $$;
SELECT memo.reset_stats();
SELECT staff_if_40(1), staff_if_40(1), staff_if_40(1);
SELECT computations, hits, bypass_reasons FROM memo.stats
 WHERE datname = current_database() AND cache_name = 'scope.function';
INSERT INTO staff VALUES (40, 0, '{}', 's40');
SELECT staff_if_40(1) AS cached, (SELECT count(*) FROM staff WHERE team = 1 AND staff_has(40)) AS truth;
DELETE FROM staff WHERE id = 40;
SELECT staff_if_40(1) AS cached, (SELECT count(*) FROM staff WHERE team = 1 AND staff_has(40)) AS truth;
-- Only reads other than the plan's own count: plans that check the table
-- more often than the text names it (min/max through an index, EXISTS
-- under OR planned two ways) stay scoped and are stored at once; a range
-- table entry the planner drops (an unreferenced CTE, a sublink folded
-- away) does not hide a function's read.
CREATE TABLE scored (id int PRIMARY KEY, team int, score int);
INSERT INTO scored SELECT g, g % 10, g FROM generate_series(1, 1000) g;
CREATE INDEX ON scored (team, score);
ANALYZE scored;
SELECT memo.watch('scored', true, '{team}');
CREATE FUNCTION scored_has(i int) RETURNS boolean LANGUAGE sql IMMUTABLE
  AS 'SELECT EXISTS (SELECT 1 FROM scored WHERE id = $1)';
CREATE FUNCTION scored_calls() RETURNS TABLE (name text, result bigint) LANGUAGE sql AS $$
  SELECT 'minmax', (SELECT b FROM memo.list('scope.minmax', 'SELECT min(score), max(score) FROM scored WHERE team = $1',
                                        '{3}') AS t(a int, b int))::bigint
  UNION ALL SELECT 'exists_or', memo.count('scope.exists_or', 'SELECT * FROM scored WHERE team = $1 AND (score > 5 OR '
                   'EXISTS (SELECT 1 FROM scored s2 WHERE s2.team = $1 AND s2.id = scored.id + 1))', '{3}')
  UNION ALL SELECT 'dead_cte', memo.count('scope.dead_cte', 'WITH dead AS (SELECT * FROM scored WHERE team = $1) '
                   'SELECT * FROM scored WHERE team = $1 AND scored_has(2000)', '{3}')
  UNION ALL SELECT 'folded', memo.count('scope.folded', 'SELECT * FROM scored WHERE team = $1 AND ($2::bool OR '
                   'EXISTS (SELECT 1 FROM scored s2 WHERE s2.team = $1)) AND scored_has(2000)', '{3,true}')
$$;
SELECT * FROM scored_calls();
SELECT * FROM scored_calls();
SELECT cache_name, misses, bypass_reasons FROM memo.stats
 WHERE datname = current_database() AND cache_name IN
       ('scope.minmax', 'scope.exists_or', 'scope.dead_cte', 'scope.folded') ORDER BY 1;
INSERT INTO scored VALUES (2000, 0, 1);   -- another scope: the functions' value changes
UPDATE scored SET score = score + 1 WHERE team = 5;
SELECT * FROM scored_calls();
SELECT count(*) FILTER (WHERE team = 3 AND scored_has(2000)) AS truth FROM scored;
SELECT cache_name, hits, misses FROM memo.stats
 WHERE datname = current_database() AND cache_name IN ('scope.minmax', 'scope.exists_or') ORDER BY 1;
-- A memo call computed while another statement is planned (a STABLE
-- function the planner runs for its estimate) tells its own plan too.
CREATE FUNCTION staff_count_at_plan(t int) RETURNS bigint STABLE LANGUAGE plpgsql
  AS $$ BEGIN RETURN memo.count('scope.at_plan', 'SELECT * FROM staff WHERE team = $1', ARRAY[t::text]); END $$;
SELECT count(*) FROM staff WHERE id = staff_count_at_plan(1);
SELECT misses, bypass_reasons FROM memo.stats
 WHERE datname = current_database() AND cache_name = 'scope.at_plan';

-- 9. re-watching without scope columns puts every entry back on the table
SELECT memo.watch('staff', deltas => true);
SELECT table_name, scope_columns FROM memo.watched WHERE table_name = 'staff'::regclass;
SELECT memo.reset_stats();
SELECT staff_team_count(1), staff_team_count(2);
UPDATE staff SET name = 'x' WHERE id = 2;
SELECT staff_team_count(1);
SELECT * FROM scope_counters('scope.team');
SELECT staff_mismatches();

-- 10. scopes across types: a value of another type of the column's hash
--     family (an int4 or int2 against a bigint column, an int8 against an
--     int4 one, text against varchar) scopes the entry as the column's own
--     type does
CREATE TABLE ledger (id int PRIMARY KEY, owner bigint, n int, code varchar(10), amount int);
INSERT INTO ledger SELECT g, g % 5, g % 3, 'c' || (g % 4), g FROM generate_series(1, 60) g;
SELECT memo.watch('ledger', deltas => true, scope_columns => '{owner, n, code}');
CREATE FUNCTION ledger_calls() RETURNS TABLE (name text, cached bigint, truth bigint) LANGUAGE sql AS $$
  SELECT 'int4 parameter', memo.count('cross.int4', 'SELECT * FROM ledger WHERE owner = $1::int4', '{1}'),
         (SELECT count(*) FROM ledger WHERE owner = 1)
  UNION ALL SELECT 'int4 literal', memo.count('cross.literal', 'SELECT * FROM ledger WHERE owner = 1', '{}'),
         (SELECT count(*) FROM ledger WHERE owner = 1)
  UNION ALL SELECT 'int2 parameter', memo.count('cross.int2', 'SELECT * FROM ledger WHERE owner = $1::int2', '{1}'),
         (SELECT count(*) FROM ledger WHERE owner = 1)
  UNION ALL SELECT 'int4 array', memo.count('cross.array', 'SELECT * FROM ledger WHERE owner = ANY ($1::int4[])', '{"{1,3}"}'),
         (SELECT count(*) FROM ledger WHERE owner IN (1, 3))
  UNION ALL SELECT 'int8 on int4', memo.count('cross.int8', 'SELECT * FROM ledger WHERE n = $1::int8', '{1}'),
         (SELECT count(*) FROM ledger WHERE n = 1)
  UNION ALL SELECT 'int8 past int4', memo.count('cross.past', 'SELECT * FROM ledger WHERE n = 3000000000', '{}'), 0
  UNION ALL SELECT 'text on varchar', memo.count('cross.text', 'SELECT * FROM ledger WHERE code = $1::text', '{c1}'),
         (SELECT count(*) FROM ledger WHERE code = 'c1')
$$;
SELECT * FROM ledger_calls();
SELECT memo.reset_stats();
-- another owner, n and code: every entry above stays a plain hit (not
-- carried: an entry left on the table's counter would be)
UPDATE ledger SET amount = amount + 1 WHERE id = 2;   -- owner 2, n 2, code c2
SELECT name, cached = truth AS exact FROM ledger_calls();
SELECT n AS cache_name, c.* FROM unnest(ARRAY['cross.array', 'cross.int2', 'cross.int4', 'cross.int8',
       'cross.literal', 'cross.past', 'cross.text']) n, scope_counters(n) c ORDER BY 1;
-- their own scopes: computed or carried again, and exact
UPDATE ledger SET owner = 1, n = 1, code = 'c1' WHERE id = 2;
DELETE FROM ledger WHERE id = 3;                       -- owner 3
SELECT name, cached = truth AS exact FROM ledger_calls();
SELECT cache_name, computations + carried AS recomputed_or_carried FROM memo.stats s,
       LATERAL (SELECT s.delta_kept + s.delta_corrected AS carried) c
 WHERE datname = current_database() AND cache_name LIKE 'cross.%' ORDER BY 1;
-- not across types where the hashes need not agree: a name column under a
-- nondeterministic collation compared as text (hashname ignores the
-- collation, hashtext does not) is not scoped, and stays exact; a domain
-- over an array has no element type to hash as, and is not scoped either
CREATE COLLATION ledger_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE accounts (id int PRIMARY KEY, owner name COLLATE ledger_ci, mood_of text, v int);
INSERT INTO accounts VALUES (1, 'alice', 'a', 1), (2, 'bob', 'b', 1);
SELECT memo.watch('accounts', deltas => true, scope_columns => '{owner}');
SELECT memo.count('cross.ci', 'SELECT * FROM accounts WHERE owner = $1::text AND v = 1', '{ALICE}');
UPDATE accounts SET v = 2 WHERE id = 1;
SELECT memo.count('cross.ci', 'SELECT * FROM accounts WHERE owner = $1::text AND v = 1', '{ALICE}') AS cached,
       (SELECT count(*) FROM accounts WHERE owner = 'ALICE'::text AND v = 1) AS truth;
CREATE TYPE ledger_mood AS ENUM ('a', 'b');
CREATE DOMAIN ledger_moods AS ledger_mood[];
CREATE TABLE moods (id int PRIMARY KEY, m ledger_mood);
INSERT INTO moods VALUES (1, 'a'), (2, 'b');
SELECT memo.watch('moods', deltas => true, scope_columns => '{m}');
SELECT memo.count('cross.domain', 'SELECT * FROM moods WHERE m = ANY ($1::ledger_moods)', '{"{a}"}');
