-- Bad input and uncacheable queries get clear errors with proper SQLSTATEs.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
\set VERBOSITY default
\set SHOW_CONTEXT never

CREATE TABLE plain (id int PRIMARY KEY, v text);
CREATE TEMP TABLE scratch (id int);
CREATE TABLE watched_t (id int PRIMARY KEY, v text);
SELECT memo.watch('watched_t');
CREATE VIEW v_plain AS SELECT * FROM plain;
CREATE MATERIALIZED VIEW mv AS SELECT * FROM watched_t;
CREATE SEQUENCE seq;

-- NULL arguments
SELECT try($$SELECT memo.count(NULL, 'SELECT 1')$$);
SELECT try($$SELECT memo.count('c', NULL)$$);
SELECT try($$SELECT memo.count('c', 'SELECT 1', NULL)$$);
SELECT try($$SELECT * FROM memo.list(NULL, 'SELECT 1') AS t(x int)$$);
-- cache names
SELECT try($$SELECT memo.count('', 'SELECT * FROM watched_t')$$);
SELECT try($$SELECT memo.count(repeat('x', 64), 'SELECT * FROM watched_t')$$);
SELECT try($$SELECT memo.count('odd name ''"; -- ✓', 'SELECT * FROM watched_t')$$);
-- parameters
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $1::int', '{}')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $1::int', '{1,2}')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $1::int', '{abc}')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $1::int', '{{1},{2}}')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $1::int', '{99999999999}')$$);
-- not one SELECT
SELECT try($$SELECT memo.count('c', '')$$);
SELECT try($$SELECT memo.count('c', 'SELEC 1')$$);
SELECT try($$SELECT memo.count('c', 'SELECT 1; SELECT 2')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t) q; DELETE FROM watched_t; SELECT (1')$$);
SELECT try($$SELECT memo.count('c', 'DELETE FROM watched_t')$$);
-- an error in the text points into the text (QUERY and its caret), as in
-- a function's body, not into the statement that passed it
SELECT memo.count('c', 'SELECT id FROM watched_t WHER id = 1');
SELECT memo.count('c', 'SELECT id FROM watched_t WHERE nosuch = 1');
SELECT * FROM memo.list('c', 'SELECT id, nosuch FROM watched_t') AS t(id int, n int);
SELECT * FROM memo.list_as(NULL::watched_t, 'c', 'SELECT * FROM watched_t ORDER BY 1 LIMIT ''x''');
SELECT try($$SELECT memo.count('c', 'CREATE TABLE x (a int)')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * INTO newt FROM watched_t')$$);
SELECT try($$SELECT memo.count('c', 'WITH d AS (DELETE FROM watched_t RETURNING *) SELECT * FROM d')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t FOR UPDATE')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t FOR SHARE')$$);
-- functions that are not immutable
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE now() > ''2000-01-01''')$$);
SELECT try($$SELECT memo.count('c', 'SELECT random() FROM watched_t')$$);
-- CURRENT_USER is the key's role: served (row_security.sql)
SELECT try($$SELECT memo.count('c', 'SELECT current_user FROM watched_t')$$);
SELECT try($$SELECT memo.count('c', 'SELECT nextval(''seq'') FROM watched_t')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t TABLESAMPLE BERNOULLI (50)')$$);
SELECT try($$SELECT memo.count('c', 'SELECT memo.count(''x'', ''SELECT 1'')')$$);
-- what it reads
SELECT try($$SELECT memo.count('c', 'SELECT * FROM plain')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM v_plain')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM scratch')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM pg_class')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM information_schema.tables')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM mv')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM no_such_table')$$);
CREATE FOREIGN DATA WRAPPER memo_dummy_fdw;
CREATE SERVER memo_dummy FOREIGN DATA WRAPPER memo_dummy_fdw;
CREATE FOREIGN TABLE faraway (id int) SERVER memo_dummy;
SELECT try($$SELECT memo.count('c', 'SELECT * FROM faraway')$$);
-- a search path of more than 32 schemas (pg_catalog and 33 more)
DO $$ BEGIN FOR i IN 1 .. 33 LOOP EXECUTE format('CREATE SCHEMA memo_path_%s', i); END LOOP; END $$;
SELECT set_config('search_path', (SELECT string_agg('memo_path_' || i, ', ') FROM generate_series(1, 33) i) || ', public', false) IS NOT NULL AS path_set;
SELECT try($$SELECT memo.count('c', 'SELECT 1')$$);
RESET search_path;
DO $$ BEGIN FOR i IN 1 .. 33 LOOP EXECUTE format('DROP SCHEMA memo_path_%s', i); END LOOP; END $$;
-- constants and immutable functions are fine
SELECT try($$SELECT memo.count('c', 'SELECT 1')$$);
SELECT try($$SELECT memo.count('c', 'SELECT lower(v) FROM watched_t WHERE id > 0')$$);

-- memo.watch and memo.unwatch refuse what they cannot watch
SELECT try($$SELECT memo.watch(NULL)$$);
SELECT try($$SELECT memo.watch('v_plain')$$);
SELECT try($$SELECT memo.watch('mv')$$);
SELECT try($$SELECT memo.watch('seq')$$);
SELECT try($$SELECT memo.watch('scratch')$$);
SELECT try($$SELECT memo.watch('pg_class')$$);
SELECT try($$SELECT memo.watch('no_such_table')$$);
CREATE TABLE fake (id int);
CREATE FUNCTION fake_trigger() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER pg_memo_invalidate AFTER INSERT ON fake FOR EACH STATEMENT EXECUTE FUNCTION fake_trigger();
SELECT try($$SELECT memo.count('c', 'SELECT * FROM fake')$$);
-- memo.watch replaces a trigger that bears the name but is not pg_memo's
SELECT try($$SELECT memo.watch('fake')$$);
SELECT try($$SELECT memo.count('c', 'SELECT * FROM fake')$$);

-- look-alikes calling pg_memo's own function do not count as watched
-- either: a WHEN clause, a column list, row level, fewer events, arguments
CREATE TABLE lookalike (id int, v int);
CREATE FUNCTION plant(how text, args text DEFAULT '') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  DROP TRIGGER IF EXISTS pg_memo_invalidate ON lookalike;
  EXECUTE format('CREATE TRIGGER pg_memo_invalidate %s EXECUTE FUNCTION memo.invalidation_trigger(%s)',
                 how, args);
  ALTER TABLE lookalike ENABLE ALWAYS TRIGGER pg_memo_invalidate;
  RETURN try($q$SELECT memo.count('c', 'SELECT * FROM lookalike')$q$);
END $$;
SELECT plant('BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON lookalike FOR EACH STATEMENT WHEN (false)');
SELECT plant('BEFORE INSERT OR UPDATE OF v OR DELETE OR TRUNCATE ON lookalike FOR EACH STATEMENT');
SELECT plant('BEFORE INSERT OR UPDATE OR DELETE ON lookalike FOR EACH ROW');
SELECT plant('BEFORE INSERT OR UPDATE OR DELETE ON lookalike FOR EACH STATEMENT');
SELECT plant('AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON lookalike FOR EACH STATEMENT');
SELECT plant('BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON lookalike FOR EACH STATEMENT', '''x''');
-- the real one, as memo.watch creates it
SELECT plant('BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON lookalike FOR EACH STATEMENT');
SELECT memo.watch('lookalike');  -- keeps pg_memo's own trigger: no notice
SELECT count(*) FROM memo.watched WHERE table_name = 'lookalike'::regclass;

-- the trigger function is only a trigger
SELECT try($$SELECT memo.invalidation_trigger()$$);

-- set-returning in a context that cannot take a set
SELECT try($$SELECT memo.list('c', 'SELECT 1')$$);

-- a parameter the query never uses has no type
SELECT try($$SELECT memo.count('c', 'SELECT * FROM watched_t WHERE id = $2::int', '{1,2}')$$);

-- a trigger that only looks like pg_memo's does not count
CREATE SCHEMA decoy;
CREATE FUNCTION decoy.invalidation_trigger() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TABLE decoyed (id int);
CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON decoyed
  FOR EACH STATEMENT EXECUTE FUNCTION decoy.invalidation_trigger();
SELECT try($$SELECT memo.count('c', 'SELECT * FROM decoyed')$$);

-- a missing column definition list is refused before anything is computed
SELECT try($$SELECT memo.list('nocoldef', 'SELECT id FROM watched_t')$$);
SELECT count(*) FROM memo.stats WHERE cache_name = 'nocoldef' AND computations > 0;

-- a computation that calls back into its own key gets an error, not a hang;
-- a nested call with another key computes without joining a flight
INSERT INTO watched_t VALUES (1, 'one');
CREATE FUNCTION self_list() RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT n FROM memo.list('self', 'SELECT self_list()') AS t(n bigint) $$;
SELECT try($$SELECT * FROM memo.list('self', 'SELECT self_list()') AS t(n bigint)$$);
CREATE FUNCTION inner_count() RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT memo.count('inner', 'SELECT * FROM watched_t') $$;
SELECT * FROM memo.list('outer', 'SELECT inner_count() FROM watched_t') AS t(n bigint);
SELECT calls FROM memo.stats WHERE cache_name = 'inner';
SELECT count(*) FROM memo.flights;

-- the refusals stored nothing: only 'SELECT 1' and the lower(v) query were cached
SELECT entries FROM memo.stats WHERE cache_name = 'c';
SELECT entries FROM memo.stats WHERE cache_name = 'self';
SELECT count(*) FROM memo.flights;
SELECT memo.count('ok', 'SELECT * FROM watched_t');
