-- memo.entries, one row per cached entry, and memo.reset(cache_name,
-- database), which removes one cache name's entries (issue 32).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
\set VERBOSITY terse
\set main :DBNAME
SELECT memo.reset() >= 0 AS emptied;  -- what other suites left
SELECT clock_timestamp() AS started \gset

CREATE ROLE memo_ent_owner;
CREATE ROLE memo_ent_other;
CREATE ROLE memo_ent_stats IN ROLE pg_read_all_stats;
CREATE TABLE ent_items (id int PRIMARY KEY, team int NOT NULL);
INSERT INTO ent_items SELECT g, g % 3 FROM generate_series(1, 10) g;
SELECT memo.watch('ent_items');
CREATE TABLE ent_kept (id int PRIMARY KEY, v int);
INSERT INTO ent_kept SELECT g, g FROM generate_series(1, 4) g;
SELECT memo.watch('ent_kept', true);
GRANT SELECT ON ent_items, ent_kept TO memo_ent_owner, memo_ent_other;
SELECT memo.cache_statement('SELECT count(*) FROM ent_items WHERE team = 2', cache_name => 'ent.statement')
       IS NOT NULL AS registered;

-- The owner's entries: a count, a list, one kept by deltas, a remembered
-- error and a registered statement.
SET ROLE memo_ent_owner;
SELECT memo.count('ent.count', 'SELECT * FROM ent_items WHERE team = $1', ARRAY['1']);
SELECT count(*) FROM memo.list('ent.list', 'SELECT id FROM ent_items WHERE id <= $1::int', ARRAY['3']) AS t(id int);
SELECT memo.count('ent.kept', 'SELECT * FROM ent_kept');
SET pg_memo.error_ttl = '1h';
SELECT try($$SELECT memo.count('ent.error', 'SELECT * FROM ent_items WHERE 1 / (id - id) = 1')$$);
RESET pg_memo.error_ttl;
SELECT count(*) FROM ent_items WHERE team = 2;
SELECT count(*) FROM ent_items WHERE team = 2;  -- a hit: the entry is there

-- The owner sees its query, parameters and relations.
SELECT cache_name, kind, query, params, rows, state, deltas, relations, error,
       datname = current_database() AS here, userid = 'memo_ent_owner'::regrole AS owners,
       bytes > length(query) AS sized, created BETWEEN :'started' AND clock_timestamp() AS created_now
  FROM memo.entries WHERE cache_name LIKE 'ent.%' ORDER BY cache_name;

-- Another role sees the names (its own database's) and the sizes, not
-- the query, the parameters, the relations, the rows or the error:
-- parameters can be secrets, and a count's rows are its answer.
SET ROLE memo_ent_other;
SELECT cache_name, kind, query, params, rows, state, relations, error, bytes > 0 AS sized,
       userid = 'memo_ent_owner'::regrole AS owners
  FROM memo.entries WHERE cache_name LIKE 'ent.%' ORDER BY cache_name;
-- Its own entry it sees whole.
SELECT memo.count('ent.other', 'SELECT * FROM ent_items WHERE team = $1', ARRAY['2']);
SELECT cache_name, query, params, rows, relations FROM memo.entries WHERE cache_name = 'ent.other';
-- Members of pg_read_all_stats see everyone's queries and parameters, not
-- their rows or errors: a count's rows are its answer.
SET ROLE memo_ent_stats;
SELECT cache_name, query IS NOT NULL AS query_shown, params, relations IS NOT NULL AS relations_shown, rows, error
  FROM memo.entries WHERE cache_name LIKE 'ent.%' ORDER BY cache_name;
RESET ROLE;

-- A write makes its table's entries stale; one kept by deltas is kept,
-- until a call carries it forward.
UPDATE ent_items SET team = team WHERE id = 1;
UPDATE ent_kept SET v = v + 1 WHERE id = 1;
SELECT cache_name, state, deltas FROM memo.entries WHERE cache_name LIKE 'ent.%' ORDER BY cache_name;
SET ROLE memo_ent_owner;
SELECT memo.count('ent.kept', 'SELECT * FROM ent_kept');
SELECT memo.count('ent.count', 'SELECT * FROM ent_items WHERE team = $1', ARRAY['1']);
RESET ROLE;
SELECT cache_name, state FROM memo.entries WHERE cache_name IN ('ent.kept', 'ent.count') ORDER BY cache_name;

-- The same cache name in another database: its entry shows there, with
-- its name hidden from roles that do not read all statistics.
CREATE DATABASE memo_entries_other;
\c memo_entries_other
SET client_min_messages = warning;
CREATE EXTENSION pg_memo;
RESET client_min_messages;
SELECT memo.count('ent.count', 'SELECT 1');
SELECT memo.count('ent.list', 'SELECT 2');
\c :main
\set VERBOSITY terse
SELECT datname, cache_name, query FROM memo.entries
 WHERE datname = 'memo_entries_other' ORDER BY cache_name;
SET ROLE memo_ent_other;
SELECT datname, cache_name, query FROM memo.entries
 WHERE datname = 'memo_entries_other' ORDER BY cache_name;
RESET ROLE;

-- memo.reset(cache_name) removes that name's entries in this database
-- only, and says how many.
SELECT memo.reset('ent.count');
SELECT datname = current_database() AS here, cache_name FROM memo.entries
 WHERE cache_name LIKE 'ent.%' ORDER BY here, cache_name;
SELECT memo.reset('ent.count');
-- With a database: that database's.
SELECT memo.reset('ent.count', 'memo_entries_other');
SELECT datname = current_database() AS here, cache_name FROM memo.entries
 WHERE cache_name LIKE 'ent.%' ORDER BY here, cache_name;
SELECT entries FROM memo.stats WHERE datname = current_database() AND cache_name = 'ent.count';
SELECT try($$SELECT memo.reset('ent.list', 'memo_no_such_database')$$);
SELECT try($$SELECT memo.reset(NULL)$$);
SELECT try($$SELECT memo.reset('ent.list', NULL)$$);

-- Privileges: anyone reads the view; memo.reset(cache_name) is for those
-- granted it, as memo.reset().
SET ROLE memo_ent_other;
SELECT count(*) > 0 AS sees_entries FROM memo.entries;
SELECT try($$SELECT memo.reset('ent.list')$$);
SELECT try($$SELECT memo.reset('ent.list', current_database())$$);
RESET ROLE;
SELECT has_function_privilege('public', 'memo.reset(text, name)', 'EXECUTE') AS public_may_reset,
       has_table_privilege('public', 'memo.entries', 'SELECT') AS public_may_read;
GRANT EXECUTE ON FUNCTION memo.reset(text, name) TO memo_ent_other;
SET ROLE memo_ent_other;
SELECT memo.reset('ent.list');
RESET ROLE;
SELECT cache_name FROM memo.entries WHERE datname = current_database() AND cache_name LIKE 'ent.%'
 ORDER BY cache_name;

-- Hits on an entry: estimated (one in 16 counted), with the last one's
-- second; an entry not yet hit has neither. As the owner, once more.
SET ROLE memo_ent_owner;
SELECT memo.count('hot.entry', 'SELECT * FROM ent_items WHERE team = $1', ARRAY['0']);
SELECT hits, last_hit IS NULL AS never_hit FROM memo.entries WHERE cache_name = 'hot.entry';
SELECT count(memo.count('hot.entry', 'SELECT * FROM ent_items WHERE team = $1', ARRAY['0']))
  FROM generate_series(1, 800);
SELECT hits > 0 AND hits % 16 = 0 AS estimated, last_hit BETWEEN :'started'::timestamptz - interval '1 second' AND clock_timestamp() AS last_hit_now,
       role = 'memo_ent_owner' AS role_named
  FROM memo.entries WHERE cache_name = 'hot.entry';
RESET ROLE;

-- Clean up.
SELECT memo.uncache_statement('SELECT count(*) FROM ent_items WHERE team = 2');
DROP DATABASE memo_entries_other;
DROP TABLE ent_items, ent_kept;
REVOKE EXECUTE ON FUNCTION memo.reset(text, name) FROM memo_ent_other;
DROP ROLE memo_ent_owner, memo_ent_other, memo_ent_stats;
