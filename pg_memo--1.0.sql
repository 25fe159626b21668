-- pg_memo 1.0: memoized list and count results in shared memory.
\echo Use "CREATE EXTENSION pg_memo" to load this file. \quit

GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-------------------------------------------------------------------------------
-- Memoized queries. VOLATILE on purpose: a miss must compute with a fresh
-- snapshot, taken after the dependencies' generations were read, never with
-- the calling statement's (docs/consistency.md).
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.list(cache_name text, query text, params text[] DEFAULT '{}')
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_list'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.list(text, text, text[]) IS
'Rows of one SELECT, memoized; use with a column definition list';

CREATE FUNCTION @extschema@.list_as(row_type anyelement, cache_name text, query text,
                                    params text[] DEFAULT '{}')
RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'pg_memo_list_as'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.list_as(anyelement, text, text, text[]) IS
'Rows of one SELECT, memoized, typed as row_type (pass NULL::some_type)';

CREATE FUNCTION @extschema@.count(cache_name text, query text, params text[] DEFAULT '{}')
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_count'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.count(text, text, text[]) IS
'count(*) of the rows of one SELECT, memoized';

-------------------------------------------------------------------------------
-- Invalidation triggers
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.invalidation_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_invalidation_trigger'
LANGUAGE C;

-- The table and, for partitioned tables and inheritance parents, every
-- descendant: a write aimed straight at one fires only that table's trigger.
CREATE FUNCTION @extschema@.watch_targets(rel regclass)
RETURNS TABLE (relid oid)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    info record;
BEGIN
    IF rel IS NULL THEN
        RAISE EXCEPTION 'table must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT c.relkind, c.relpersistence, c.relowner, n.nspname
      INTO info
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = rel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', rel::oid USING ERRCODE = '42P01';
    END IF;
    IF info.nspname IN ('pg_catalog', 'information_schema', 'pg_toast') THEN
        RAISE EXCEPTION 'cannot watch system catalog %', rel
            USING ERRCODE = '0A000', DETAIL = 'Catalog changes fire no triggers.';
    END IF;
    IF info.relkind = 'v' THEN
        RAISE EXCEPTION '% is a view', rel
            USING ERRCODE = '42809',
                  HINT = 'Watch the tables it reads; queries over the view are invalidated through them.';
    ELSIF info.relkind = 'f' THEN
        RAISE EXCEPTION '% is a foreign table', rel
            USING ERRCODE = '42809', DETAIL = 'Writes to it happen elsewhere and fire no trigger here.';
    ELSIF info.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', rel USING ERRCODE = '42809';
    END IF;
    IF info.relpersistence = 't' THEN
        RAISE EXCEPTION 'cannot watch temporary table %', rel
            USING ERRCODE = '0A000', DETAIL = 'Queries over temporary tables are never cached.';
    END IF;

    RETURN QUERY
    WITH RECURSIVE tree(relid) AS (
        SELECT rel::oid
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
    )
    SELECT t.relid FROM tree t;
END;
$$;

CREATE FUNCTION @extschema@.watch(rel regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    target oid;
    existing record;
BEGIN
    FOR target IN SELECT w.relid FROM @extschema@.watch_targets(rel) w LOOP
        IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = target), 'USAGE') THEN
            RAISE EXCEPTION 'must be owner of table %', target::regclass USING ERRCODE = '42501';
        END IF;
        IF (SELECT relkind FROM pg_class WHERE oid = target) = 'f' THEN
            RAISE EXCEPTION 'partition % is a foreign table', target::regclass
                USING ERRCODE = '42809', DETAIL = 'Writes to it happen elsewhere and fire no trigger here.';
        END IF;
        SELECT t.tgfoid INTO existing
          FROM pg_trigger t WHERE t.tgrelid = target AND t.tgname = 'pg_memo_invalidate';
        IF FOUND AND existing.tgfoid <> '@extschema@.invalidation_trigger()'::regprocedure THEN
            RAISE EXCEPTION 'table % already has a trigger named pg_memo_invalidate', target::regclass
                USING ERRCODE = '42710';
        END IF;
        IF NOT FOUND THEN
            -- BEFORE: a memo call inside the writing statement itself must
            -- already know that this transaction writes the table.
            EXECUTE format('CREATE TRIGGER pg_memo_invalidate '
                           'BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.invalidation_trigger()',
                           target::regclass);
        END IF;
        -- ALWAYS: sessions with session_replication_role = replica write
        -- too. Re-watching also re-enables a disabled trigger.
        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER pg_memo_invalidate', target::regclass);

        -- Writes this transaction made before watching fired no trigger: it
        -- must not store results containing them.
        PERFORM @extschema@.invalidate(target);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION @extschema@.watch(regclass) IS
'Installs the invalidation trigger on a table and its partitions; idempotent';

CREATE FUNCTION @extschema@.unwatch(rel regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    target oid;
BEGIN
    FOR target IN SELECT w.relid FROM @extschema@.watch_targets(rel) w LOOP
        IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = target), 'USAGE') THEN
            RAISE EXCEPTION 'must be owner of table %', target::regclass USING ERRCODE = '42501';
        END IF;
        IF EXISTS (SELECT 1 FROM pg_trigger t
                    WHERE t.tgrelid = target AND t.tgname = 'pg_memo_invalidate'
                      AND t.tgfoid = '@extschema@.invalidation_trigger()'::regprocedure) THEN
            -- Dropping the trigger invalidates the table's entries at commit.
            EXECUTE format('DROP TRIGGER pg_memo_invalidate ON %s', target::regclass);
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION @extschema@.unwatch(regclass) IS
'Removes the invalidation trigger from a table and its partitions; idempotent';

-- Manual invalidation, for the owner of the table.
CREATE FUNCTION @extschema@.invalidate(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_memo_invalidate'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION @extschema@.generation(rel regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_generation'
LANGUAGE C STRICT VOLATILE;

-- One row per watched table. triggers_enabled is false when a DBA disabled
-- (or changed the firing mode of) the trigger: its queries then run
-- uncached, as bypasses, until memo.watch() is run again.
CREATE VIEW @extschema@.watched AS
SELECT t.tgrelid::regclass AS table_name,
       @extschema@.generation(t.tgrelid) AS generation,
       t.tgenabled = 'A' AS triggers_enabled,
       CASE t.tgenabled WHEN 'A' THEN 'always' WHEN 'O' THEN 'origin'
                        WHEN 'R' THEN 'replica' WHEN 'D' THEN 'disabled' END AS trigger_mode
  FROM pg_catalog.pg_trigger t
 WHERE t.tgname = 'pg_memo_invalidate'
   AND t.tgfoid = '@extschema@.invalidation_trigger()'::pg_catalog.regprocedure;

-------------------------------------------------------------------------------
-- Statistics and administration
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.stats(
    OUT dbid oid,
    OUT cache_name text,
    OUT calls bigint,
    OUT hits bigint,
    OUT misses bigint,
    OUT computations bigint,
    OUT bypasses bigint,
    OUT invalidations bigint,
    OUT evictions bigint,
    OUT too_large bigint,
    OUT entries bigint,
    OUT bytes bigint,
    OUT total_compute_ms double precision,
    OUT mean_compute_ms double precision,
    OUT shared bigint,
    OUT waits bigint,
    OUT total_wait_ms double precision,
    OUT takeovers bigint,
    OUT wait_timeouts bigint,
    OUT double_check_hits bigint,
    OUT flight_full bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_stats'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.stats AS
SELECT d.datname, s.*
  FROM @extschema@.stats() s
  LEFT JOIN pg_catalog.pg_database d ON d.oid = s.dbid;

-- Computations in progress. The query text and parameters are shown only to
-- the role the flight computes for and to members of pg_read_all_stats.
CREATE FUNCTION @extschema@.flights(
    OUT dbid oid,
    OUT cache_name text,
    OUT leader_pid integer,
    OUT waiters integer,
    OUT started timestamptz,
    OUT state text,
    OUT userid oid,
    OUT query text,
    OUT params text[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_flights'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.flights AS
SELECT d.datname, f.*
  FROM @extschema@.flights() f
  LEFT JOIN pg_catalog.pg_database d ON d.oid = f.dbid;

CREATE FUNCTION @extschema@.info(
    OUT arena_bytes bigint,
    OUT used_bytes bigint,
    OUT free_bytes bigint,
    OUT entries bigint,
    OUT evictions bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_memo_info'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW @extschema@.info AS SELECT * FROM @extschema@.info();

CREATE FUNCTION @extschema@.reset()
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_reset'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION @extschema@.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_memo_reset_stats'
LANGUAGE C STRICT VOLATILE;

-- Cluster-wide effects: superusers, or roles they grant it to.
REVOKE ALL ON FUNCTION @extschema@.reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.reset_stats() FROM PUBLIC;

-- Monitoring is for everyone, as with pg_stat_statements; memo.flights
-- hides query texts and parameters from roles that do not own them.
GRANT SELECT ON @extschema@.stats, @extschema@.info, @extschema@.watched, @extschema@.flights TO PUBLIC;
