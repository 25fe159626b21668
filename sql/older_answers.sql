\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

-- What a caller may opt into instead of an exact result (docs/consistency.md,
-- "Older answers (opting out of exactness)"). Each is off by default.
CREATE TABLE price (id int PRIMARY KEY, amount int NOT NULL, n int NOT NULL DEFAULT 1);
INSERT INTO price VALUES (1, 10), (2, 20);
SELECT memo.watch('price');
CREATE FUNCTION older(name text) RETURNS TABLE (stale_hits bigint, stale_on_error_hits bigint, error_hits bigint)
LANGUAGE sql AS $$
  SELECT stale_hits, stale_on_error_hits, error_hits
    FROM memo.stats WHERE datname = current_database() AND cache_name = name
$$;

-- ---- pg_memo.max_staleness -------------------------------------------------

-- Exact by default: the next statement after a commit sees it.
SHOW pg_memo.max_staleness;
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
INSERT INTO price VALUES (3, 30);
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');

-- Opted in: the previous result is served, and counted, while it is younger
-- than the bound (an hour here, so that no refresh is due).
SET pg_memo.max_staleness = '1h';
INSERT INTO price VALUES (4, 40);
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
SELECT * FROM older('total');

-- Never to a transaction that wrote the table: its own write shows.
BEGIN;
INSERT INTO price VALUES (5, 50);
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
ROLLBACK;

-- Never under REPEATABLE READ (or SERIALIZABLE): one snapshot, exact.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
COMMIT;

-- Never after DDL on a table it read: the question changed, not the rows.
INSERT INTO price VALUES (6, 60);
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');  -- older
ALTER TABLE price ADD COLUMN note text;
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');  -- exact
-- Nor after memo.invalidate: the DBA says the entries may be wrong.
INSERT INTO price VALUES (7, 70);
SELECT memo.invalidate('price');
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
-- Nor after a privilege change on it.
INSERT INTO price VALUES (8, 80);
GRANT SELECT ON price TO PUBLIC;
SELECT memo.count('total', 'SELECT * FROM price WHERE amount > 5');
SELECT * FROM older('total');

-- The same table and the same role, one API configured alone: ALTER
-- FUNCTION ... SET scopes the setting to calls through that function.
RESET pg_memo.max_staleness;
CREATE FUNCTION relaxed_total() RETURNS bigint LANGUAGE sql
  SET pg_memo.max_staleness = '1h'
  AS $$ SELECT memo.count('relaxed', 'SELECT * FROM price WHERE amount > 5') $$;
SELECT relaxed_total();
INSERT INTO price VALUES (9, 90);
SELECT relaxed_total() AS through_the_function,
       memo.count('relaxed', 'SELECT * FROM price WHERE amount > 5') AS exact_caller;
SHOW pg_memo.max_staleness;

-- ---- pg_memo.stale_on_error ------------------------------------------------

-- A recomputation that fails with an error of the query: the error, by
-- default; with stale_on_error, the previous result and a WARNING.
SELECT * FROM memo.list('ratio', 'SELECT 100 / amount AS r FROM price WHERE id = 1') AS t(r int);
UPDATE price SET amount = 0 WHERE id = 1;
SELECT * FROM memo.list('ratio', 'SELECT 100 / amount AS r FROM price WHERE id = 1') AS t(r int);
SET pg_memo.stale_on_error = '1h';
SELECT * FROM memo.list('ratio', 'SELECT 100 / amount AS r FROM price WHERE id = 1') AS t(r int);
SELECT * FROM older('ratio');
-- A statement timeout too: the recomputation is slow after the write.
SELECT memo.count('slow', 'SELECT * FROM price p, generate_series(1, p.n) WHERE p.id = 2');
UPDATE price SET n = 100000000 WHERE id = 2;
SET statement_timeout = '100ms';
SELECT memo.count('slow', 'SELECT * FROM price p, generate_series(1, p.n) WHERE p.id = 2');
RESET statement_timeout;
SELECT * FROM older('slow');
-- Not after DDL: then the error.
ALTER TABLE price ADD COLUMN note2 text;
SELECT * FROM memo.list('ratio', 'SELECT 100 / amount AS r FROM price WHERE id = 1') AS t(r int);
RESET pg_memo.stale_on_error;
UPDATE price SET n = 1 WHERE id = 2;

-- ---- pg_memo.error_ttl -----------------------------------------------------

-- Off: every call runs the failing query again.
SELECT computations, failures('oops') FROM counters('oops');
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT computations, failures('oops') FROM counters('oops');
-- On: the error is remembered for the key, raised again without running it.
SET pg_memo.error_ttl = '1h';
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT computations, failures('oops'), error_hits FROM counters('oops'), older('oops');
-- Its message is the query's own, with pg_memo's context.
SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1');
-- A caller with error_ttl = 0 does not take it: it runs the query.
SET pg_memo.error_ttl = 0;
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT computations, failures('oops') FROM counters('oops');
-- A commit that touches the table clears it.
SET pg_memo.error_ttl = '1h';
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
UPDATE price SET n = 2 WHERE id = 2;
SELECT try($$SELECT memo.count('oops', 'SELECT * FROM price WHERE id = 2 AND 1 / (amount - amount) = 1')$$);
SELECT computations, failures('oops') FROM counters('oops');
-- Cancels and timeouts are not errors of the query: never remembered (the
-- second call runs the query again, and times out again).
SET statement_timeout = '100ms';
SELECT try($$SELECT memo.count('sleepy', 'SELECT * FROM generate_series(1, 100000000)')$$);
SELECT try($$SELECT memo.count('sleepy', 'SELECT * FROM generate_series(1, 100000000)')$$);
RESET statement_timeout;
SELECT computations, failures('sleepy'), error_hits FROM counters('sleepy'), older('sleepy');
-- A remembered error lives beside the result's entry: the older answer
-- stays, and for a caller with stale_on_error the remembered error is a
-- failed computation like any other.
SELECT * FROM memo.list('both', 'SELECT 100 / amount AS r FROM price WHERE id = 2') AS t(r int);
UPDATE price SET amount = 0 WHERE id = 2;
SELECT try($$SELECT * FROM memo.list('both', 'SELECT 100 / amount AS r FROM price WHERE id = 2') AS t(r int)$$);
SET pg_memo.stale_on_error = '1h';
SELECT * FROM memo.list('both', 'SELECT 100 / amount AS r FROM price WHERE id = 2') AS t(r int);
RESET pg_memo.stale_on_error;
SELECT computations, failures('both'), error_hits, stale_on_error_hits FROM counters('both'), older('both');
UPDATE price SET amount = 20 WHERE id = 2;
-- A remembered error is raised only to a caller who may still read the
-- table: after a membership is revoked (which moves no counter), the
-- caller gets PostgreSQL's permission error.
CREATE ROLE resil_group;
CREATE ROLE resil_user IN ROLE resil_group;
GRANT SELECT ON price TO resil_group;
REVOKE SELECT ON price FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO resil_group;
SET ROLE resil_user;
SELECT try($$SELECT memo.count('members', 'SELECT * FROM price WHERE 1 / (amount - amount) = 1')$$);
SELECT try($$SELECT memo.count('members', 'SELECT * FROM price WHERE 1 / (amount - amount) = 1')$$);
RESET ROLE;
REVOKE resil_group FROM resil_user;
SET ROLE resil_user;
SELECT try($$SELECT memo.count('members', 'SELECT * FROM price WHERE 1 / (amount - amount) = 1')$$);
RESET ROLE;
SELECT error_hits FROM older('members');
RESET pg_memo.error_ttl;

-- ---- pg_memo.unwatched_tables ----------------------------------------------

CREATE TABLE loose (v int);
INSERT INTO loose VALUES (1);
SELECT try($$SELECT memo.count('loose', 'SELECT * FROM loose')$$);
SET pg_memo.unwatched_tables = compute;
SELECT memo.count('loose', 'SELECT * FROM loose');   -- computed, WARNING once
INSERT INTO loose VALUES (2);
SELECT memo.count('loose', 'SELECT * FROM loose');   -- no WARNING again
SELECT calls, hits, computations, failures('loose'), bypasses, entries FROM counters('loose');
SET pg_memo.unwatched_tables = bogus;
RESET pg_memo.unwatched_tables;

DROP TABLE loose, price CASCADE;
DROP FUNCTION older(text);
REVOKE USAGE ON SCHEMA public FROM resil_group;
DROP ROLE resil_user, resil_group;
