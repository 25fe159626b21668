-- Serving registered statements (issue 30): a registered statement, run as any
-- client runs it, is served from the cache, exactly: what it returns
-- without pg_memo, at every moment. Each served call is counted under the
-- registration's cache name; EXPLAIN shows the "pg_memo" node.
\i sql/include/setup.sql

CREATE TABLE tr_items (id int PRIMARY KEY, team int NOT NULL, title text);
INSERT INTO tr_items SELECT g, g % 5, 'title ' || g FROM generate_series(1, 50) g;
SELECT memo.watch('tr_items');
CREATE TABLE tr_other (id int);
INSERT INTO tr_other VALUES (1);

SELECT memo.cache_statement('SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3',
                            cache_name => 'tr.page') IS NOT NULL AS registered;
SELECT memo.cache_statement('SELECT count(*) FROM tr_items WHERE team = 2', cache_name => 'tr.count')
       IS NOT NULL AS registered;

-- A statement with the registered shape (any constants, any white space)
-- gets the node; the plan PostgreSQL made is its child.
EXPLAIN (COSTS OFF) SELECT count(*) FROM tr_items WHERE team = 2;
EXPLAIN (COSTS OFF) SELECT count(*)   FROM tr_items WHERE team = 4;
-- Other statements are planned as without pg_memo.
EXPLAIN (COSTS OFF) SELECT count(*) FROM tr_items WHERE team = 2 AND id > 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tr_other;

-- Simple protocol: computed once, then hits; the constants are in the key.
SELECT count(*) FROM tr_items WHERE team = 2;
SELECT count(*) FROM tr_items WHERE team = 2;
SELECT count(*) FROM tr_items WHERE team = 3;
SELECT calls, hits, computations FROM counters('tr.count');
-- (the node's own lines: the rest of EXPLAIN ANALYZE differs between versions)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM tr_items WHERE team = 2\g | grep -E 'pg_memo|Cache:|Served:' | sed -E 's/ \(actual.*//'

-- A write shows in the very next statement after its commit.
INSERT INTO tr_items VALUES (100, 2, 'new');
SELECT count(*) FROM tr_items WHERE team = 2;
SELECT calls, hits, computations FROM counters('tr.count');
-- Inside the writing transaction: its own write, not a cached result.
BEGIN;
DELETE FROM tr_items WHERE id = 100;
SELECT count(*) FROM tr_items WHERE team = 2;
ROLLBACK;
SELECT count(*) FROM tr_items WHERE team = 2;

-- Prepared statements with parameters (PREPARE/EXECUTE, generic plans
-- after five executions included); EXPLAIN ANALYZE says how it was served.
PREPARE tr_page(int) AS SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3;
EXECUTE tr_page(1);
EXECUTE tr_page(1);
EXECUTE tr_page(1);
EXECUTE tr_page(1);
EXECUTE tr_page(1);
EXECUTE tr_page(1);
EXECUTE tr_page(2);
SELECT calls, hits, computations FROM counters('tr.page');
-- (the node's own lines: the rest of EXPLAIN ANALYZE differs between versions)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE tr_page(1)\g | grep -E 'pg_memo|Cache:|Served:' | sed -E 's/ \(actual.*//'
UPDATE tr_items SET title = 'renamed' WHERE id = 1;
EXECUTE tr_page(1);
-- A NULL parameter is a value of the key like any other.
EXECUTE tr_page(NULL);

-- A cursor fetched in pieces, backwards too.
SELECT memo.cache_statement('SELECT id FROM tr_items WHERE team = 4 ORDER BY id LIMIT 4',
                            cache_name => 'tr.cursor') IS NOT NULL AS registered;
BEGIN;
DECLARE tr_c SCROLL CURSOR FOR SELECT id FROM tr_items WHERE team = 4 ORDER BY id LIMIT 4;
FETCH 2 FROM tr_c;
FETCH BACKWARD 1 FROM tr_c;
FETCH ALL FROM tr_c;
COMMIT;
SELECT calls FROM counters('tr.cursor');
-- WITH HOLD: the cursor outlives its transaction, with the rows served.
BEGIN;
DECLARE tr_h CURSOR WITH HOLD FOR SELECT id FROM tr_items WHERE team = 4 ORDER BY id LIMIT 4;
FETCH 1 FROM tr_h;
COMMIT;
FETCH ALL FROM tr_h;
CLOSE tr_h;
SELECT calls, hits FROM counters('tr.cursor');
-- The same statement sent on its own shares the cursors' entry.
SELECT id FROM tr_items WHERE team = 4 ORDER BY id LIMIT 4;
SELECT calls, hits FROM counters('tr.cursor');
-- A cursor's rows are what its snapshot sees (issue 45): a write made
-- after DECLARE, in its own transaction here, is not among them, as
-- without pg_memo; it is computed with the cursor's snapshot, not stored.
BEGIN;
DECLARE tr_s CURSOR FOR SELECT id FROM tr_items WHERE team = 4 ORDER BY id LIMIT 4;
DELETE FROM tr_items WHERE id = 4;
FETCH ALL FROM tr_s;
ROLLBACK;
SELECT calls, hits, bypass_reasons FROM memo.stats
 WHERE datname = current_database() AND cache_name = 'tr.cursor';

-- REPEATABLE READ: computed under the transaction's snapshot, not stored.
BEGIN ISOLATION LEVEL REPEATABLE READ;
-- (the node's own lines: the rest of EXPLAIN ANALYZE differs between versions)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM tr_items WHERE team = 2\g | grep -E 'pg_memo|Cache:|Served:' | sed -E 's/ \(actual.*//'
COMMIT;

-- Privileges are PostgreSQL's own on every execution, hit or not.
CREATE ROLE tr_reader;
GRANT USAGE ON SCHEMA memo TO tr_reader;
SET ROLE tr_reader;
SELECT count(*) FROM tr_items WHERE team = 2;
RESET ROLE;
GRANT SELECT ON tr_items TO tr_reader;
SET ROLE tr_reader;
SELECT count(*) FROM tr_items WHERE team = 2;
SELECT count(*) FROM tr_items WHERE team = 2;
RESET ROLE;
REVOKE SELECT ON tr_items FROM tr_reader;
SET ROLE tr_reader;
SELECT count(*) FROM tr_items WHERE team = 2;
RESET ROLE;

-- Row level security: each role sees its rows, from its own entry.
ALTER TABLE tr_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY tr_low ON tr_items TO tr_reader USING (id < 20);
GRANT SELECT ON tr_items TO tr_reader;
SET ROLE tr_reader;
SELECT count(*) FROM tr_items WHERE team = 2;
SELECT count(*) FROM tr_items WHERE team = 2;
RESET ROLE;
SELECT count(*) FROM tr_items WHERE team = 2;
ALTER TABLE tr_items DISABLE ROW LEVEL SECURITY;
DROP POLICY tr_low ON tr_items;

-- A session's relaxations do not reach a registered statement: its
-- registration's options do (a transaction pooler shares sessions).
SET pg_memo.max_staleness = '1h';
SELECT count(*) FROM tr_items WHERE team = 2;
INSERT INTO tr_items VALUES (101, 2, 'newer');
SELECT count(*) FROM tr_items WHERE team = 2;
RESET pg_memo.max_staleness;

-- Statements of functions are not served (their text names variables).
CREATE FUNCTION tr_count_in_function() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM tr_items WHERE team = 2);
END $$;
SELECT calls AS before FROM counters('tr.count') \gset
SELECT tr_count_in_function();
SELECT calls - :before AS served_calls FROM counters('tr.count');

-- A function labelled IMMUTABLE that reads an unwatched table: what it
-- reads is learned at the first computation, which memo.list then refuses;
-- the registered statement keeps answering as without pg_memo (computed,
-- not stored), before and after a write to that table.
CREATE TABLE tr_unwatched (v int);
INSERT INTO tr_unwatched VALUES (7);
CREATE FUNCTION tr_lookup(x int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT v + x FROM tr_unwatched';
SELECT memo.cache_statement('SELECT tr_lookup(id) AS v FROM tr_items WHERE id = 1',
                            cache_name => 'tr.learned') IS NOT NULL AS registered;
SELECT tr_lookup(id) AS v FROM tr_items WHERE id = 1;
SELECT tr_lookup(id) AS v FROM tr_items WHERE id = 1;
UPDATE tr_unwatched SET v = 100;
SELECT tr_lookup(id) AS v FROM tr_items WHERE id = 1;
SELECT calls, hits, bypasses FROM counters('tr.learned');

-- A function made VOLATILE after the registration: the statement is
-- planned as without pg_memo, and each planning is counted as a refusal
-- (refused_plans). In the simple protocol every execution plans, but the
-- refusal is kept and not checked again, until a catalog change.
CREATE FUNCTION tr_double(x int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT x * 2';
SELECT memo.cache_statement('SELECT tr_double(id) AS v FROM tr_items WHERE id = 2',
                            cache_name => 'tr.refused') IS NOT NULL AS registered;
SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
ALTER FUNCTION tr_double(int) VOLATILE;
EXPLAIN (COSTS OFF) SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
ALTER FUNCTION tr_double(int) IMMUTABLE;
SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
SELECT tr_double(id) AS v FROM tr_items WHERE id = 2;
SELECT calls, hits, bypass_reasons, refused_plans FROM memo.registered_statements WHERE cache_name = 'tr.refused';

-- A kept plan does not outlive a change to what it reads: after the
-- column's type changed, the same text (the same query identifier) is
-- planned again, and its rows have the new type.
CREATE TABLE tr_typed (id int PRIMARY KEY, v int);
INSERT INTO tr_typed VALUES (1, 10);
SELECT memo.watch('tr_typed');
SELECT memo.cache_statement('SELECT v FROM tr_typed WHERE id = 1', cache_name => 'tr.typed') IS NOT NULL AS registered;
SELECT v FROM tr_typed WHERE id = 1;
SELECT v FROM tr_typed WHERE id = 1;
ALTER TABLE tr_typed ALTER COLUMN v TYPE numeric;
UPDATE tr_typed SET v = 10.5;
SELECT v FROM tr_typed WHERE id = 1;
SELECT v FROM tr_typed WHERE id = 1;
SELECT calls, hits FROM counters('tr.typed');

-- pg_memo.serve_statements = off plans as without pg_memo.
SET pg_memo.serve_statements = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tr_items WHERE team = 2;
RESET pg_memo.serve_statements;

-- The registrations, with their counters.
-- Why calls bypassed the cache: the REPEATABLE READ transaction and the
-- writer's own transaction above, the function that reads an unwatched
-- table.
SELECT cache_name, state, calls > 0 AS called, hits > 0 AS hit, bypasses, bypass_reasons, refused_plans
  FROM memo.registered_statements WHERE cache_name LIKE 'tr.%' ORDER BY cache_name;

-- Unregistering reaches prepared statements: planned again, not served.
SELECT memo.uncache_statement('SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3');
EXPLAIN (COSTS OFF) EXECUTE tr_page(1);
-- ... and so does registering.
SELECT memo.cache_statement('SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3',
                            cache_name => 'tr.page') IS NOT NULL AS registered;
EXPLAIN (COSTS OFF) EXECUTE tr_page(1);
-- A plain change to memo.statements (a restore) is seen too.
DELETE FROM memo.statements WHERE cache_name = 'tr.page';
EXPLAIN (COSTS OFF) EXECUTE tr_page(1);
DEALLOCATE tr_page;

-- A table dropped: the registration says so.
CREATE TABLE tr_gone (id int);
SELECT memo.watch('tr_gone');
SELECT memo.cache_statement('SELECT count(*) FROM tr_gone', cache_name => 'tr.gone') IS NOT NULL AS registered;
DROP TABLE tr_gone;
SELECT cache_name, state FROM memo.registered_statements WHERE cache_name = 'tr.gone';

-- A registered statement whose result is too large to store is served as
-- computed, and its application sees nothing of pg_memo: no WARNING (it
-- goes to the server log), as a memo call would get.
SELECT memo.cache_statement('SELECT id, title FROM tr_items ORDER BY id', cache_name => 'tr.large') IS NOT NULL
  AS registered;
SET pg_memo.max_result_size = '1kB';
SELECT id, title FROM tr_items ORDER BY id \g /dev/null
SELECT too_large > 0 AS not_stored FROM memo.stats WHERE cache_name = 'tr.large';
RESET pg_memo.max_result_size;

-- Statements matched by shape (1.3): a registration serves its statement
-- however a client sends it, a literal for a parameter, a bigint parameter
-- for an integer one, varchar for text; each keyed by its own text and
-- values, each exact.
SELECT memo.cache_statement('SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3',
                            cache_name => 'tr.shape') IS NOT NULL AS registered;
SELECT memo.cache_statement('SELECT count(*) FROM tr_items WHERE title = $1', cache_name => 'tr.shape_text')
       IS NOT NULL AS registered;
SELECT shape_id = memo.statement_shape('SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3')
       AS shape_kept FROM memo.statements WHERE cache_name = 'tr.shape';
SELECT memo.statement_shape('SELECT id FROM tr_items WHERE team = $1') = memo.statement_shape(q) AS same, q
  FROM unnest(ARRAY['SELECT id FROM tr_items WHERE team = 7',
                    'SELECT id FROM tr_items WHERE team = $1::bigint',
                    'SELECT id FROM tr_items WHERE team = $1::smallint',
                    'SELECT id FROM tr_items WHERE team = 3000000000',
                    'SELECT id FROM tr_items WHERE team = 7::bigint',
                    'SELECT id FROM tr_items WHERE team = int8(7)',
                    'SELECT id FROM tr_items WHERE team = abs($1)',
                    'SELECT id FROM tr_items WHERE team > $1',
                    'SELECT id FROM tr_items WHERE id = $1',
                    'SELECT id, title FROM tr_items WHERE team = $1']) q;
-- A literal where the registration has a parameter: the node, and served.
EXPLAIN (COSTS OFF) SELECT id, title FROM tr_items WHERE team = 1 ORDER BY id LIMIT 3;
SELECT id, title FROM tr_items WHERE team = 1 ORDER BY id LIMIT 3;
SELECT id, title FROM tr_items WHERE team = 1 ORDER BY id LIMIT 3;
SELECT calls, hits, computations FROM counters('tr.shape');
-- A bigint parameter (sysbench, psycopg 3 with a large value).
PREPARE tr_shape8(bigint) AS SELECT id, title FROM tr_items WHERE team = $1 ORDER BY id LIMIT 3;
EXPLAIN (COSTS OFF) EXECUTE tr_shape8(2);
EXECUTE tr_shape8(2);
EXECUTE tr_shape8(2);
SELECT calls, hits, computations FROM counters('tr.shape');
-- varchar for text.
PREPARE tr_shape_vc(varchar) AS SELECT count(*) FROM tr_items WHERE title = $1;
EXECUTE tr_shape_vc('title 7');
EXECUTE tr_shape_vc('title 7');
SELECT calls, hits, computations FROM counters('tr.shape_text');
-- Exact: a write shows in the next statement of every variant.
UPDATE tr_items SET title = 'title 7', team = 2 WHERE id = 8;
SELECT id, title FROM tr_items WHERE team = 1 ORDER BY id LIMIT 3;
EXECUTE tr_shape8(2);
EXECUTE tr_shape_vc('title 7');
SELECT count(*) FROM tr_items WHERE title = 'title 7';
-- Another shape is not served.
EXPLAIN (COSTS OFF) SELECT id, title FROM tr_items WHERE team > 1 ORDER BY id LIMIT 3;
DEALLOCATE tr_shape8;
DEALLOCATE tr_shape_vc;

DELETE FROM memo.statements WHERE cache_name LIKE 'tr.%';
DROP FUNCTION tr_count_in_function();
DROP FUNCTION tr_lookup(int);
DROP FUNCTION tr_double(int);
DROP TABLE tr_items, tr_other, tr_unwatched, tr_typed;
DROP OWNED BY tr_reader;
DROP ROLE tr_reader;
