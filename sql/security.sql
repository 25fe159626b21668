-- A hit never returns rows the caller could not read by running the query.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
\set VERBOSITY terse
CREATE ROLE memo_alice;
CREATE ROLE memo_bob;
CREATE ROLE memo_readers;
CREATE ROLE memo_carol;
CREATE TABLE secret (id int PRIMARY KEY, owner text, pay int);
INSERT INTO secret SELECT g, 'o' || g, g * 1000 FROM generate_series(1, 5) g;
SELECT memo.watch('secret');
GRANT SELECT ON secret TO memo_readers;
GRANT memo_readers TO memo_alice;
GRANT SELECT (id, owner) ON secret TO memo_bob;

-- alice reads through her group: computed, then a hit
SET ROLE memo_alice;
SELECT memo.count('secret', 'SELECT * FROM secret');
SELECT memo.count('secret', 'SELECT * FROM secret');
RESET ROLE;
SELECT hits, entries FROM counters('secret');

-- bob may not read pay: the same text is refused, never served from alice's entry
SET ROLE memo_bob;
SELECT memo.count('secret', 'SELECT * FROM secret');
SELECT memo.count('secret', 'SELECT id, owner FROM secret');
SELECT * FROM memo.list('secret.pay', 'SELECT sum(pay)::int FROM secret') AS t(s int);
RESET ROLE;

-- privileges are re-checked on every hit: losing the group takes effect at once
SET ROLE memo_alice;
SELECT memo.count('secret', 'SELECT * FROM secret');
RESET ROLE;
REVOKE memo_readers FROM memo_alice;
SET ROLE memo_alice;
SELECT memo.count('secret', 'SELECT * FROM secret');
RESET ROLE;
GRANT memo_readers TO memo_alice;

-- REVOKE on the table itself
SET ROLE memo_bob;
SELECT memo.count('secret.ids', 'SELECT id FROM secret');
RESET ROLE;
REVOKE SELECT (id, owner) ON secret FROM memo_bob;
SET ROLE memo_bob;
SELECT memo.count('secret.ids', 'SELECT id FROM secret');
RESET ROLE;

-- through a view, the view owner's privileges apply to its base table
CREATE VIEW secret_ids AS SELECT id FROM secret;
GRANT SELECT ON secret_ids TO memo_bob;
SET ROLE memo_bob;
SELECT memo.count('secret.view', 'SELECT * FROM secret_ids');
SELECT memo.count('secret.view', 'SELECT * FROM secret_ids');
RESET ROLE;
REVOKE SELECT ON secret_ids FROM memo_bob;
SET ROLE memo_bob;
SELECT memo.count('secret.view', 'SELECT * FROM secret_ids');
RESET ROLE;

-- SECURITY DEFINER wrappers run, and are keyed, as their owner
CREATE FUNCTION secret_total() RETURNS bigint LANGUAGE sql SECURITY DEFINER
  AS $$ SELECT memo.count('secret.definer', 'SELECT * FROM secret') $$;
GRANT EXECUTE ON FUNCTION secret_total() TO memo_bob, memo_carol;
-- bob computes it; carol, another role, is served bob's entry: both calls
-- ran as the owner
SET ROLE memo_bob;
SELECT secret_total();
RESET ROLE;
SET ROLE memo_carol;
SELECT secret_total();
RESET ROLE;
SELECT hits, misses FROM counters('secret.definer');

-- row level security: each role is served the rows its policies let it read
CREATE TABLE tenant_rows (tenant text, v int);
SELECT memo.watch('tenant_rows');
ALTER TABLE tenant_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON tenant_rows USING (tenant = current_user);
GRANT SELECT ON tenant_rows TO memo_bob;
INSERT INTO tenant_rows VALUES ('memo_bob', 1), ('memo_alice', 2);
SET ROLE memo_bob;
SELECT memo.count('tenants', 'SELECT * FROM tenant_rows');
RESET ROLE;
-- the owner bypasses RLS (not forced), so for the owner it is cacheable
SELECT memo.count('tenants', 'SELECT * FROM tenant_rows');

-- a role that bypasses RLS is served all rows; losing BYPASSRLS takes effect
-- at once (the hit finds the policies applying where they did not)
CREATE ROLE memo_auditor BYPASSRLS;
GRANT SELECT ON tenant_rows TO memo_auditor;
SET ROLE memo_auditor;
SELECT memo.count('tenants.audit', 'SELECT * FROM tenant_rows');
SELECT memo.count('tenants.audit', 'SELECT * FROM tenant_rows');
RESET ROLE;
ALTER ROLE memo_auditor NOBYPASSRLS;
SET ROLE memo_auditor;
SELECT memo.count('tenants.audit', 'SELECT * FROM tenant_rows');
RESET ROLE;

-- monitoring views are readable by everyone
SET ROLE memo_bob;
SELECT count(*) > 0 AS sees_stats FROM memo.stats;
SELECT arena_bytes > 0 AS sees_info FROM memo.info;
SELECT count(*) > 0 AS sees_watched FROM memo.watched;
SELECT count(*) AS flights FROM memo.flights;
RESET ROLE;

-- owner-only administration
SET ROLE memo_bob;
SELECT memo.watch('secret');
SELECT memo.unwatch('secret');
SELECT memo.invalidate('secret');
SELECT memo.reset();
SELECT memo.reset_stats();
RESET ROLE;

DROP FUNCTION secret_total();
DROP VIEW secret_ids;
REVOKE SELECT ON tenant_rows FROM memo_auditor;
DROP TABLE secret, tenant_rows;
DROP ROLE memo_alice, memo_bob, memo_carol, memo_readers, memo_auditor;
