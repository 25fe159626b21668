-- Registered statements (issue 30): memo.cache_statement
-- checks a statement as a miss would analyze it, and who registers it;
-- memo.statements keeps one row per query identifier.
\i sql/include/setup.sql

CREATE TABLE reg_items (id int PRIMARY KEY, team int NOT NULL, title text);
INSERT INTO reg_items SELECT g, g % 5, 'title ' || g FROM generate_series(1, 50) g;
SELECT memo.watch('reg_items');
CREATE TABLE reg_unwatched (id int);
CREATE ROLE reg_owner;
CREATE ROLE reg_other;
CREATE TABLE reg_owned (id int);
ALTER TABLE reg_owned OWNER TO reg_owner;
SELECT memo.watch('reg_owned');

-- One SELECT, registered under its query identifier; the same statement
-- with other constants and white space has the same identifier.
SELECT memo.cache_statement('SELECT id, title FROM reg_items WHERE team = 3 ORDER BY id LIMIT 5',
                            cache_name => 'reg.page') AS page_id \gset
SELECT memo.cache_statement('SELECT  id, title FROM reg_items
                             WHERE team = 4 ORDER BY id LIMIT 10;', cache_name => 'reg.page') = :page_id AS same_id;
SELECT cache_name, query, max_staleness, relations, registered_by = current_user::regrole AS by_me
  FROM memo.statements;
-- A parameter's type is inferred as for a client's untyped parameter.
SELECT memo.cache_statement('SELECT count(*) FROM reg_items WHERE team = $1',
                            max_staleness => '2 seconds', stale_on_error => '1 minute') AS count_id \gset
SELECT cache_name = 'statement.' || :count_id AS default_name, max_staleness, stale_on_error, error_ttl
  FROM memo.statements WHERE query_id = :count_id;
-- The identifier is PostgreSQL's own: EXPLAIN VERBOSE shows it when
-- compute_query_id is on; pg_memo leaves the setting as it was.
SHOW compute_query_id;
SET compute_query_id = on;
CREATE FUNCTION reg_query_id(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
    IF line LIKE 'Query Identifier:%' THEN RETURN split_part(line, ': ', 2)::bigint; END IF;
  END LOOP;
  RETURN NULL;
END $$;
SELECT reg_query_id('SELECT id, title FROM reg_items WHERE team = 1 ORDER BY id LIMIT 7') = :page_id AS matches_core;
RESET compute_query_id;
SHOW compute_query_id;

-- Refused: not one SELECT, syntax, unwatched, what a miss refuses, options.
SELECT memo.cache_statement('DELETE FROM reg_items');
SELECT memo.cache_statement('SELECT 1; SELECT 2');
SELECT memo.cache_statement('SELEC id FROM reg_items');
SELECT memo.cache_statement('SELECT * FROM reg_unwatched');
SET pg_memo.unwatched_tables = compute;
SELECT memo.cache_statement('SELECT * FROM reg_unwatched');
RESET pg_memo.unwatched_tables;
SELECT memo.cache_statement('SELECT id FROM reg_items WHERE random() < 0.5');
SELECT memo.cache_statement('SELECT id FROM reg_items FOR UPDATE');
SELECT memo.cache_statement('SELECT id FROM reg_items', max_staleness => '-1 second');
SELECT memo.cache_statement('SELECT id FROM reg_items', cache_name => '');
SELECT memo.cache_statement('SELECT id FROM reg_items', cache_name => repeat('x', 64));
SELECT memo.cache_statement(NULL::text);
SELECT memo.cache_statement(12345);

-- Who registers: the owner of every relation read, or a superuser; the
-- table is not another role's to read or write.
SET ROLE reg_other;
SELECT memo.cache_statement('SELECT id FROM reg_owned');
SELECT * FROM memo.statements;
RESET ROLE;
SET ROLE reg_owner;
SELECT memo.cache_statement('SELECT id FROM reg_owned', cache_name => 'reg.owned') IS NOT NULL AS registered;
SELECT memo.cache_statement('SELECT o.id FROM reg_owned o JOIN reg_items i ON i.id = o.id');
RESET ROLE;
SELECT cache_name, registered_by FROM memo.statements WHERE cache_name = 'reg.owned';

-- Unregistering: by text or identifier; only who may.
SET ROLE reg_other;
SELECT memo.uncache_statement('SELECT id FROM reg_owned');
RESET ROLE;
SET ROLE reg_owner;
SELECT memo.uncache_statement('SELECT id   FROM reg_owned');
RESET ROLE;
SELECT memo.uncache_statement(:count_id);
SELECT memo.uncache_statement(:count_id);
SELECT cache_name FROM memo.statements ORDER BY cache_name;

-- pg_dump keeps the registrations (extension configuration).
SELECT c.relname FROM pg_extension e, unnest(e.extconfig) t(oid) JOIN pg_class c ON c.oid = t.oid
 WHERE e.extname = 'pg_memo';

-- memo.explain_cache: would memo.cache_statement take it, and if not why,
-- without running it (nor registering it).
SELECT cacheable, query_id = :page_id AS same_id, sqlstate, reason, hint
  FROM memo.explain_cache('SELECT id, title FROM reg_items WHERE team = 2 ORDER BY id LIMIT 3');
SELECT cacheable, query_id, sqlstate, reason, hint FROM memo.explain_cache('SELECT * FROM reg_unwatched');
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('SELECT id FROM reg_items WHERE random() < 0.5');
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('SELEC 1');
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('UPDATE reg_items SET team = 1');
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('SELECT * FROM reg_missing');
SET ROLE reg_other;
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('SELECT id FROM reg_items');
RESET ROLE;
SELECT count(*) AS registrations FROM memo.statements;
SELECT memo.explain_cache(NULL) IS NULL AS null_in_null_out;
-- A system catalog is refused as a miss refuses it, with no hint to watch
-- it; a view's base tables are checked as a miss checks them (a catalog
-- behind information_schema, an unwatched table behind a view).
SELECT cacheable, sqlstate, reason, hint FROM memo.explain_cache('SELECT typname FROM pg_type WHERE oid = $1');
SELECT cacheable, sqlstate, reason, hint FROM memo.explain_cache('SELECT table_name FROM information_schema.tables');
CREATE VIEW reg_unwatched_view AS SELECT * FROM reg_unwatched;
SELECT cacheable, sqlstate, reason FROM memo.explain_cache('SELECT * FROM reg_unwatched_view');
DROP VIEW reg_unwatched_view;

SELECT memo.uncache_statement(:page_id);
DROP FUNCTION reg_query_id(text);
DROP TABLE reg_items, reg_unwatched, reg_owned;
DROP ROLE reg_owner;
DROP ROLE reg_other;

-- memo.candidates ranks pg_stat_statements' statements (test/t/018); without
-- that extension it says what to do.
SELECT * FROM memo.candidates();
SELECT * FROM memo.candidates(0);
