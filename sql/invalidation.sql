-- Writes invalidate at commit: every kind of write, and only committed ones.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
CREATE TABLE acct (id int PRIMARY KEY, owner text NOT NULL, balance int NOT NULL);
INSERT INTO acct SELECT g, 'o' || (g % 4), 10 FROM generate_series(1, 20) g;
SELECT memo.watch('acct');
CREATE FUNCTION total() RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('acct.total', 'SELECT * FROM acct') $$;
CREATE FUNCTION sum_balance() RETURNS bigint LANGUAGE sql
  AS $$ SELECT s FROM memo.list('acct.sum', 'SELECT sum(balance)::bigint FROM acct') AS t(s bigint) $$;

SELECT total(), sum_balance();
SELECT total(), sum_balance();
SELECT hits FROM counters('acct.total');

-- 1. the very next statement after a commit sees the write
INSERT INTO acct VALUES (21, 'o1', 10);
SELECT total();
UPDATE acct SET balance = balance + 1 WHERE id = 1;
SELECT sum_balance();
DELETE FROM acct WHERE id = 21;
SELECT total(), sum_balance();
SELECT invalidations > 0 AS invalidated FROM counters('acct.total');

-- 2. a writing transaction sees its own writes and stores nothing;
--    a rollback leaves the entry valid
SELECT total();
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
BEGIN;
INSERT INTO acct VALUES (22, 'o2', 10);
SELECT total();  -- own write: 21
SELECT total();
ROLLBACK;
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');
SELECT hits AS hits_before FROM counters('acct.total') \gset
SELECT total();  -- 20, and still a hit
SELECT hits - :hits_before AS new_hits FROM counters('acct.total');

-- savepoints: a rolled-back write still bypasses (safe over-invalidation)
SELECT warm('acct.total', 'SELECT total()');
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
BEGIN;
SAVEPOINT s;
INSERT INTO acct VALUES (23, 'o3', 10);
ROLLBACK TO s;
SELECT total();
COMMIT;
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');
SELECT total();
BEGIN;
SAVEPOINT s;
INSERT INTO acct VALUES (23, 'o3', 10);
RELEASE s;
COMMIT;
SELECT total();

-- a memo call inside the writing statement never stores its own rows
SELECT warm('acct.total', 'SELECT total()');
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
INSERT INTO acct SELECT 24, 'o' || total(), 10;
SELECT owner FROM acct WHERE id = 24;
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');
SELECT total();

-- 4. REPEATABLE READ and SERIALIZABLE bypass
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT total();
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT total();
COMMIT;
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');

-- 7. every kind of write invalidates: each starts from an entry that was
-- just a hit, so the write is the only thing that can change the result
SELECT warm('acct.total', 'SELECT total()');
TRUNCATE acct;
SELECT total();
SELECT warm('acct.total', 'SELECT total()');
COPY acct FROM stdin;
1	o1	10
2	o2	10
3	o3	10
\.
SELECT total();
SELECT warm('acct.total', 'SELECT total()');
INSERT INTO acct VALUES (3, 'o3', 10), (4, 'o4', 10) ON CONFLICT (id) DO NOTHING;
SELECT total();
SELECT warm('acct.sum', 'SELECT sum_balance()');
INSERT INTO acct VALUES (4, 'o4', 99) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance;
SELECT sum_balance();
SELECT warm('acct.total', 'SELECT total()'), warm('acct.sum', 'SELECT sum_balance()');
MERGE INTO acct a USING (VALUES (5, 'o5', 1), (1, 'o1', 1)) AS s(id, owner, balance) ON a.id = s.id
  WHEN MATCHED THEN UPDATE SET balance = a.balance + s.balance
  WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.owner, s.balance);
SELECT total(), sum_balance();

-- writes inside functions and inside other tables' triggers
CREATE FUNCTION open_account(i int) RETURNS void LANGUAGE plpgsql
  AS $$ BEGIN INSERT INTO acct VALUES (i, 'f', 10); END $$;
SELECT warm('acct.total', 'SELECT total()');
SELECT open_account(6);
SELECT total();
CREATE TABLE signup (id int);
CREATE FUNCTION signup_opens() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN INSERT INTO acct VALUES (NEW.id, 't', 10); RETURN NEW; END $$;
CREATE TRIGGER opens AFTER INSERT ON signup FOR EACH ROW EXECUTE FUNCTION signup_opens();
SELECT warm('acct.total', 'SELECT total()');
INSERT INTO signup VALUES (7);
SELECT total();

-- foreign-key cascades
CREATE TABLE txn (id int PRIMARY KEY, acct_id int REFERENCES acct ON DELETE CASCADE);
SELECT memo.watch('txn');
INSERT INTO txn VALUES (1, 1), (2, 1), (3, 2);
SELECT warm('txn.count', $$SELECT memo.count('txn.count', 'SELECT * FROM txn')$$);
DELETE FROM acct WHERE id = 1;
SELECT memo.count('txn.count', 'SELECT * FROM txn');

-- session_replication_role = replica: the trigger fires ALWAYS, and memo
-- calls in replica mode (logical replication apply) bypass the cache
SELECT warm('acct.total', 'SELECT total()');
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
SET session_replication_role = replica;
INSERT INTO acct VALUES (8, 'r', 10);
SELECT total();
RESET session_replication_role;
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');
SELECT total();

-- partitions: a write straight into a partition invalidates the parent's entries
CREATE TABLE events (id int, region text) PARTITION BY LIST (region);
CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu');
CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us');
SELECT memo.watch('events');
SELECT table_name, triggers_enabled FROM memo.watched WHERE table_name::text LIKE 'events%' ORDER BY 1;
INSERT INTO events VALUES (1, 'eu'), (2, 'us');
SELECT memo.count('events', 'SELECT * FROM events');
INSERT INTO events_eu VALUES (3, 'eu');
SELECT memo.count('events', 'SELECT * FROM events');
UPDATE events SET region = 'us' WHERE id = 1;
SELECT memo.count('events', 'SELECT * FROM events WHERE region = $1', '{us}');
DELETE FROM events_us WHERE id = 1;
SELECT memo.count('events', 'SELECT * FROM events WHERE region = $1', '{us}');
-- a partition read directly is invalidated by writes through its parent
SELECT memo.count('events.eu', 'SELECT * FROM events_eu');
INSERT INTO events VALUES (4, 'eu');
SELECT memo.count('events.eu', 'SELECT * FROM events_eu');
-- a partition created after watching is refused until it is watched too
CREATE TABLE events_ap PARTITION OF events FOR VALUES IN ('ap');
SELECT memo.count('events', 'SELECT * FROM events');
SELECT memo.watch('events');
SELECT memo.count('events', 'SELECT * FROM events');

-- inheritance children count as dependencies too
CREATE TABLE animal (name text);
CREATE TABLE dog () INHERITS (animal);
SELECT memo.watch('animal');
SELECT memo.count('animals', 'SELECT * FROM animal');
INSERT INTO dog VALUES ('rex');
SELECT memo.count('animals', 'SELECT * FROM animal');
SELECT memo.count('animals', 'SELECT * FROM ONLY animal');
-- read with ONLY and nothing else reads it: stored at the first call, a
-- hit at the second (issue 45)
SELECT memo.count('animals.only', 'SELECT name FROM ONLY animal');
SELECT memo.count('animals.only', 'SELECT name FROM ONLY animal');
SELECT hits, misses, bypasses FROM memo.stats WHERE cache_name = 'animals.only';
-- a child read directly is invalidated by writes through its parent
SELECT memo.count('dogs', 'SELECT * FROM dog');
DELETE FROM animal;
SELECT memo.count('dogs', 'SELECT * FROM dog');

-- two-phase commit: a transaction that wrote a watched table prepares; the
-- entry stays current until COMMIT PREPARED, which invalidates it
SELECT total();
BEGIN;
INSERT INTO acct VALUES (9, 'p', 10);
PREPARE TRANSACTION 'memo_2pc';
SELECT count(*) FROM pg_prepared_xacts;
SELECT total() AS memo, (SELECT count(*) FROM acct) AS truth;
COMMIT PREPARED 'memo_2pc';
SELECT total() AS memo, (SELECT count(*) FROM acct) AS truth;
-- ROLLBACK PREPARED leaves it current
BEGIN;
DELETE FROM acct WHERE id = 9;
PREPARE TRANSACTION 'memo_2pc_undone';
ROLLBACK PREPARED 'memo_2pc_undone';
SELECT total() AS memo, (SELECT count(*) FROM acct) AS truth;
-- DDL prepares too: a relation created, a watched table's trigger disabled
-- (and enabled again), a table unwatched and watched again
BEGIN;
CREATE TABLE unrelated (id int);
PREPARE TRANSACTION 'memo_2pc_ddl';
COMMIT PREPARED 'memo_2pc_ddl';
BEGIN;
ALTER TABLE acct DISABLE TRIGGER pg_memo_invalidate;
PREPARE TRANSACTION 'memo_2pc_disable';
ROLLBACK PREPARED 'memo_2pc_disable';
BEGIN;
SELECT memo.unwatch('txn');
PREPARE TRANSACTION 'memo_2pc_unwatch';
COMMIT PREPARED 'memo_2pc_unwatch';
SELECT memo.watch('txn');
BEGIN;
CREATE INDEX unrelated_idx ON signup (id);
PREPARE TRANSACTION 'memo_2pc_index';
COMMIT PREPARED 'memo_2pc_index';
CREATE TABLE unrelated_drop (id int);
BEGIN;
DROP TABLE unrelated_drop;
PREPARE TRANSACTION 'memo_2pc_drop';
COMMIT PREPARED 'memo_2pc_drop';
-- a prepared transaction that wrote nothing watched is fine
CREATE TABLE unwatched_log (id int);
BEGIN;
INSERT INTO unwatched_log VALUES (1);
PREPARE TRANSACTION 'memo_2pc_ok';
COMMIT PREPARED 'memo_2pc_ok';
SELECT count(*) FROM unwatched_log;
SELECT count(*) FROM pg_prepared_xacts;

-- a disabled trigger stops caching (results stay correct) and shows in memo.watched
ALTER TABLE acct DISABLE TRIGGER pg_memo_invalidate;
SELECT table_name, triggers_enabled, trigger_mode FROM memo.watched WHERE table_name = 'acct'::regclass;
SELECT bypasses AS bypasses_before FROM counters('acct.total') \gset
SELECT total();
INSERT INTO acct VALUES (10, 'd', 10);
SELECT total();
SELECT bypasses - :bypasses_before AS bypasses FROM counters('acct.total');
SELECT memo.watch('acct');  -- re-watching re-enables
SELECT triggers_enabled FROM memo.watched WHERE table_name = 'acct'::regclass;
SELECT total();
SELECT total();

-- memo.invalidate invalidates a table's entries at once
SELECT invalidations AS inv_before FROM counters('acct.total') \gset
SELECT memo.invalidate('acct');
SELECT total();
SELECT invalidations - :inv_before AS invalidated FROM counters('acct.total');

-- unwatch: entries die with the trigger, and the table is refused again
SELECT memo.unwatch('animal');
SELECT memo.count('animals', 'SELECT * FROM animal');
SELECT count(*) FROM memo.watched WHERE table_name::text IN ('animal', 'dog');
