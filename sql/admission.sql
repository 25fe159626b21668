-- Automatic admission (issue 47; docs/reference.md, "Automatic admission"):
-- under pg_memo.admission = auto, pg_memo observes every top-level SELECT
-- over the application's tables, admits a shape whose executions cost at
-- least pg_memo.admission_min_cost, serves it exactly (as a registration
-- would), demotes it when a window of served executions saves nothing,
-- and says why in memo.admission. Costs are measured, so this suite sets
-- the bar at 0 ms (every shape pays) or out of reach (every shape is
-- cheap): what it asserts does not depend on this machine's speed.
\i sql/include/setup.sql

SELECT memo.admission_reset();
CREATE TABLE adm_items (id int PRIMARY KEY, team int NOT NULL, title text);
INSERT INTO adm_items SELECT g, g % 5, 'title ' || g FROM generate_series(1, 50) g;
-- (plans that statistics gathered meanwhile would not change)
ALTER TABLE adm_items SET (autovacuum_enabled = off);
SELECT memo.watch('adm_items');
CREATE TABLE adm_unwatched (id int);
CREATE ROLE adm_reader;
INSERT INTO adm_unwatched VALUES (1), (2);

CREATE VIEW adm_shapes AS
  SELECT state, split_part(reason, ':', 1) AS why, calls, served_calls, recomputed, demotions, query
    FROM memo.admission ORDER BY query;

-- EXPLAIN's output goes through sed, which masks the shape's identifier
-- in an admitted statement's cache name (it depends on the tables' OIDs).

-- Off (the default): nothing observed, nothing served, even with every
-- statement costly enough.
SHOW pg_memo.admission;
SET pg_memo.admission_min_cost = 0;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_shapes;

-- 1. An expensive shape is admitted after a window of calls, and served.
-- Only statements over a table that a statement taking at least
-- pg_memo.admission_min_cost read are observed: the first call marks
-- adm_items (every call takes at least 0 ms), the next two are observed.
SET pg_memo.admission = auto;
SET pg_memo.admission_calls = 2;
SET pg_memo.admission_min_cost = 0;
SET pg_memo.admission_window = 0;  -- served windows judged at once (by default they span a second)
SELECT count(*) FROM adm_items WHERE team = 0;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT * FROM adm_shapes;
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT count(*) FROM adm_items WHERE team = 3;
\o
SELECT count(*) FROM adm_items WHERE team = 3;
SELECT count(*) FROM adm_items WHERE team = 3;
SELECT hits, computations FROM memo.stats WHERE cache_name LIKE 'auto:%';
-- Exact: a write shows up in the very next statement.
INSERT INTO adm_items VALUES (51, 3, 'new');
SELECT count(*) FROM adm_items WHERE team = 3;
BEGIN;
DELETE FROM adm_items WHERE id = 51;
SELECT count(*) FROM adm_items WHERE team = 3;
ROLLBACK;
SELECT count(*) FROM adm_items WHERE team = 3;
-- A prepared statement made before the admission is planned again.
SELECT memo.admission_reset();
PREPARE adm_page(int) AS SELECT id, title FROM adm_items WHERE team = $1 ORDER BY id LIMIT 2;
EXECUTE adm_page(1);
EXECUTE adm_page(1);
EXECUTE adm_page(1);
EXECUTE adm_page(1);
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) EXECUTE adm_page(1);
\o
SELECT state, served_calls > 0 AS served FROM memo.admission WHERE query LIKE 'PREPARE adm_page%';
-- A plan made while its shape was admitted serves nothing once the shape
-- is forgotten: memo.admission_reset() has the database's plans made
-- again (a plan that is not yet, elsewhere, checks at each execution and
-- runs as with pg_memo.enabled off); and turning pg_memo.admission off
-- plans the session's statements again.
SET plan_cache_mode = force_generic_plan;
PREPARE adm_generic(int) AS SELECT id FROM adm_items WHERE team = $1 ORDER BY id LIMIT 1;
EXECUTE adm_generic(1);
EXECUTE adm_generic(1);
EXECUTE adm_generic(1);
EXECUTE adm_generic(1);
SELECT 'auto:' || lpad(to_hex(shape_id), 16, '0') AS adm_name FROM memo.admission
 WHERE query LIKE 'PREPARE adm_generic%' \gset
SELECT hits AS hits_on, bypasses AS bypasses_on FROM memo.stats WHERE cache_name = :'adm_name' \gset
SELECT :hits_on > 0 AS served_while_admitted;
SELECT memo.admission_reset();
EXECUTE adm_generic(1);
EXECUTE adm_generic(1);
SELECT hits - :hits_on AS hits_once_forgotten, bypasses - :bypasses_on AS bypasses_once_forgotten
  FROM memo.stats WHERE cache_name = :'adm_name';
SET pg_memo.admission = off;
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) EXECUTE adm_generic(1);
\o
SET pg_memo.admission = auto;
RESET plan_cache_mode;
DEALLOCATE adm_generic;
DEALLOCATE adm_page;

-- 2. A cheap shape is left alone, with its reason. (pg_sleep(0.2) takes
-- at least 200 ms, which marks adm_items; a lookup of one row in 50 takes
-- far less than 50 ms.)
SELECT memo.admission_reset();
SET pg_memo.admission_min_cost = 50;
SELECT count(*) FROM adm_items WHERE pg_sleep(0.2) IS NOT NULL AND id = 1;
SELECT title FROM adm_items WHERE id = 7;
SELECT title FROM adm_items WHERE id = 8;
SELECT title FROM adm_items WHERE id = 9;
SELECT state, why, calls, served_calls FROM adm_shapes;
SELECT reason LIKE 'cheap: mean % ms, below pg_memo.admission_min_cost (50 ms)' AS says_why
  FROM memo.admission WHERE query LIKE '%id = 7';
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT title FROM adm_items WHERE id = 9;
\o
RESET pg_memo.admission_min_cost;
SET pg_memo.admission_min_cost = 0;

-- 3. What cannot be served exactly is refused, and says why: a volatile
-- function, a table not watched (with the call that would watch it).
SELECT memo.admission_reset();
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT count(*) > 0 FROM adm_items WHERE random() < 2;
SELECT count(*) > 0 FROM adm_items WHERE random() < 2;
SELECT count(*) > 0 FROM adm_items WHERE random() < 2;
SELECT count(*) > 0 FROM adm_items WHERE random() < 2;
SELECT state, why, query FROM adm_shapes;
SELECT regexp_replace(reason, '[0-9]+\.[0-9]+ ms', 'N ms') FROM memo.admission WHERE query LIKE '%adm_unwatched%';
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT count(*) FROM adm_unwatched;
\o

-- 4. Catalog statements, row locks and statements in functions are not
-- observed, though adm_items is marked (by its first statement) and each
-- runs three times.
SELECT memo.admission_reset();
SELECT count(*) FROM adm_items WHERE id < 0;
SELECT count(*) > 0 FROM pg_class WHERE relname = 'adm_items';
SELECT count(*) > 0 FROM pg_class WHERE relname = 'adm_items';
SELECT count(*) > 0 FROM pg_class WHERE relname = 'adm_items';
SELECT id FROM adm_items WHERE id = 1 FOR UPDATE;
SELECT id FROM adm_items WHERE id = 1 FOR UPDATE;
SELECT id FROM adm_items WHERE id = 1 FOR UPDATE;
DO $$ BEGIN PERFORM count(*) FROM adm_items; PERFORM count(*) FROM adm_items; PERFORM count(*) FROM adm_items; END $$;
SELECT count(*) FROM adm_shapes;
-- Nor counted: EXPLAIN ANALYZE (instrumented), a cursor's partial
-- fetches, a SELECT with a data-modifying WITH.
SELECT count(*) FROM adm_items;
-- (EXPLAIN ANALYZE's output, which differs between PostgreSQL versions, is
-- not shown)
\o /dev/null
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM adm_items WHERE id > 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM adm_items WHERE id > 1;
\o
BEGIN;
DECLARE adm_cursor CURSOR FOR SELECT id FROM adm_items WHERE id > 40 ORDER BY id;
FETCH 2 FROM adm_cursor;
CLOSE adm_cursor;
DECLARE adm_cursor CURSOR FOR SELECT id FROM adm_items WHERE id > 40 ORDER BY id;
FETCH 2 FROM adm_cursor;
CLOSE adm_cursor;
COMMIT;
WITH u AS (UPDATE adm_items SET title = title WHERE id = 1 RETURNING id) SELECT count(*) FROM u;
WITH u AS (UPDATE adm_items SET title = title WHERE id = 1 RETURNING id) SELECT count(*) FROM u;
-- (the one counted: the plain SELECT, after the FOR UPDATE above took
-- long enough to mark adm_items)
SELECT query, calls FROM adm_shapes WHERE calls > 0 OR served_calls > 0;

-- 5. A shape whose table is written between its reads saves nothing: it
-- is demoted after a window of served executions, observed again after
-- pg_memo.admission_retry, and after pg_memo.admission_max_demotions
-- demotions it is not admitted again.
SELECT memo.admission_reset();
SET pg_memo.admission_retry = 0;
SET pg_memo.admission_max_demotions = 2;
\set read 'SELECT sum(id) FROM adm_items WHERE team = 4;'
\set write 'UPDATE adm_items SET title = title WHERE id = 4;'
-- one marking adm_items, two observed, admitted; eight served, each
-- computed: demoted
:read :write :read :write :read :write
:read :write :read :write :read :write :read :write :read :write :read :write :read :write :read :write
SELECT state, why, served_calls, recomputed, demotions FROM adm_shapes;
-- two (observed again), two observed (admitted), eight served: retired
:read :write :read :write :read :write :read :write
:read :write :read :write :read :write :read :write :read :write :read :write :read :write :read :write
SELECT state, why, served_calls, recomputed, demotions FROM adm_shapes;
SELECT reason FROM memo.admission;
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT sum(id) FROM adm_items WHERE team = 4;
\o
RESET pg_memo.admission_retry;
RESET pg_memo.admission_max_demotions;

-- 6. A view of the shapes never shows one role's statements to another.
SELECT memo.admission_reset();
SELECT count(*) FROM adm_items WHERE team = 0;
SELECT count(*) FROM adm_items WHERE team = 0;
-- (a refused shape too: its check's message names its tables)
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT count(*) FROM adm_unwatched;
SELECT state, reason LIKE '%adm_unwatched%' AS reason_names_its_table FROM memo.admission WHERE state = 'refused';
CREATE ROLE adm_other;
SET ROLE adm_other;
SELECT count(*) AS shapes, count(query) AS texts, count(query_id) AS ids FROM memo.admission;
SELECT state, reason LIKE '%adm_unwatched%' AS reason_names_its_table FROM memo.admission WHERE state = 'refused';
SELECT memo.admission_reset();
RESET ROLE;
DROP ROLE adm_other;

-- 7. advise: the decisions are made and explained, nothing is served.
SELECT memo.admission_reset();
SET pg_memo.admission = advise;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT count(*) FROM adm_items WHERE team = 1;
SELECT state, why, served_calls FROM adm_shapes;
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT count(*) FROM adm_items WHERE team = 1;
\o

-- 8. The bound the DBA sets: pg_memo.admission_max_admitted shapes at most.
SET pg_memo.admission = auto;
\set team1 'SELECT count(*) FROM adm_items WHERE team = 1;'
SELECT memo.admission_reset();
SET pg_memo.admission_max_admitted = 0;
:team1 :team1 :team1
SELECT state, regexp_replace(reason, '[0-9]+\.[0-9]+ ms', 'N ms') FROM memo.admission;
RESET pg_memo.admission_max_admitted;
-- and pg_memo.admission_memory_share of the cache at most for their entries
SELECT memo.admission_reset();
SET pg_memo.admission_memory_share = 0;
:team1 :team1 :team1
SELECT state, regexp_replace(reason, '[0-9]+\.[0-9]+ ms', 'N ms') FROM memo.admission;
RESET pg_memo.admission_memory_share;

-- 9. A DBA blocks a shape: not served, shown as blocked; unblocked, it is
-- admitted again.
SELECT memo.admission_reset();
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT memo.block_statement('SELECT count(*) FROM adm_items WHERE team = $1') = memo.statement_shape(
         'SELECT count(*) FROM adm_items WHERE team = 2') AS blocked_its_shape;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT state, why, served_calls FROM adm_shapes;
\o | sed -e 's/auto:[0-9a-f]*/auto:<shape>/'
EXPLAIN (COSTS OFF) SELECT count(*) FROM adm_items WHERE team = 2;
\o
SET ROLE adm_reader;
SELECT state, query FROM memo.admission;
SELECT memo.block_statement('SELECT count(*) FROM adm_items WHERE team = 3');
RESET ROLE;
-- A role whose name needs quoting blocks as well.
CREATE ROLE "Adm DBA" SUPERUSER;
SET ROLE "Adm DBA";
SELECT memo.block_statement('SELECT title FROM adm_items WHERE id = 4') IS NOT NULL AS blocked;
RESET ROLE;
SELECT blocked_by FROM memo.blocked_shapes WHERE query LIKE '%id = 4';
-- Blocked again by another role: the block is that role's now.
SELECT memo.block_statement('SELECT title FROM adm_items WHERE id = 5') IS NOT NULL AS blocked_again;
SELECT blocked_by::text = current_user AS blocked_by_me, query FROM memo.blocked_shapes WHERE query LIKE '%id = _';
SELECT memo.unblock_statement('SELECT title FROM adm_items WHERE id = 4');
DROP ROLE "Adm DBA";
SELECT memo.unblock_statement('SELECT count(*) FROM adm_items WHERE team = 7');
SELECT memo.unblock_statement('SELECT count(*) FROM adm_items WHERE team = 7');
-- Its block gave its place back (refused, until pg_memo.admission_retry).
SELECT state, why FROM adm_shapes;
SET pg_memo.admission_retry = 0;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT count(*) FROM adm_items WHERE team = 2;
SELECT state, served_calls FROM adm_shapes;
RESET pg_memo.admission_retry;

RESET pg_memo.admission;
RESET pg_memo.admission_calls;
RESET pg_memo.admission_min_cost;
RESET pg_memo.admission_window;
SELECT memo.admission_reset();
DROP VIEW adm_shapes;
DROP ROLE adm_reader;
