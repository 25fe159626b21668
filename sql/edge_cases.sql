-- Transaction and catalog edge cases (one session; the cross-session ones
-- are in test/t/004_invalidate_edge_cases.pl). Every memo result is shown next to the
-- truth computed without the cache. counters() and try() come from
-- sql/include/setup.sql.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql
\set VERBOSITY terse
CREATE SCHEMA edge;
SET search_path = edge, public;
CREATE TABLE ledger (id int PRIMARY KEY, amount int NOT NULL);
INSERT INTO ledger SELECT g, 10 FROM generate_series(1, 5) g;
SELECT memo.watch('ledger');
CREATE FUNCTION ledger_rows() RETURNS bigint LANGUAGE sql
  AS $$ SELECT memo.count('edge.ledger', 'SELECT * FROM ledger') $$;

-- 1. Subtransactions
-- nested savepoints: the released write commits, the rolled-back one does not
SELECT ledger_rows();
BEGIN;
SAVEPOINT outer_sp;
INSERT INTO ledger VALUES (6, 10);
SAVEPOINT inner_sp;
INSERT INTO ledger VALUES (7, 10);
ROLLBACK TO inner_sp;
RELEASE outer_sp;
SELECT ledger_rows() AS own_view, (SELECT count(*) FROM ledger) AS truth;
COMMIT;
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
-- a plpgsql exception block is a subtransaction: its write is undone
DO $$
BEGIN
  BEGIN
    INSERT INTO ledger VALUES (8, 10);
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
END $$;
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
-- a computation that fails inside a savepoint leaves no flight behind: the
-- same key fails the same way again (no hang, no 42P19), then computes
-- once the data allows it
BEGIN;
SAVEPOINT sp;
SELECT memo.count('edge.div', 'SELECT * FROM ledger WHERE 1 / (amount - 10) = 0');
ROLLBACK TO sp;
SELECT count(*) AS flights FROM memo.flights;
SELECT try($$SELECT memo.count('edge.div', 'SELECT * FROM ledger WHERE 1 / (amount - 10) = 0')$$);
COMMIT;
UPDATE ledger SET amount = 12;
SELECT memo.count('edge.div', 'SELECT * FROM ledger WHERE 1 / (amount - 10) = 0');
SELECT count(*) AS flights FROM memo.flights;

-- 2. Two-phase commit: a write to a watched table prepares, also one
-- rolled back to a savepoint; cached results stay right throughout
BEGIN;
INSERT INTO ledger VALUES (9, 10);
PREPARE TRANSACTION 'edge_write';
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid = 'edge_write';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
COMMIT PREPARED 'edge_write';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
BEGIN;
SAVEPOINT sp;
DELETE FROM ledger;
ROLLBACK TO sp;
PREPARE TRANSACTION 'edge_undone_write';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
COMMIT PREPARED 'edge_undone_write';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
-- a prepared transaction that only read cached results and wrote an
-- unwatched table commits, and cached results stay right
CREATE TABLE audit (note text);
BEGIN;
SELECT ledger_rows();
INSERT INTO audit VALUES ('read');
PREPARE TRANSACTION 'edge_reader';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;
COMMIT PREPARED 'edge_reader';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth, (SELECT count(*) FROM audit) AS audit;
BEGIN;
INSERT INTO audit VALUES ('gone');
PREPARE TRANSACTION 'edge_rolled_back';
ROLLBACK PREPARED 'edge_rolled_back';
SELECT ledger_rows() AS memo, (SELECT count(*) FROM audit) AS audit;
-- a collation change prepares too
BEGIN;
CREATE COLLATION edge.prepared_coll (locale = 'C');
PREPARE TRANSACTION 'edge_collation';
COMMIT PREPARED 'edge_collation';
SELECT count(*) AS prepared FROM pg_prepared_xacts;

-- 3. Partitioned tables
CREATE TABLE sale (id int, region text, amount int) PARTITION BY LIST (region);
CREATE TABLE sale_eu PARTITION OF sale FOR VALUES IN ('eu') PARTITION BY RANGE (id);
CREATE TABLE sale_eu_low PARTITION OF sale_eu FOR VALUES FROM (0) TO (100);
CREATE TABLE sale_eu_high PARTITION OF sale_eu FOR VALUES FROM (100) TO (MAXVALUE);
CREATE TABLE sale_other PARTITION OF sale FOR VALUES IN ('us');
INSERT INTO sale VALUES (1, 'eu', 5), (150, 'eu', 5), (2, 'us', 5);
SELECT memo.watch('sale');
-- a write straight into a leaf two levels down invalidates the root
SELECT memo.count('edge.sale', 'SELECT * FROM sale');
INSERT INTO sale_eu_high VALUES (151, 'eu', 5);
SELECT memo.count('edge.sale', 'SELECT * FROM sale') AS memo, (SELECT count(*) FROM sale) AS truth;
-- a leaf read directly is invalidated by writes through the root, and by
-- rows moved into it from another partition
SELECT memo.count('edge.sale.low', 'SELECT * FROM sale_eu_low');
UPDATE sale SET region = 'eu' WHERE id = 2;
SELECT memo.count('edge.sale.low', 'SELECT * FROM sale_eu_low') AS memo, (SELECT count(*) FROM sale_eu_low) AS truth;
UPDATE sale_eu SET id = 3 WHERE id = 150;
SELECT memo.count('edge.sale.low', 'SELECT * FROM sale_eu_low') AS memo, (SELECT count(*) FROM sale_eu_low) AS truth;
-- ATTACH of an unwatched table: the root is refused until it is watched
CREATE TABLE sale_ap (id int, region text, amount int);
INSERT INTO sale_ap VALUES (10, 'ap', 5);
ALTER TABLE sale ATTACH PARTITION sale_ap FOR VALUES IN ('ap');
SELECT try($$SELECT memo.count('edge.sale', 'SELECT * FROM sale')$$);
SELECT memo.watch('sale_ap');
SELECT memo.count('edge.sale', 'SELECT * FROM sale') AS memo, (SELECT count(*) FROM sale) AS truth;
-- DETACH: the root no longer counts it; the detached table still works on its own
SELECT memo.count('edge.sale.ap', 'SELECT * FROM sale_ap');
ALTER TABLE sale DETACH PARTITION sale_ap;
SELECT memo.count('edge.sale', 'SELECT * FROM sale') AS memo, (SELECT count(*) FROM sale) AS truth;
INSERT INTO sale_ap VALUES (11, 'ap', 5);
SELECT memo.count('edge.sale.ap', 'SELECT * FROM sale_ap') AS memo, (SELECT count(*) FROM sale_ap) AS truth;
-- ATTACH of a watched table with rows, then DETACH ... CONCURRENTLY
ALTER TABLE sale ATTACH PARTITION sale_ap FOR VALUES IN ('ap');
SELECT memo.count('edge.sale', 'SELECT * FROM sale') AS memo, (SELECT count(*) FROM sale) AS truth;
INSERT INTO sale VALUES (12, 'ap', 5);
SELECT memo.count('edge.sale.ap', 'SELECT * FROM sale_ap') AS memo, (SELECT count(*) FROM sale_ap) AS truth;
-- (an entry over the root that was just a hit: the detach alone must end it)
SELECT warm('edge.sale', $$SELECT memo.count('edge.sale', 'SELECT * FROM sale')$$);
ALTER TABLE sale DETACH PARTITION sale_ap CONCURRENTLY;
SELECT memo.count('edge.sale', 'SELECT * FROM sale') AS memo, (SELECT count(*) FROM sale) AS truth;

-- 4. Inheritance and views
-- a child with two parents: a write through either parent changes both
CREATE TABLE shape (area int);
CREATE TABLE colored (area int);
CREATE TABLE red_square () INHERITS (shape, colored);
INSERT INTO red_square VALUES (4), (9);
SELECT memo.watch('colored');
-- the other parent must be watched too: its writes reach colored's rows
SELECT try($$SELECT memo.count('edge.colored', 'SELECT * FROM colored')$$);
SELECT memo.watch('shape');
SELECT * FROM memo.list('edge.colored', 'SELECT sum(area)::int FROM colored') AS t(s int);
UPDATE shape SET area = area + 1;
SELECT s AS memo, (SELECT sum(area)::int FROM colored) AS truth
  FROM memo.list('edge.colored', 'SELECT sum(area)::int FROM colored') AS t(s int);
DELETE FROM shape WHERE area = 5;
SELECT s AS memo, (SELECT sum(area)::int FROM colored) AS truth
  FROM memo.list('edge.colored', 'SELECT sum(area)::int FROM colored') AS t(s int);
-- ALTER TABLE ... INHERIT / NO INHERIT of a watched table
CREATE TABLE circle (area int);
INSERT INTO circle VALUES (3);
SELECT memo.watch('circle');
SELECT memo.count('edge.shape', 'SELECT * FROM shape');
ALTER TABLE circle INHERIT shape;
SELECT memo.count('edge.shape', 'SELECT * FROM shape') AS memo, (SELECT count(*) FROM shape) AS truth;
ALTER TABLE circle NO INHERIT shape;
SELECT memo.count('edge.shape', 'SELECT * FROM shape') AS memo, (SELECT count(*) FROM shape) AS truth;
-- views over views and over a partitioned table; writes through an
-- updatable view invalidate its base table
CREATE VIEW big_sale AS SELECT * FROM sale WHERE amount >= 5;
CREATE VIEW big_eu_sale AS SELECT * FROM big_sale WHERE region = 'eu';
SELECT memo.count('edge.view', 'SELECT * FROM big_eu_sale');
INSERT INTO big_sale VALUES (13, 'eu', 7);
SELECT memo.count('edge.view', 'SELECT * FROM big_eu_sale') AS memo, (SELECT count(*) FROM big_eu_sale) AS truth;
INSERT INTO sale_eu_low VALUES (14, 'eu', 1);
UPDATE big_eu_sale SET amount = 1 WHERE id = 13;
SELECT memo.count('edge.view', 'SELECT * FROM big_eu_sale') AS memo, (SELECT count(*) FROM big_eu_sale) AS truth;
CREATE OR REPLACE VIEW big_sale AS SELECT * FROM sale WHERE amount >= 1;
SELECT memo.count('edge.view', 'SELECT * FROM big_eu_sale') AS memo, (SELECT count(*) FROM big_eu_sale) AS truth;

-- 5. Table DDL: type change, DROP COLUMN, RENAME, SET SCHEMA, DROP TABLE
CREATE TABLE gadget (id int, weight int, color text);
INSERT INTO gadget VALUES (1, 7, 'red');
SELECT memo.watch('gadget');
SELECT * FROM memo.list('edge.gadget', 'SELECT (weight / 2)::text FROM gadget') AS t(w text);
ALTER TABLE gadget ALTER COLUMN weight TYPE numeric;
SELECT * FROM memo.list('edge.gadget', 'SELECT (weight / 2)::text FROM gadget') AS t(w text);
SELECT * FROM memo.list_as(NULL::gadget, 'edge.gadget.rows', 'SELECT * FROM gadget');
ALTER TABLE gadget DROP COLUMN color;
SELECT try($$SELECT * FROM memo.list_as(NULL::gadget, 'edge.gadget.rows', 'SELECT id, weight, color FROM gadget')$$);
SELECT * FROM memo.list_as(NULL::gadget, 'edge.gadget.rows', 'SELECT * FROM gadget');
ALTER TABLE gadget RENAME COLUMN weight TO mass;
SELECT try($$SELECT * FROM memo.list('edge.gadget', 'SELECT (weight / 2)::text FROM gadget') AS t(w text)$$);
-- moved off the search path: the same text no longer finds it
SELECT memo.count('edge.gadget.n', 'SELECT * FROM gadget');
CREATE SCHEMA edge_off;
ALTER TABLE gadget SET SCHEMA edge_off;
SELECT try($$SELECT memo.count('edge.gadget.n', 'SELECT * FROM gadget')$$);
-- DROP TABLE with a view over it
CREATE VIEW heavy AS SELECT * FROM edge_off.gadget WHERE mass > 1;
SELECT memo.count('edge.heavy', 'SELECT * FROM heavy');
DROP TABLE edge_off.gadget CASCADE;
SELECT try($$SELECT memo.count('edge.heavy', 'SELECT * FROM heavy')$$);
SELECT entries FROM counters('edge.heavy');

-- 6. search_path tricks
-- schemas swap names: the same text follows the schema now named first
CREATE SCHEMA edge_a;
CREATE SCHEMA edge_b;
CREATE TABLE edge_a.pick (v int);
CREATE TABLE edge_b.pick (v int);
INSERT INTO edge_a.pick VALUES (1);
INSERT INTO edge_b.pick VALUES (1), (2);
SELECT memo.watch('edge_a.pick');
SELECT memo.watch('edge_b.pick');
SET search_path = edge_a, public;
SELECT memo.count('edge.pick', 'SELECT * FROM pick');
BEGIN;
ALTER SCHEMA edge_a RENAME TO edge_tmp;
ALTER SCHEMA edge_b RENAME TO edge_a;
ALTER SCHEMA edge_tmp RENAME TO edge_b;
COMMIT;
SELECT memo.count('edge.pick', 'SELECT * FROM pick') AS memo, (SELECT count(*) FROM pick) AS truth;
-- a function's own SET search_path resolves the same text elsewhere
CREATE FUNCTION pick_in_b() RETURNS bigint LANGUAGE sql SET search_path = edge_b
  AS $$ SELECT memo.count('edge.pick', 'SELECT * FROM pick') $$;
SELECT pick_in_b() AS in_b, memo.count('edge.pick', 'SELECT * FROM pick') AS in_a;
-- a collation that takes a name over earlier on the path
SET search_path = edge_a, edge_b, public, pg_catalog;
CREATE TABLE edge_b.word (w text);
INSERT INTO edge_b.word VALUES ('a'), ('B');
SELECT memo.watch('edge_b.word');
CREATE COLLATION edge_b.ordering (locale = 'C');
SELECT * FROM memo.list('edge.coll', 'SELECT string_agg(w, '','' ORDER BY w COLLATE ordering) FROM word') AS t(s text);
CREATE COLLATION edge_a.ordering (provider = icu, locale = 'und');
SELECT s AS memo, (SELECT string_agg(w, ',' ORDER BY w COLLATE ordering) FROM word) AS truth
  FROM memo.list('edge.coll', 'SELECT string_agg(w, '','' ORDER BY w COLLATE ordering) FROM word') AS t(s text);
-- a text search configuration whose mapping changes
CREATE TEXT SEARCH CONFIGURATION edge_b.words (COPY = pg_catalog.simple);
SELECT * FROM memo.list('edge.ts', 'SELECT to_tsvector(''edge_b.words'', string_agg(w, '' '' ORDER BY w COLLATE "C")) FROM word') AS t(v tsvector);
ALTER TEXT SEARCH CONFIGURATION edge_b.words ALTER MAPPING FOR asciiword WITH english_stem;
SELECT v AS memo, (SELECT to_tsvector('edge_b.words', string_agg(w, ' ' ORDER BY w COLLATE "C")) FROM word) AS truth
  FROM memo.list('edge.ts', 'SELECT to_tsvector(''edge_b.words'', string_agg(w, '' '' ORDER BY w COLLATE "C")) FROM word') AS t(v tsvector);
SET search_path = edge, public;

-- 7. Roles: SECURITY DEFINER owned by an ordinary role, SET ROLE, REVOKE
CREATE ROLE edge_owner;
CREATE ROLE edge_user;
GRANT USAGE ON SCHEMA edge TO edge_owner, edge_user;
GRANT SELECT ON ledger TO edge_owner;
CREATE FUNCTION ledger_as_owner() RETURNS bigint LANGUAGE sql SECURITY DEFINER
  AS $$ SELECT memo.count('edge.definer', 'SELECT * FROM edge.ledger') $$;
ALTER FUNCTION ledger_as_owner() OWNER TO edge_owner;
GRANT EXECUTE ON FUNCTION ledger_as_owner() TO edge_user;
SET ROLE edge_user;
SELECT ledger_as_owner();
SELECT ledger_as_owner();
RESET ROLE;
SELECT hits FROM counters('edge.definer');
-- a REVOKE from the owner between two calls: the REVOKE changes the table's
-- ACL, which invalidates the entry, and the recomputation runs as the owner
REVOKE SELECT ON ledger FROM edge_owner;
SET ROLE edge_user;
SELECT try($$SELECT edge.ledger_as_owner()$$);
RESET ROLE;
-- column privileges of a view owner, revoked between two calls
GRANT SELECT (id, amount) ON ledger TO edge_owner;
CREATE VIEW ledger_amounts AS SELECT id, amount FROM ledger;
ALTER VIEW ledger_amounts OWNER TO edge_owner;
GRANT SELECT ON ledger_amounts TO edge_user;
SET ROLE edge_user;
SELECT * FROM memo.list('edge.amounts', 'SELECT sum(amount)::int FROM ledger_amounts') AS t(s int);
SELECT * FROM memo.list('edge.amounts', 'SELECT sum(amount)::int FROM ledger_amounts') AS t(s int);
RESET ROLE;
REVOKE SELECT (amount) ON ledger FROM edge_owner;
SET ROLE edge_user;
SELECT try($$SELECT * FROM memo.list('edge.amounts', 'SELECT sum(amount)::int FROM edge.ledger_amounts') AS t(s int)$$);
RESET ROLE;
-- a privilege held through a group, lost by leaving the group: no table's
-- catalog row changes, the entry stays current, and only the re-check of
-- the hit as the owner refuses it
CREATE ROLE edge_readers;
GRANT SELECT ON ledger TO edge_readers;
GRANT edge_readers TO edge_owner;
SET ROLE edge_user;
SELECT ledger_as_owner();
SELECT ledger_as_owner();
RESET ROLE;
SELECT hits, invalidations FROM counters('edge.definer');
REVOKE edge_readers FROM edge_owner;
SET ROLE edge_user;
SELECT try($$SELECT edge.ledger_as_owner()$$);
RESET ROLE;
SELECT hits, invalidations FROM counters('edge.definer');

-- 8. Row level security on a dependency
CREATE TABLE tenant_note (tenant text, body text);
INSERT INTO tenant_note VALUES ('edge_user', 'x'), ('other', 'y');
SELECT memo.watch('tenant_note');
GRANT SELECT ON tenant_note TO edge_user, edge_owner;
SET ROLE edge_user;
SELECT memo.count('edge.notes', 'SELECT * FROM tenant_note');
SELECT memo.count('edge.notes', 'SELECT * FROM tenant_note');
RESET ROLE;
-- enabled between two calls: the next call goes through the policy, never
-- served the entry from before it
ALTER TABLE tenant_note ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_notes ON tenant_note USING (tenant = current_user);
SET ROLE edge_user;
SELECT memo.count('edge.notes', 'SELECT * FROM edge.tenant_note') AS memo, count(*) AS truth FROM tenant_note;
-- also when the table is only joined (here PostgreSQL's own error), or read
-- through a security_invoker view
SELECT try($$SELECT memo.count('edge.join', 'SELECT * FROM edge.ledger l JOIN edge.tenant_note n ON n.body = l.id::text')$$);
RESET ROLE;
CREATE VIEW notes_invoker WITH (security_invoker) AS SELECT * FROM tenant_note;
CREATE VIEW notes_by_owner AS SELECT * FROM tenant_note;
ALTER VIEW notes_by_owner OWNER TO edge_owner;
GRANT SELECT ON notes_invoker, notes_by_owner TO edge_user;
SET ROLE edge_user;
SELECT memo.count('edge.invoker', 'SELECT * FROM edge.notes_invoker') AS memo, count(*) AS truth
  FROM edge.notes_invoker;
RESET ROLE;
-- the table owner is served every row through the invoker view; a view
-- owned by a role the policy applies to reads through that role's policy,
-- whoever calls (current_user is the caller's: its own key)
SELECT memo.count('edge.invoker', 'SELECT * FROM notes_invoker') AS memo, count(*) AS truth FROM notes_invoker;
SELECT memo.count('edge.by_owner', 'SELECT * FROM edge.notes_by_owner') AS memo, count(*) AS truth
  FROM edge.notes_by_owner;
-- FORCE ROW LEVEL SECURITY between two calls of the owner
ALTER TABLE tenant_note OWNER TO edge_owner;
SET ROLE edge_owner;
SELECT memo.count('edge.owner', 'SELECT * FROM tenant_note');
RESET ROLE;
ALTER TABLE tenant_note FORCE ROW LEVEL SECURITY;
SET ROLE edge_owner;
SELECT memo.count('edge.owner', 'SELECT * FROM edge.tenant_note') AS memo, count(*) AS truth
  FROM edge.tenant_note;
RESET ROLE;

-- 9. DROP EXTENSION, a write while nothing watches, CREATE EXTENSION
SELECT ledger_rows();
SET client_min_messages = warning;
DROP EXTENSION pg_memo CASCADE;
RESET client_min_messages;
INSERT INTO ledger VALUES (20, 10);
CREATE EXTENSION pg_memo;
SELECT try($$SELECT edge.ledger_rows()$$);
SELECT memo.watch('ledger');
SELECT ledger_rows() AS memo, (SELECT count(*) FROM ledger) AS truth;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA edge, edge_a, edge_b, edge_off CASCADE;
RESET client_min_messages;
DROP ROLE edge_owner, edge_user, edge_readers;
