-- Parameters as drivers bind them (memo.params, 1.2) and per-call options.
-- A typed array's values are taken as the text their type reads back the
-- same in any session; the same values make one key whatever the array's
-- type. Drivers are exercised for real in test/t/020.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

CREATE TABLE dp (id int PRIMARY KEY, team int, weight numeric, ratio float8, done boolean, day date,
                 at timestamptz, tag uuid);
INSERT INTO dp SELECT g, g % 4, g / 4.0, g / 10.0, g % 2 = 0, date '2026-01-01' + g,
                      timestamptz '2026-01-01 00:00+00' + g * interval '1 hour',
                      ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid
                 FROM generate_series(1, 20) g;
SELECT memo.watch('dp');

-- 1. one key for the same values: smallint, integer, bigint, numeric,
-- text and an untyped literal
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', ARRAY[1]::smallint[]);
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', ARRAY[1]);
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', ARRAY[1]::bigint[]);
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', ARRAY[1]::numeric[]);
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', ARRAY['1']);
SELECT memo.count('p.key', 'SELECT * FROM dp WHERE team = $1::int', '{1}');
SELECT calls, hits, misses FROM counters('p.key');

-- 2. each type's values read back the same whatever the session's
-- settings: floats at full precision, dates and timestamps in ISO
SET extra_float_digits = -3;
SELECT memo.count('p.types', 'SELECT * FROM dp WHERE ratio = $1', ARRAY[0.3::float8]) AS float8,
       (SELECT count(*) FROM dp WHERE ratio = 0.3::float8) AS direct;
SELECT memo.count('p.types', 'SELECT * FROM dp WHERE ratio::real = $1', ARRAY[0.3::real]) AS real,
       (SELECT count(*) FROM dp WHERE ratio::real = 0.3::real) AS direct;
RESET extra_float_digits;
SET datestyle = 'SQL, DMY';
SELECT memo.count('p.types', 'SELECT * FROM dp WHERE day = $1', ARRAY[date '2026-01-05']) AS date,
       memo.count('p.types', 'SELECT * FROM dp WHERE at < $1', ARRAY[timestamptz '2026-01-01 05:30+00']) AS timestamptz,
       memo.count('p.types', 'SELECT * FROM dp WHERE day::timestamp < $1',
                  ARRAY[timestamp '2026-01-05 05:30']) AS timestamp;
RESET datestyle;
SELECT memo.count('p.types', 'SELECT * FROM dp WHERE weight > $1 AND done = $2 AND tag <> $3',
                  ARRAY[2.5]::numeric[]::text[] || ARRAY[true]::text[] || ARRAY[gen_random_uuid()::text]) AS mixed_as_text;
SELECT memo.count('p.types', 'SELECT * FROM dp WHERE done = $1', ARRAY[true]) AS boolean,
       memo.count('p.types', 'SELECT * FROM dp WHERE tag = $1',
                  ARRAY['00000000-0000-0000-0000-000000000007'::uuid]) AS uuid,
       memo.count('p.types', 'SELECT * FROM dp WHERE team = $1', ARRAY[NULL::int]) AS null_value;
-- what the parameters become
SELECT ARRAY[1, NULL]::memo.params AS ints, ARRAY[1.5e300::float8, 0.1]::memo.params AS floats,
       ARRAY[true, false]::memo.params AS booleans, '{a,"b c"}'::memo.params AS literal;

-- 3. lists and list_as take them too
SELECT * FROM memo.list('p.list', 'SELECT id FROM dp WHERE team = $1 ORDER BY id LIMIT $2', ARRAY[2, 3])
  AS t(id int);
SELECT id, team FROM memo.list_as(NULL::dp, 'p.list_as', 'SELECT * FROM dp WHERE id <= $1 ORDER BY id', ARRAY[2]);

-- 4. per-call options: NULL is the session's setting; the session's
-- setting does not reach a call that gives its own
SELECT memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', ARRAY[3]);
INSERT INTO dp (id, team) VALUES (100, 3);
SET pg_memo.max_staleness = '1h';
SELECT memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', ARRAY[3]) AS session_bound,
       memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', ARRAY[3], max_staleness => NULL) AS null_option;
SELECT memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', ARRAY[3], max_staleness => '0') AS option_zero;
RESET pg_memo.max_staleness;
INSERT INTO dp (id, team) VALUES (101, 3);
SELECT memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', '{3}', max_staleness => '1h') AS option_bound,
       memo.count('p.options', 'SELECT * FROM dp WHERE team = $1', '{3}') AS session_off;
SELECT stale_hits FROM memo.stats WHERE cache_name = 'p.options';
SELECT memo.count('p.options', 'SELECT 1', params => '{}', error_ttl => '10s', stale_on_error => '1 min');

-- 5. bad input: a clear error, the SQLSTATE shown
\set VERBOSITY sqlstate
SELECT memo.count('p.bad', 'SELECT 1', '{}', max_staleness => '-1s');
SELECT memo.count('p.bad', 'SELECT 1', '{}', error_ttl => '1 day -1 hour');
SELECT memo.count('p.bad', 'SELECT $1::int', '{1');
SELECT memo.count('p.bad', 'SELECT $1::int', ARRAY[[1], [2]]);
SELECT memo.count('p.bad', 'SELECT 1', max_staleness => '1s');
SELECT memo.count('p.bad', 'SELECT $1::int', ARRAY[1, 2]);
SELECT memo.count('p.bad', 'SELECT 1', NULL::memo.params);
\set VERBOSITY default

-- 6. 1.0's text[] functions stay: a text[] without options resolves to
-- them, an untyped literal to 1.2's
CREATE VIEW dp_calls AS
SELECT memo.count('p.view', 'SELECT $1::text', ARRAY['x']) AS text_array,
       memo.count('p.view', 'SELECT $1::text', '{x}') AS literal,
       memo.count('p.view', 'SELECT $1::text', ARRAY[1]) AS integers,
       memo.count('p.view', 'SELECT 1') AS no_params;
SELECT pg_get_viewdef('dp_calls');
SELECT * FROM dp_calls;
SELECT oid::regprocedure AS memo_functions FROM pg_proc
 WHERE pronamespace = 'memo'::regnamespace AND proname IN ('list', 'list_as', 'count') ORDER BY 1::text;
