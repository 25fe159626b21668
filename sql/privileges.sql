-- Privileges (docs/security.md): the privileges and properties of every
-- pg_memo function and view, who may watch, unwatch, invalidate and reset,
-- one entry per role, what the monitoring views show to whom, cache
-- poisoning through session settings, and the bound on cache filling.
-- sql/security.sql covers hits.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
\set VERBOSITY terse
CREATE ROLE memo_sr_owner;
CREATE ROLE memo_sr_member IN ROLE memo_sr_owner;
CREATE ROLE memo_sr_noinherit NOINHERIT IN ROLE memo_sr_owner;
CREATE ROLE memo_sr_writer;
CREATE ROLE memo_sr_reader;
CREATE ROLE memo_sr_monitor IN ROLE pg_read_all_stats;

-- Every function and view of the extension, as any role sees it. Nothing is
-- SECURITY DEFINER; the PL/pgSQL functions pin their search_path.
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer,
       has_function_privilege('memo_sr_reader', p.oid, 'EXECUTE') AS any_role_may_execute,
       coalesce(array_to_string(p.proconfig, ','), '') AS settings
  FROM pg_proc p WHERE p.pronamespace = 'memo'::regnamespace ORDER BY p.oid::regprocedure::text COLLATE "C";
-- Their properties: volatility (v, s), parallel safety (s safe, u unsafe),
-- STRICT only where there are arguments, and a comment on each. The memo
-- functions, watching, invalidating and resetting write shared memory or
-- run DDL: PARALLEL UNSAFE; the readers are PARALLEL SAFE.
SELECT p.oid::regprocedure AS function, p.provolatile AS volatility, p.proparallel AS parallel,
       p.proisstrict AS strict, obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p WHERE p.pronamespace = 'memo'::regnamespace ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT c.relname AS relation, c.relkind,
       has_table_privilege('memo_sr_reader', c.oid, 'SELECT') AS any_role_may_select,
       has_table_privilege('memo_sr_reader', c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE') AS any_role_may_write,
       obj_description(c.oid, 'pg_class') IS NOT NULL AS commented
  FROM pg_class c WHERE c.relnamespace = 'memo'::regnamespace ORDER BY 1;
SELECT has_schema_privilege('memo_sr_reader', 'memo', 'USAGE') AS usage,
       has_schema_privilege('memo_sr_reader', 'memo', 'CREATE') AS "create";

-- A table owned by memo_sr_owner. The writer holds every table privilege
-- but ownership; the reader may only SELECT.
CREATE TABLE sr_items (id int PRIMARY KEY, v text);
INSERT INTO sr_items SELECT g, 'v' || g FROM generate_series(1, 10) g;
ALTER TABLE sr_items OWNER TO memo_sr_owner;
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON sr_items TO memo_sr_writer;
GRANT SELECT ON sr_items TO memo_sr_reader;

-- watch, unwatch and invalidate: the owner, and roles that have its
-- privileges (an INHERIT member; a NOINHERIT member only after SET ROLE)
SET ROLE memo_sr_owner;
SELECT memo.watch('sr_items');
SELECT memo.unwatch('sr_items');
SELECT memo.watch('sr_items');
SELECT memo.invalidate('sr_items');
SET ROLE memo_sr_member;
SELECT memo.unwatch('sr_items');
SELECT memo.watch('sr_items');
SELECT memo.invalidate('sr_items');
SET ROLE memo_sr_noinherit;
SELECT memo.unwatch('sr_items');
SELECT memo.invalidate('sr_items');
SET ROLE memo_sr_owner;
SELECT memo.invalidate('sr_items');
RESET ROLE;

-- every table privilege but ownership is not enough
SET ROLE memo_sr_writer;
SELECT memo.watch('sr_items');
SELECT memo.unwatch('sr_items');
SELECT memo.invalidate('sr_items');
RESET ROLE;
SET ROLE memo_sr_reader;
SELECT memo.watch('sr_items');
SELECT memo.unwatch('sr_items');
SELECT memo.invalidate('sr_items');
RESET ROLE;
SELECT table_name, triggers_enabled FROM memo.watched WHERE table_name = 'sr_items'::regclass;

-- ... but a writer can invalidate anyway, with a write that changes nothing:
-- letting writers call memo.invalidate would give them nothing new
SELECT memo.generation('sr_items') AS generation_before \gset
SET ROLE memo_sr_writer;
UPDATE sr_items SET v = v WHERE false;
RESET ROLE;
SELECT memo.generation('sr_items') > :generation_before AS a_no_op_write_invalidates;

-- the owner of a partitioned table must own its partitions to watch it
CREATE TABLE sr_parts (k int, v text) PARTITION BY LIST (k);
CREATE TABLE sr_parts_1 PARTITION OF sr_parts FOR VALUES IN (1);
ALTER TABLE sr_parts OWNER TO memo_sr_owner;
SET ROLE memo_sr_owner;
SELECT memo.watch('sr_parts');
RESET ROLE;
SELECT count(*) AS watched_partitions FROM memo.watched WHERE table_name::text LIKE 'sr_parts%';

-- a role with the TRIGGER privilege cannot make a table cacheable: it can
-- create a trigger named like pg_memo's, but only the owner can enable it
-- ALWAYS, so the table's queries stay bypasses
CREATE TABLE sr_trigger (id int);
INSERT INTO sr_trigger VALUES (1), (2);
ALTER TABLE sr_trigger OWNER TO memo_sr_owner;
GRANT SELECT, TRIGGER ON sr_trigger TO memo_sr_writer;
SET ROLE memo_sr_writer;
CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON sr_trigger
  FOR EACH STATEMENT EXECUTE FUNCTION memo.invalidation_trigger();
ALTER TABLE sr_trigger ENABLE ALWAYS TRIGGER pg_memo_invalidate;
SELECT memo.count('sr.trigger', 'SELECT * FROM sr_trigger');
SELECT memo.count('sr.trigger', 'SELECT * FROM sr_trigger');
RESET ROLE;
SELECT hits, bypasses, entries FROM counters('sr.trigger');
SELECT table_name, triggers_enabled, trigger_mode FROM memo.watched WHERE table_name = 'sr_trigger'::regclass;

-- reset and reset_stats: superusers, and roles granted EXECUTE
SET ROLE memo_sr_owner;
SELECT memo.reset();
SELECT memo.reset_stats();
RESET ROLE;
GRANT EXECUTE ON FUNCTION memo.reset_stats() TO memo_sr_monitor;
SET ROLE memo_sr_monitor;
SELECT memo.reset_stats();
SELECT memo.reset();
RESET ROLE;
REVOKE EXECUTE ON FUNCTION memo.reset_stats() FROM memo_sr_monitor;

-- entries are per role: the same name and text cached by two roles are two
-- entries, each computed for its own role
SET ROLE memo_sr_reader;
SELECT memo.count('sr.roles', 'SELECT * FROM sr_items');
SELECT memo.count('sr.roles', 'SELECT * FROM sr_items');
SET ROLE memo_sr_writer;
SELECT memo.count('sr.roles', 'SELECT * FROM sr_items');
RESET ROLE;
SELECT hits, computations, entries FROM counters('sr.roles');

-- monitoring: memo.watched lists every watched table of the database (as
-- pg_trigger does) and memo.generation counts writes to any table (as
-- pg_stat_all_tables does), also for roles that cannot read it; no view
-- shows a result
CREATE TABLE sr_private (id int);
SELECT memo.watch('sr_private');
SET ROLE memo_sr_reader;
SELECT count(*) AS private_is_listed FROM memo.watched WHERE table_name = 'sr_private'::regclass;
SELECT memo.generation('sr_private') > 0 AS generation_is_readable;
SELECT count(*) FROM sr_private;
RESET ROLE;

-- cache names of other databases: NULL unless the reader has the
-- privileges of pg_read_all_stats
\set home_database :DBNAME
CREATE DATABASE memo_sr_other;
\c memo_sr_other
\set VERBOSITY terse
CREATE EXTENSION pg_memo;
CREATE TABLE sr_elsewhere (id int);
SELECT memo.watch('sr_elsewhere');
SELECT memo.count('sr.other-database label', 'SELECT * FROM sr_elsewhere');
INSERT INTO sr_elsewhere VALUES (1);  -- a recompute reason and a bypass reason for the name
SELECT memo.count('sr.other-database label', 'SELECT * FROM sr_elsewhere');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT memo.count('sr.other-database label', 'SELECT * FROM sr_elsewhere');
COMMIT;
\c :home_database
\set VERBOSITY terse
CREATE VIEW sr_other_reasons AS  -- its functions run as the reading role
  SELECT cache_name, reason FROM memo.recompute_reasons() UNION ALL SELECT cache_name, reason FROM memo.bypass_reasons();
GRANT SELECT ON sr_other_reasons TO PUBLIC;
SET ROLE memo_sr_reader;
SELECT count(*) FILTER (WHERE cache_name = 'sr.other-database label') AS other_name_seen,
       count(*) FILTER (WHERE datname = 'memo_sr_other' AND cache_name IS NULL) AS other_name_hidden,
       count(*) FILTER (WHERE cache_name = 'sr.roles') AS own_name_seen
  FROM memo.stats;
-- the same names in memo.recompute_reasons() and memo.bypass_reasons()
SELECT count(*) FILTER (WHERE cache_name = 'sr.other-database label') AS other_name_seen,
       count(*) FILTER (WHERE cache_name IS NULL AND reason IN ('writes', 'transaction_snapshot')) AS other_name_hidden
  FROM sr_other_reasons;
SET ROLE memo_sr_monitor;
SELECT count(*) AS monitor_sees_other_name FROM memo.stats WHERE cache_name = 'sr.other-database label';
SELECT count(*) AS monitor_sees_other_reasons FROM sr_other_reasons WHERE cache_name = 'sr.other-database label';
RESET ROLE;
SELECT count(*) AS superuser_sees_other_name FROM memo.stats WHERE cache_name = 'sr.other-database label';
DROP VIEW sr_other_reasons;
DROP DATABASE memo_sr_other;

-- cache poisoning through settings: a session setting that changes what a
-- parameter or an immutable function means is part of the key. Each
-- setting: computed, computed again under the other value (not a hit, a
-- different result), and a hit once the setting is back.
SELECT * FROM memo.list('sr.array_nulls', 'SELECT ($1::text[])[2] IS NULL AS second_is_null',
                        '{"{x,NULL}"}') AS t(b bool);
SET array_nulls = off;
SELECT * FROM memo.list('sr.array_nulls', 'SELECT ($1::text[])[2] IS NULL AS second_is_null',
                        '{"{x,NULL}"}') AS t(b bool);
RESET array_nulls;
SELECT * FROM memo.list('sr.array_nulls', 'SELECT ($1::text[])[2] IS NULL AS second_is_null',
                        '{"{x,NULL}"}') AS t(b bool);

SET TimeZone = 'UTC';
SELECT * FROM memo.list('sr.abbreviations', 'SELECT $1::timestamptz AS t',
                        '{"2024-01-01 12:00 IST"}') AS t(t timestamptz);
SET timezone_abbreviations = 'India';
SELECT * FROM memo.list('sr.abbreviations', 'SELECT $1::timestamptz AS t',
                        '{"2024-01-01 12:00 IST"}') AS t(t timestamptz);
RESET timezone_abbreviations;
SELECT * FROM memo.list('sr.abbreviations', 'SELECT $1::timestamptz AS t',
                        '{"2024-01-01 12:00 IST"}') AS t(t timestamptz);
RESET TimeZone;

SELECT * FROM memo.list('sr.quote', 'SELECT quote_ident($1) AS q', '{abc}') AS t(q text);
SET quote_all_identifiers = on;
SELECT * FROM memo.list('sr.quote', 'SELECT quote_ident($1) AS q', '{abc}') AS t(q text);
RESET quote_all_identifiers;
SELECT * FROM memo.list('sr.quote', 'SELECT quote_ident($1) AS q', '{abc}') AS t(q text);

SELECT * FROM memo.list('sr.xmlbinary', 'SELECT xmlelement(name a, $1::bytea)::text AS x', '{"\\x01ff"}') AS t(x text);
SET xmlbinary = hex;
SELECT * FROM memo.list('sr.xmlbinary', 'SELECT xmlelement(name a, $1::bytea)::text AS x', '{"\\x01ff"}') AS t(x text);
RESET xmlbinary;
SELECT * FROM memo.list('sr.xmlbinary', 'SELECT xmlelement(name a, $1::bytea)::text AS x', '{"\\x01ff"}') AS t(x text);

SELECT memo.count('sr.xmloption', 'SELECT $1::xml', '{<a/><b/>}');
SET xmloption = document;
SELECT memo.count('sr.xmloption', 'SELECT $1::xml', '{<a/><b/>}');
RESET xmloption;
SELECT memo.count('sr.xmloption', 'SELECT $1::xml', '{<a/><b/>}');

CREATE TABLE sr_gin (a int[]);
INSERT INTO sr_gin SELECT ARRAY[1, g] FROM generate_series(1, 2000) g;
CREATE INDEX ON sr_gin USING gin (a);
ANALYZE sr_gin;
SELECT memo.watch('sr_gin');
SET enable_seqscan = off;
SELECT memo.count('sr.gin', 'SELECT * FROM sr_gin WHERE a @> ARRAY[1]');
SET gin_fuzzy_search_limit = 10;
SELECT memo.count('sr.gin', 'SELECT * FROM sr_gin WHERE a @> ARRAY[1]') < 2000 AS sampled;
RESET gin_fuzzy_search_limit;
SELECT memo.count('sr.gin', 'SELECT * FROM sr_gin WHERE a @> ARRAY[1]');
RESET enable_seqscan;

SELECT memo.count('sr.lc_monetary', 'SELECT $1::money', '{1.50}');
SET lc_monetary = 'POSIX';
SELECT memo.count('sr.lc_monetary', 'SELECT $1::money', '{1.50}');
RESET lc_monetary;
SELECT memo.count('sr.lc_monetary', 'SELECT $1::money', '{1.50}');

SELECT cache_name, hits, misses FROM memo.stats
 WHERE datname = current_database() AND cache_name IN ('sr.array_nulls', 'sr.abbreviations', 'sr.quote',
       'sr.xmlbinary', 'sr.xmloption', 'sr.gin', 'sr.lc_monetary')
 ORDER BY cache_name;

-- filling the cache: any role that can run a query can fill the arena, but
-- never past pg_memo.cache_size (entries are evicted), and only a superuser
-- can raise the size of a result that may be stored
SELECT evictions AS evictions_before FROM memo.info \gset
SET ROLE memo_sr_reader;
SET pg_memo.max_result_size = '1GB';
SELECT count(*) AS filled FROM generate_series(1, 80) g,
       LATERAL memo.list('sr.fill', 'SELECT repeat(''x'', 200000) || $1 AS big', ARRAY[g::text]) AS t(big text);
RESET ROLE;
-- (the entries' own bytes, counted apart from the arena's used_bytes)
SELECT (SELECT sum(bytes) FROM memo.stats) <= arena_bytes AS within_arena,
       evictions > :evictions_before AS evicted FROM memo.info;

DROP TABLE sr_items, sr_parts, sr_trigger, sr_private, sr_gin;
DROP ROLE memo_sr_owner, memo_sr_member, memo_sr_noinherit, memo_sr_writer, memo_sr_reader, memo_sr_monitor;
