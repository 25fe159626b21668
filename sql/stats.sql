-- Statistics, size limits and eviction.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
CREATE TABLE blob (id int PRIMARY KEY, body text);
ALTER TABLE blob ALTER COLUMN body SET STORAGE EXTERNAL;  -- no compression: 100 kB stay 100 kB
INSERT INTO blob SELECT g, repeat(md5(g::text), 3200) FROM generate_series(1, 200) g;  -- 100 kB each
SELECT memo.watch('blob');

SELECT memo.reset_stats();
SELECT count(*) FROM memo.stats WHERE calls > 0;

-- results above pg_memo.max_result_size are returned, not stored, and counted
SET pg_memo.max_result_size = '64kB';
-- met first by a registered statement: logged, not sent to its unchanged
-- application, and the memo call below is still warned (once a session
-- and level)
SELECT memo.cache_statement('SELECT body FROM blob WHERE id = 3', cache_name => 'blob.statement') IS NOT NULL AS registered;
\o /dev/null
SELECT body FROM blob WHERE id = 3;
\o
SELECT calls, too_large FROM memo.stats WHERE cache_name = 'blob.statement';
SELECT memo.uncache_statement('SELECT body FROM blob WHERE id = 3');
SELECT length(body) FROM memo.list('blob', 'SELECT body FROM blob WHERE id = $1::int', '{1}') AS t(body text);
SELECT length(body) FROM memo.list('blob', 'SELECT body FROM blob WHERE id = $1::int', '{1}') AS t(body text);
SELECT calls, hits, misses, computations, entries FROM counters('blob');
SELECT too_large FROM memo.stats WHERE cache_name = 'blob';
-- a list that outgrows the bound part way goes on to the caller's
-- tuplestore: every row, in order, the payload's first ones included
SELECT count(*), sum(id), min(id), max(id), bool_and(length(b) = 10000) AS whole
  FROM memo.list('blob.many', 'SELECT id, left(body, 10000) AS b FROM blob ORDER BY id', '{}') AS t(id int, b text);
SELECT string_agg(id::text, ',') FROM (
  SELECT id FROM memo.list('blob.many', 'SELECT id, left(body, 10000) AS b FROM blob ORDER BY id', '{}') AS t(id int, b text)
  LIMIT 8) s;
-- converted to the caller's row type (which has a dropped column)
CREATE TABLE blob_row (id int, gone int, b text);
ALTER TABLE blob_row DROP COLUMN gone;
SELECT count(*), sum(id) FROM memo.list_as(NULL::blob_row, 'blob.rows', 'SELECT id, left(body, 10000) FROM blob ORDER BY id', '{}');
-- in a cursor that scrolls back over it
BEGIN;
DECLARE c SCROLL CURSOR FOR
  SELECT id FROM memo.list('blob.many', 'SELECT id, left(body, 10000) AS b FROM blob ORDER BY id', '{}') AS t(id int, b text);
FETCH LAST c;
FETCH ABSOLUTE 7 c;
COMMIT;
-- a mismatched column type is the same error for rows that spilled
SELECT count(*) FROM memo.list('blob.many', 'SELECT id, left(body, 10000) AS b FROM blob ORDER BY id', '{}') AS t(id bigint, b text);
SELECT calls, too_large, entries FROM memo.stats WHERE cache_name = 'blob.many';
DROP TABLE blob_row;
RESET pg_memo.max_result_size;

-- a computation that fails, or is refused, counts in failures: not in
-- computations, nor in total_compute_ms and mean_compute_ms
SELECT try($$SELECT memo.count('fails', 'SELECT * FROM blob WHERE 1 / (id - id) = 1')$$);
SELECT try($$SELECT memo.count('fails', 'SELECT * FROM blob FOR UPDATE')$$);
SELECT calls, computations, failures, total_compute_ms, mean_compute_ms FROM memo.stats WHERE cache_name = 'fails';
SELECT memo.count('fails', 'SELECT * FROM blob WHERE id <= 2');
SELECT calls, computations, failures, mean_compute_ms = total_compute_ms AS mean_of_one
  FROM memo.stats WHERE cache_name = 'fails';

-- an arena of 8MB offered 20MB: evictions, and memory stays inside the arena
SELECT sum(length(body)) FROM generate_series(1, 200) g,
  LATERAL memo.list('blob', 'SELECT body FROM blob WHERE id = $1::int', ARRAY[g::text]) AS t(body text);
SELECT evictions > 0 AS evicted, used_bytes <= arena_bytes AS bounded, entries < 200 AS some_left
  FROM memo.info;
SELECT evictions > 0 AS evicted FROM memo.stats WHERE cache_name = 'blob';
-- each eviction is a reason an entry is computed again
SELECT recomputations = evictions AS evictions_are_reasons
  FROM memo.stats JOIN memo.recompute_reasons() USING (dbid, cache_name)
 WHERE cache_name = 'blob' AND reason = 'evicted';
-- the newest entries survive eviction
SELECT hits AS hits_before FROM counters('blob') \gset
SELECT length(body) FROM memo.list('blob', 'SELECT body FROM blob WHERE id = $1::int', '{200}') AS t(body text);
SELECT hits - :hits_before AS new_hits FROM counters('blob');

-- memo.stats columns: one row per (database, cache name)
-- (every call of 'blob' so far ended as a hit, a miss or a bypass: none
-- failed; its computations took time, and the mean is their mean)
SELECT datname = current_database() AS this_db, cache_name, calls = hits + misses + bypasses AS accounted,
       total_compute_ms > 0 AS timed, abs(mean_compute_ms * computations - total_compute_ms) < 0.01 AS mean,
       stats_reset <= now() AS reset_time
  FROM memo.stats WHERE cache_name = 'blob';

-- memo.info counts the commits that bumped counters, and the counters:
-- one write to a watched table bumps its rows' counter (a rollback none)
SELECT writing_commits AS commits_before, counters_bumped AS bumps_before FROM memo.info \gset
BEGIN;
UPDATE blob SET body = body WHERE id = 1;
ROLLBACK;
UPDATE blob SET body = body WHERE id = 1;
SELECT writing_commits - :commits_before AS commits, counters_bumped - :bumps_before AS bumps FROM memo.info;

-- a result within pg_memo.max_result_size but above half the arena: not
-- stored either, and the warning names the arena (in a new session: once
-- per session)
\c
SET pg_memo.max_result_size = '6MB';
SELECT count(*) FROM memo.list('blob.half', 'SELECT body FROM blob WHERE id <= 50', '{}') AS t(body text);
SELECT too_large, entries FROM memo.stats WHERE cache_name = 'blob.half';
RESET pg_memo.max_result_size;

-- reset_stats zeroes counters but keeps the gauges
SELECT memo.reset_stats();
SELECT calls, hits, entries > 0 AS still_cached FROM counters('blob');

-- reset drops every entry and gives every byte back
SELECT memo.reset() > 0 AS dropped;
SELECT entries, used_bytes < 64 * 1024 AS nearly_empty FROM memo.info;
SELECT entries, bytes FROM memo.stats WHERE cache_name = 'blob';
DROP TABLE blob;

-- pg_memo.enabled = off: every call computes directly, counted as a bypass,
-- and sees the INSERT; on again, the cache is used: one computation (the
-- INSERT invalidated the entry), then a hit
CREATE TABLE switch (id int);
INSERT INTO switch SELECT generate_series(1, 3);
SELECT memo.watch('switch');
SELECT memo.count('switch', 'SELECT * FROM switch');
SET pg_memo.enabled = off;
INSERT INTO switch VALUES (4);
SELECT memo.count('switch', 'SELECT * FROM switch'), memo.count('switch', 'SELECT * FROM switch');
SELECT calls, hits, computations, bypasses FROM counters('switch');
RESET pg_memo.enabled;
SELECT memo.count('switch', 'SELECT * FROM switch'), memo.count('switch', 'SELECT * FROM switch');
SELECT calls, hits, computations, bypasses FROM counters('switch');
DROP TABLE switch;

-- Why entries were computed again (memo.recompute_reasons): a write to a
-- table the entry reads, or a catalog change (DDL, memo.invalidate); an
-- entry kept by deltas that DDL made stale is not blamed on the delta log.
CREATE TABLE why_t (id int PRIMARY KEY, grp int);
INSERT INTO why_t SELECT g, g % 3 FROM generate_series(1, 9) g;
SELECT memo.watch('why_t');
CREATE TABLE why_d (id int PRIMARY KEY, grp int);
INSERT INTO why_d SELECT g, g % 3 FROM generate_series(1, 9) g;
SELECT memo.watch('why_d', deltas => true);
SELECT memo.count('why.plain', 'SELECT * FROM why_t WHERE grp = $1', '{1}');
SELECT memo.count('why.deltas', 'SELECT * FROM why_d WHERE grp = $1', '{1}');
-- pg_memo.log_reasons says each reason as it happens
SET pg_memo.log_reasons = notice;
INSERT INTO why_t VALUES (10, 1);
SELECT memo.count('why.plain', 'SELECT * FROM why_t WHERE grp = $1', '{1}');
ALTER TABLE why_t ADD COLUMN note text;
ALTER TABLE why_d ADD COLUMN note text;
SELECT memo.count('why.plain', 'SELECT * FROM why_t WHERE grp = $1', '{1}');
SELECT memo.count('why.deltas', 'SELECT * FROM why_d WHERE grp = $1', '{1}');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT memo.count('why.plain', 'SELECT * FROM why_t WHERE grp = $1', '{1}');
COMMIT;
RESET pg_memo.log_reasons;
SELECT cache_name, invalidations, delta_fallbacks, recompute_reasons
  FROM memo.stats WHERE cache_name LIKE 'why.%' ORDER BY cache_name;
SELECT reason, recomputations FROM memo.recompute_reasons()
 WHERE cache_name = 'why.plain' ORDER BY reason;

-- An entry kept by deltas that a write left no record to carry it past
-- (past pg_memo.max_delta_rows), and one whose new rows its WHERE cannot
-- be evaluated over (an error: the direct query's too): computed again,
-- each under its own reason. A remembered error outlived: once.
SELECT memo.count('why.missing', 'SELECT * FROM why_d WHERE grp = $1', '{2}');
SET pg_memo.max_delta_rows = 1;
UPDATE why_d SET grp = grp WHERE id <= 3;
RESET pg_memo.max_delta_rows;
SET pg_memo.log_reasons = notice;
SELECT memo.count('why.missing', 'SELECT * FROM why_d WHERE grp = $1', '{2}');
SELECT memo.count('why.eval', 'SELECT * FROM why_d WHERE 10 / (grp + 1) > 1', '{}');
INSERT INTO why_d VALUES (100, -1);
SELECT try($$SELECT memo.count('why.eval', 'SELECT * FROM why_d WHERE 10 / (grp + 1) > 1', '{}')$$);
SET pg_memo.error_ttl = '1h';
SELECT try($$SELECT memo.count('why.error', 'SELECT * FROM why_d WHERE 10 / (grp - grp) > 1', '{}')$$);
SELECT try($$SELECT memo.count('why.error', 'SELECT * FROM why_d WHERE 10 / (grp - grp) > 1', '{}')$$);
SELECT pg_sleep(0.01);
SET pg_memo.error_ttl = '5ms';  -- a caller's own TTL: the error is older
SELECT try($$SELECT memo.count('why.error', 'SELECT * FROM why_d WHERE 10 / (grp - grp) > 1', '{}')$$);
RESET pg_memo.error_ttl;
RESET pg_memo.log_reasons;
SELECT cache_name, invalidations, delta_fallbacks, error_hits, failures, recompute_reasons
  FROM memo.stats WHERE cache_name IN ('why.missing', 'why.eval', 'why.error') ORDER BY cache_name;
SELECT kind, state FROM memo.entries WHERE cache_name = 'why.error';
