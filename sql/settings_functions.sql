-- STABLE functions whose results depend only on their arguments and on
-- settings the key holds (TimeZone, DateStyle, IntervalStyle, lc_monetary)
-- are cacheable (issue 32): each setting's value is its own entry, equal
-- to the direct query. What stays refused says why.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

CREATE TABLE sf_events (id int PRIMARY KEY, at timestamptz, price money);
INSERT INTO sf_events SELECT g, timestamptz '2026-03-28 12:00+00' + g * interval '1 hour', g * 1.25
  FROM generate_series(1, 72) g;
SELECT memo.watch('sf_events');

-- 1. Europe/Berlin moves to summer time on 2026-03-29: that day has 23
-- hours there, 24 in UTC; one key per zone, each the direct answer
SET timezone = 'Europe/Berlin';
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE date_trunc(''day'', at) = $1::timestamptz', '{2026-03-29}') AS cached,
       (SELECT count(*) FROM sf_events WHERE date_trunc('day', at) = '2026-03-29'::timestamptz) AS direct;
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE at + interval ''1 day'' >= $1 AND extract(hour FROM at) = 12',
                  ARRAY[timestamptz '2026-03-30 00:00+00']) AS cached,
       (SELECT count(*) FROM sf_events WHERE at + interval '1 day' >= '2026-03-30 00:00+00'
           AND extract(hour FROM at) = 12) AS direct;
SET timezone = 'UTC';
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE date_trunc(''day'', at) = $1::timestamptz', '{2026-03-29}') AS cached,
       (SELECT count(*) FROM sf_events WHERE date_trunc('day', at) = '2026-03-29'::timestamptz) AS direct;
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE date_trunc(''day'', at) = $1::timestamptz', '{2026-03-29}') AS again;
SELECT calls, hits, misses, computations FROM counters('sf');
-- a timestamptz column compared with a date or a timestamp: the day
-- begins at the zone's midnight
SET timezone = 'Europe/Berlin';
SELECT memo.count('sf.day', 'SELECT * FROM sf_events WHERE at >= $1::date AND at < $2::timestamp',
                  '{2026-03-29,2026-03-30 00:00}') AS cached,
       (SELECT count(*) FROM sf_events WHERE at >= '2026-03-29'::date AND at < '2026-03-30 00:00'::timestamp) AS direct;
SET timezone = 'UTC';
SELECT memo.count('sf.day', 'SELECT * FROM sf_events WHERE at >= $1::date AND at < $2::timestamp',
                  '{2026-03-29,2026-03-30 00:00}') AS cached,
       (SELECT count(*) FROM sf_events WHERE at >= '2026-03-29'::date AND at < '2026-03-30 00:00'::timestamp) AS direct;
SELECT memo.count('sf.day', 'SELECT * FROM sf_events WHERE at >= $1::date AND at < $2::timestamp',
                  '{2026-03-29,2026-03-30 00:00}') AS again;
SELECT calls, hits, misses, computations FROM counters('sf.day');

-- 2. output functions under DateStyle and IntervalStyle, money under lc_monetary
SET datestyle = 'German';
SET intervalstyle = 'sql_standard';
SELECT * FROM memo.list('sf.text', 'SELECT at::text, at::date::text, (at - $1::timestamptz)::text, price::text
                                      FROM sf_events WHERE id <= 2 ORDER BY id', '{2026-03-28 12:00+00}')
  AS t(at text, day text, since text, price text);
RESET datestyle;
RESET intervalstyle;
SELECT * FROM memo.list('sf.text', 'SELECT at::text, at::date::text, (at - $1::timestamptz)::text, price::text
                                      FROM sf_events WHERE id <= 2 ORDER BY id', '{2026-03-28 12:00+00}')
  AS t(at text, day text, since text, price text);

-- 3. still refused, each with the right hint
\set VERBOSITY default
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE at > $1::text::timestamptz', '{now}');
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE at::date = to_date($1, ''DD TMMonth YYYY'')', '{29 March 2026}');
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE at > now()');
SELECT memo.count('sf', 'SELECT * FROM sf_events WHERE age(at) > interval ''1 day''');
RESET timezone;
