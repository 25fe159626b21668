-- Row level security (issue 48): the policies PostgreSQL adds for the
-- caller are analyzed like the statement's own expressions. What they read
-- through settings (current_setting, a SQL helper over it, session_user)
-- joins the key; what they read through subqueries and SQL functions over
-- tables is a dependency; a policy's conjunct on a scope column scopes the
-- entry to its tenant. Every result is compared with the same query run
-- uncached, as the same role with the same settings.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

SET client_min_messages = warning;
DROP ROLE IF EXISTS rs_web;
DROP ROLE IF EXISTS rs_admin;
DROP ROLE IF EXISTS rs_owner;
RESET client_min_messages;
CREATE ROLE rs_web NOLOGIN;
CREATE ROLE rs_admin NOLOGIN;
CREATE ROLE rs_owner NOLOGIN;

-- The memo count, the uncached count, and whether the memo call hit.
CREATE FUNCTION rs_check(cache text, query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  memo_count bigint;
  truth bigint;
  hits_before bigint;
BEGIN
  SELECT coalesce(max(hits), 0) INTO hits_before FROM counters(cache);
  memo_count := memo.count(cache, query);
  EXECUTE 'SELECT count(*) FROM (' || query || ') q' INTO truth;
  RETURN memo_count || CASE WHEN memo_count = truth THEN '' ELSE ' WRONG: uncached ' || truth END ||
         CASE WHEN (SELECT coalesce(max(hits), 0) FROM counters(cache)) > hits_before THEN ' (hit)' ELSE '' END;
END $$;

-- A request's claims, as PostgREST sets them, read by a STABLE SQL helper.
CREATE FUNCTION rs_uid() RETURNS int LANGUAGE sql STABLE
  AS $$ SELECT (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::int $$;

-- One table per policy shape: 40 rows in 4 orgs and 5 owners.
CREATE FUNCTION rs_make(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (id int PRIMARY KEY, org_id int NOT NULL, owner_id int NOT NULL,
                  archived bool NOT NULL, body text)', t);
  EXECUTE format('INSERT INTO %I SELECT g, g %% 4, g %% 5, g %% 10 = 0, ''b'' || g
                  FROM generate_series(1, 40) g', t);
  EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
  EXECUTE format('GRANT SELECT ON %I TO rs_web, rs_admin, rs_owner', t);
  PERFORM memo.watch(t::regclass, deltas => true, scope_columns => '{org_id}');
END $$;
SELECT rs_make(t) FROM unnest(ARRAY['rs_role', 'rs_setting', 'rs_claims', 'rs_member', 'rs_definer',
                                    'rs_restrict', 'rs_forced']) t;

-- 1. By role alone: each role its own entry, through its own policies.
CREATE POLICY web_org1 ON rs_role TO rs_web USING (org_id = 1);
CREATE POLICY admin_all ON rs_role TO rs_admin USING (true);
SET ROLE rs_web;
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
SET ROLE rs_admin;
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
RESET ROLE;
-- a membership brings a role's policies with it, at once
GRANT rs_admin TO rs_web;
SET ROLE rs_web;
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
RESET ROLE;
REVOKE rs_admin FROM rs_web;
SET ROLE rs_web;
SELECT rs_check('rs.role', 'SELECT * FROM rs_role');
RESET ROLE;

-- 2. A setting, as tenancy libraries set it per transaction behind a
-- pooler: each tenant its own entry, never another's.
CREATE POLICY tenant ON rs_setting TO rs_web USING (org_id = current_setting('app.org_id')::int);
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
COMMIT;
-- the setting unset: PostgreSQL's own error, never an entry
SET ROLE rs_web;
SELECT try($$SELECT memo.count('rs.setting', 'SELECT * FROM rs_setting')$$);
RESET ROLE;
-- a write in org 1 leaves org 2's entry a plain hit (the policy's conjunct
-- scopes it), and org 1 sees the new row
INSERT INTO rs_setting VALUES (41, 1, 1, false, 'new');
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
COMMIT;
-- the same through memo.list, row by row
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 3;
SELECT array_agg(id ORDER BY id) AS memo,
       (SELECT array_agg(id ORDER BY id) FROM rs_setting) AS uncached
  FROM memo.list('rs.setting', 'SELECT id FROM rs_setting') AS t(id int);
SET LOCAL app.org_id = 0;
SELECT array_agg(id ORDER BY id) AS memo,
       (SELECT array_agg(id ORDER BY id) FROM rs_setting) AS uncached
  FROM memo.list('rs.setting', 'SELECT id FROM rs_setting') AS t(id int);
COMMIT;

-- 3. JSON claims through a SQL helper (PostgREST's auth.uid()).
CREATE POLICY own ON rs_claims TO rs_web USING (owner_id = rs_uid());
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL request.jwt.claims = '{"sub": "3", "role": "rs_web"}';
SELECT rs_check('rs.claims', 'SELECT * FROM rs_claims');
SELECT rs_check('rs.claims', 'SELECT * FROM rs_claims');
SET LOCAL request.jwt.claims = '{"sub": "4", "role": "rs_web"}';
SELECT rs_check('rs.claims', 'SELECT * FROM rs_claims');
SET LOCAL request.jwt.claims = '';
SELECT rs_check('rs.claims', 'SELECT * FROM rs_claims');
COMMIT;

-- 4. Membership through a subquery: a dependency like any read.
CREATE TABLE rs_members (org_id int, user_id int);
INSERT INTO rs_members VALUES (1, 3), (2, 3), (2, 4);
SELECT memo.watch('rs_members');
GRANT SELECT ON rs_members TO rs_web;
CREATE POLICY member ON rs_member TO rs_web
  USING (EXISTS (SELECT 1 FROM rs_members m WHERE m.org_id = rs_member.org_id AND m.user_id = rs_uid()));
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL request.jwt.claims = '{"sub": "3"}';
SELECT rs_check('rs.member', 'SELECT * FROM rs_member');
SELECT rs_check('rs.member', 'SELECT * FROM rs_member');
SET LOCAL request.jwt.claims = '{"sub": "4"}';
SELECT rs_check('rs.member', 'SELECT * FROM rs_member');
COMMIT;
INSERT INTO rs_members VALUES (3, 4);
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL request.jwt.claims = '{"sub": "4"}';
SELECT rs_check('rs.member', 'SELECT * FROM rs_member');
COMMIT;

-- 5. A SECURITY DEFINER helper reading a table the caller may not read.
CREATE TABLE rs_members_private (org_id int, user_id int);
INSERT INTO rs_members_private VALUES (0, 3), (3, 3);
SELECT memo.watch('rs_members_private');
CREATE FUNCTION rs_my_orgs() RETURNS SETOF int LANGUAGE sql STABLE SECURITY DEFINER
  AS $$ SELECT org_id FROM rs_members_private WHERE user_id = rs_uid() $$;
CREATE POLICY definer ON rs_definer TO rs_web USING (org_id IN (SELECT rs_my_orgs()));
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL request.jwt.claims = '{"sub": "3"}';
SELECT rs_check('rs.definer', 'SELECT * FROM rs_definer');
SELECT rs_check('rs.definer', 'SELECT * FROM rs_definer');
SET LOCAL request.jwt.claims = '{"sub": "4"}';
SELECT rs_check('rs.definer', 'SELECT * FROM rs_definer');
COMMIT;
INSERT INTO rs_members_private VALUES (1, 4);
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL request.jwt.claims = '{"sub": "4"}';
SELECT rs_check('rs.definer', 'SELECT * FROM rs_definer');
COMMIT;

-- 6. Restrictive and permissive together.
CREATE POLICY tenant ON rs_restrict TO rs_web USING (org_id = current_setting('app.org_id')::int);
CREATE POLICY live ON rs_restrict AS RESTRICTIVE TO rs_web USING (NOT archived);
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.restrict', 'SELECT * FROM rs_restrict');
SELECT rs_check('rs.restrict', 'SELECT * FROM rs_restrict');
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.restrict', 'SELECT * FROM rs_restrict');
COMMIT;
-- a policy changed: its next call goes through the new one
ALTER POLICY live ON rs_restrict USING (NOT archived AND id > 20);
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.restrict', 'SELECT * FROM rs_restrict');
COMMIT;

-- 7. Forced for the owner.
ALTER TABLE rs_forced OWNER TO rs_owner;
CREATE POLICY own ON rs_forced TO rs_owner USING (owner_id = rs_uid());
SET ROLE rs_owner;
SET request.jwt.claims = '{"sub": "1"}';
SELECT rs_check('rs.forced', 'SELECT * FROM rs_forced');
RESET ROLE;
ALTER TABLE rs_forced FORCE ROW LEVEL SECURITY;
SET ROLE rs_owner;
SELECT rs_check('rs.forced', 'SELECT * FROM rs_forced');
SELECT rs_check('rs.forced', 'SELECT * FROM rs_forced');
RESET ROLE;
RESET request.jwt.claims;

-- 8. Through views: a security_invoker view reads through the caller's
-- policies; another through its owner's (here rs_admin's, who reads all).
CREATE VIEW rs_setting_invoker WITH (security_invoker) AS SELECT * FROM rs_setting;
CREATE VIEW rs_role_by_admin AS SELECT * FROM rs_role;
ALTER VIEW rs_role_by_admin OWNER TO rs_admin;
GRANT SELECT ON rs_setting_invoker, rs_role_by_admin TO rs_web;
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.views', 'SELECT * FROM rs_setting_invoker');
SELECT rs_check('rs.views', 'SELECT * FROM rs_role_by_admin');
SELECT rs_check('rs.views', 'SELECT * FROM rs_role');
COMMIT;

-- 9. Registered statements: one registration, every tenant its own entry.
SELECT memo.cache_statement('SELECT count(*) FROM rs_setting WHERE NOT archived', cache_name => 'rs.registered')
       IS NOT NULL AS registered;
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 1;
SELECT count(*) FROM rs_setting WHERE NOT archived;
SET LOCAL app.org_id = 2;
SELECT count(*) FROM rs_setting WHERE NOT archived;
SELECT count(*) FROM rs_setting WHERE NOT archived;
SET LOCAL app.org_id = 1;
SELECT count(*) FROM rs_setting WHERE NOT archived;
SET LOCAL pg_memo.enabled = off;
SELECT count(*) FROM rs_setting WHERE NOT archived;
COMMIT;
SELECT calls, hits FROM counters('rs.registered');
SELECT memo.uncache_statement('SELECT count(*) FROM rs_setting WHERE NOT archived') AS unregistered;

-- 10. A view of the cache shows a tenant's keys and rows only to it: the
-- same role with other settings sees the entry, not its query, parameters
-- or rows.
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 1;
SELECT count(*) AS entries, count(query) AS queries_shown, count(rows) AS rows_shown
  FROM memo.entries WHERE cache_name = 'rs.setting' AND kind = 'count';
SET LOCAL app.org_id = 9;
SELECT count(*) AS entries, count(query) AS queries_shown, count(rows) AS rows_shown
  FROM memo.entries WHERE cache_name = 'rs.setting' AND kind = 'count';
COMMIT;

-- 11. row_security = off: PostgreSQL's error, even with an entry stored.
SET ROLE rs_web;
SET app.org_id = 2;
SELECT rs_check('rs.setting', 'SELECT * FROM rs_setting');
SET row_security = off;
SELECT try($$SELECT memo.count('rs.setting', 'SELECT * FROM rs_setting')$$);
RESET row_security;
RESET app.org_id;
RESET ROLE;

-- 12. What cannot be made exact is refused, the policy named.
CREATE TABLE rs_refused (id int, org_id int, note text);
SELECT memo.watch('rs_refused');
ALTER TABLE rs_refused ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON rs_refused TO rs_web;
CREATE POLICY dice ON rs_refused TO rs_web USING (random() < 2);
SET ROLE rs_web;
SELECT memo.count('rs.refused', 'SELECT * FROM rs_refused');
RESET ROLE;
ALTER POLICY dice ON rs_refused USING (current_setting('work_mem') <> '');
SET ROLE rs_web;
SELECT memo.count('rs.refused', 'SELECT * FROM rs_refused');
RESET ROLE;
ALTER POLICY dice ON rs_refused USING (current_setting(note) <> '');
SET ROLE rs_web;
SELECT memo.count('rs.refused', 'SELECT * FROM rs_refused');
RESET ROLE;
CREATE FUNCTION rs_plpgsql_org() RETURNS int LANGUAGE plpgsql STABLE
  AS $$ BEGIN RETURN current_setting('app.org_id')::int; END $$;
ALTER POLICY dice ON rs_refused USING (org_id = rs_plpgsql_org());
SET ROLE rs_web;
SELECT memo.count('rs.refused', 'SELECT * FROM rs_refused');
RESET ROLE;

-- An IMMUTABLE SQL helper in a policy is read through like a STABLE one
-- (its label is not trusted where it decides who reads what); one in
-- PL/pgSQL is refused.
CREATE FUNCTION rs_immutable_org() RETURNS int LANGUAGE sql IMMUTABLE
  AS $$ SELECT current_setting('app.org_id')::int $$;
CREATE FUNCTION rs_immutable_plpgsql_org() RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN RETURN current_setting('app.org_id')::int; END $$;
ALTER POLICY dice ON rs_refused USING (org_id = rs_immutable_org());
INSERT INTO rs_refused SELECT g, g % 4, 'n' FROM generate_series(1, 12) g;
BEGIN;
SET LOCAL ROLE rs_web;
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.immutable', 'SELECT * FROM rs_refused WHERE id > 0');
SELECT rs_check('rs.immutable', 'SELECT * FROM rs_refused WHERE id > 0');
SET LOCAL app.org_id = 2;
SELECT rs_check('rs.immutable', 'SELECT * FROM rs_refused WHERE id > 0');
SELECT rs_check('rs.immutable', 'SELECT * FROM rs_refused WHERE id > 0');
SET LOCAL app.org_id = 1;
SELECT rs_check('rs.immutable', 'SELECT * FROM rs_refused WHERE id > 0');
COMMIT;
ALTER POLICY dice ON rs_refused USING (org_id = rs_immutable_plpgsql_org());
SET ROLE rs_web;
SELECT memo.count('rs.refused', 'SELECT * FROM rs_refused');
RESET ROLE;

-- 13. The statement's own expressions go by the same rules: the setting
-- and the role it reads join the key.
SET app.org_id = 3;
SELECT rs_check('rs.own', 'SELECT * FROM rs_role WHERE org_id = current_setting(''app.org_id'')::int');
SELECT rs_check('rs.own', 'SELECT * FROM rs_role WHERE org_id = current_setting(''app.org_id'')::int');
SET app.org_id = 2;
SELECT rs_check('rs.own', 'SELECT * FROM rs_role WHERE org_id = current_setting(''app.org_id'')::int');
RESET app.org_id;
SELECT memo.count('rs.own', 'SELECT current_user, session_user FROM rs_role') AS memo, count(*) AS uncached
  FROM rs_role;
-- the role's name, which a rename changes at once; current_database() is
-- refused (a renamed database bumps no counter)
SET ROLE rs_admin;
SELECT * FROM memo.list('rs.name', 'SELECT current_user::text FROM rs_role LIMIT 1') AS t(who text);
SELECT * FROM memo.list('rs.name', 'SELECT current_user::text FROM rs_role LIMIT 1') AS t(who text);
RESET ROLE;
ALTER ROLE rs_admin RENAME TO rs_admin2;
SET ROLE rs_admin2;
SELECT * FROM memo.list('rs.name', 'SELECT current_user::text FROM rs_role LIMIT 1') AS t(who text);
RESET ROLE;
ALTER ROLE rs_admin2 RENAME TO rs_admin;
SELECT try($$SELECT memo.count('rs.own', 'SELECT current_database() FROM rs_role')$$);
-- a scope value computed from constants, with a call whose defaults the
-- parser leaves out (evaluated as the executor evaluates it)
SELECT memo.count('rs.own', 'SELECT * FROM rs_setting WHERE org_id = jsonb_array_length(jsonb_path_query_array(''[1, 2]'', ''$[*]''))')
       AS memo, count(*) AS uncached
  FROM rs_setting WHERE org_id = 2;
SELECT reason, bypasses FROM memo.bypass_reasons()
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND cache_name LIKE 'rs.%'
   AND bypasses > 0 ORDER BY 1;

DROP VIEW rs_setting_invoker, rs_role_by_admin;
DROP TABLE rs_role, rs_setting, rs_claims, rs_member, rs_definer, rs_restrict, rs_forced, rs_members,
           rs_members_private, rs_refused;
DROP FUNCTION rs_my_orgs(), rs_uid(), rs_make(text), rs_check(text, text), rs_plpgsql_org(), rs_immutable_org(),
              rs_immutable_plpgsql_org();
DROP ROLE rs_web, rs_admin, rs_owner;
