-- pg_memo 1.1: only the trigger memo.watch creates counts as watching a
-- table; tables can be watched with deltas.
\echo Use "ALTER EXTENSION pg_memo UPDATE TO '1.1'" to load this file. \quit

-- In 1.0 any trigger named pg_memo_invalidate that called
-- invalidation_trigger() counted as watching its table, and memo.watch kept
-- it. A role holding only the TRIGGER privilege could plant one that never
-- fires (WHEN (false), UPDATE OF a column, a missing event, FOR EACH ROW, ...)
-- and make the table's cached results outlive its writes. From 1.1 on the
-- trigger must be exactly the one memo.watch creates: the query path refuses
-- any other as "not watched", memo.watch replaces it, memo.unwatch leaves it
-- alone and memo.watched does not list it.

-------------------------------------------------------------------------------
-- The definition of pg_memo's trigger, shared with the query path
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.is_watch_trigger(trigger_oid oid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_is_watch_trigger'
LANGUAGE C STRICT STABLE;

COMMENT ON FUNCTION @extschema@.is_watch_trigger(oid) IS
'True if the trigger is exactly the one memo.watch creates (its enabled state aside)';

-------------------------------------------------------------------------------
-- Deltas: the rows each statement changed, captured by AFTER statement
-- triggers with transition tables (one per event: PostgreSQL allows
-- transition tables on single-event triggers only), so that a write that
-- cannot change a cached result leaves it alone and counts are corrected
-- (docs/consistency.md, "Deltas").
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.delta_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_delta_trigger'
LANGUAGE C PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.delta_trigger() IS
'The function of the delta triggers memo.watch(rel, deltas => true) installs: keeps the rows a statement changed for the commit';

-------------------------------------------------------------------------------
-- memo.watch: a trigger of pg_memo's name that is not pg_memo's is replaced;
-- deltas installs (or, false, removes) the delta triggers.
-------------------------------------------------------------------------------

DROP FUNCTION @extschema@.watch(regclass);

CREATE FUNCTION @extschema@.watch(rel regclass, deltas boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    target oid;
    existing oid;
    existing_parent oid;
    ours boolean;
BEGIN
    -- Partitioned tables before their partitions: a look-alike row trigger
    -- on a partitioned table is cloned to its partitions, and dropping it
    -- there drops the clones too.
    FOR target IN SELECT w.relid FROM @extschema@.watch_targets(rel) w
                   ORDER BY (SELECT count(*) FROM pg_partition_ancestors(w.relid)) LOOP
        IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = target), 'USAGE') THEN
            RAISE EXCEPTION 'must be owner of table %', target::regclass USING ERRCODE = '42501';
        END IF;
        IF (SELECT relkind FROM pg_class WHERE oid = target) = 'f' THEN
            RAISE EXCEPTION 'partition % is a foreign table', target::regclass
                USING ERRCODE = '42809', DETAIL = 'Writes to it happen elsewhere and fire no trigger here.';
        END IF;
        SELECT t.oid, t.tgparentid INTO existing, existing_parent
          FROM pg_trigger t WHERE t.tgrelid = target AND t.tgname = 'pg_memo_invalidate';
        ours := FOUND AND coalesce(@extschema@.is_watch_trigger(existing), false);
        IF existing IS NOT NULL AND NOT ours THEN
            IF existing_parent <> 0 THEN
                -- A clone of a partitioned table's row trigger cannot be
                -- dropped on its own. Had that table been a target here, it
                -- would have come first and its drop removed the clone.
                RAISE EXCEPTION 'table % has a trigger named pg_memo_invalidate that is not pg_memo''s',
                                target::regclass
                    USING ERRCODE = '42710',
                          DETAIL = format('It is a clone of trigger pg_memo_invalidate on table %s.',
                                          (SELECT p.tgrelid::regclass FROM pg_trigger p
                                            WHERE p.oid = existing_parent)),
                          HINT = 'Watch that table (as its owner), which replaces the trigger there and in its partitions.';
            END IF;
            RAISE NOTICE 'replaced a trigger named pg_memo_invalidate on table % that was not pg_memo''s',
                         target::regclass
                USING DETAIL = format('It was: %s', pg_get_triggerdef(existing));
            EXECUTE format('DROP TRIGGER pg_memo_invalidate ON %s', target::regclass);
        END IF;
        IF NOT ours THEN
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

        -- The delta triggers, made anew each time (a trigger of their name
        -- that a role with the TRIGGER privilege planted is replaced), or
        -- removed. What a write captured is checked at its commit whatever
        -- triggers there are (src/pg/delta_capture.cpp).
        PERFORM @extschema@.drop_delta_triggers(target);
        IF deltas THEN
            IF (SELECT relkind FROM pg_class WHERE oid = target) <> 'r'
               OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = target OR inhparent = target) THEN
                RAISE EXCEPTION 'pg_memo keeps deltas only for tables without partitions or inheritance'
                    USING ERRCODE = '0A000',
                          DETAIL = format('%s is partitioned, a partition, or in an inheritance tree.', target::regclass),
                          HINT = 'Watch it without deltas: memo.watch(rel).';
            END IF;
            EXECUTE format('CREATE TRIGGER pg_memo_delta_insert AFTER INSERT ON %s '
                           'REFERENCING NEW TABLE AS pg_memo_new '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger()', target::regclass);
            EXECUTE format('CREATE TRIGGER pg_memo_delta_update AFTER UPDATE ON %s '
                           'REFERENCING OLD TABLE AS pg_memo_old NEW TABLE AS pg_memo_new '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger()', target::regclass);
            EXECUTE format('CREATE TRIGGER pg_memo_delta_delete AFTER DELETE ON %s '
                           'REFERENCING OLD TABLE AS pg_memo_old '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger()', target::regclass);
            EXECUTE format('ALTER TABLE %1$s ENABLE ALWAYS TRIGGER pg_memo_delta_insert, '
                           'ENABLE ALWAYS TRIGGER pg_memo_delta_update, '
                           'ENABLE ALWAYS TRIGGER pg_memo_delta_delete', target::regclass);
        END IF;

        -- Writes this transaction made before watching fired no trigger: it
        -- must not store results containing them.
        PERFORM @extschema@.invalidate(target);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION @extschema@.watch(regclass, boolean) IS
'Installs the invalidation trigger on a table and its partitions, replacing any other trigger of its name, and with deltas the delta triggers; idempotent';

-- The delta triggers of a table, and any trigger bearing their names.
CREATE FUNCTION @extschema@.drop_delta_triggers(rel regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    name text;
BEGIN
    FOR name IN SELECT t.tgname FROM pg_trigger t
                 WHERE t.tgrelid = rel
                   AND (t.tgname IN ('pg_memo_delta_insert', 'pg_memo_delta_update', 'pg_memo_delta_delete')
                        OR t.tgfoid = '@extschema@.delta_trigger()'::regprocedure) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', name, rel);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION @extschema@.drop_delta_triggers(regclass) IS
'Helper of memo.watch and memo.unwatch: drops a table''s delta triggers';

-------------------------------------------------------------------------------
-- memo.unwatch: drops pg_memo's trigger only
-------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION @extschema@.unwatch(rel regclass)
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
                      AND @extschema@.is_watch_trigger(t.oid)) THEN
            -- Dropping the trigger invalidates the table's entries at commit.
            EXECUTE format('DROP TRIGGER pg_memo_invalidate ON %s', target::regclass);
        END IF;
        PERFORM @extschema@.drop_delta_triggers(target);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION @extschema@.unwatch(regclass) IS
'Removes the invalidation trigger from a table and its partitions (only pg_memo''s own); idempotent';

-------------------------------------------------------------------------------
-- memo.watched: pg_memo's triggers only (1.0's columns first, so grants
-- stay), and whether the table keeps deltas
-------------------------------------------------------------------------------

CREATE OR REPLACE VIEW @extschema@.watched AS
SELECT t.tgrelid::regclass AS table_name,
       @extschema@.generation(t.tgrelid) AS generation,
       t.tgenabled = 'A' AS triggers_enabled,
       CASE t.tgenabled WHEN 'A' THEN 'always' WHEN 'O' THEN 'origin'
                        WHEN 'R' THEN 'replica' WHEN 'D' THEN 'disabled' END AS trigger_mode,
       (SELECT count(*) = 3 FROM pg_catalog.pg_trigger d
         WHERE d.tgrelid = t.tgrelid AND d.tgenabled = 'A'
           AND d.tgfoid = '@extschema@.delta_trigger()'::pg_catalog.regprocedure) AS deltas
  FROM pg_catalog.pg_trigger t
 WHERE t.tgname = 'pg_memo_invalidate'
   AND t.tgfoid = '@extschema@.invalidation_trigger()'::pg_catalog.regprocedure
   AND @extschema@.is_watch_trigger(t.oid);

-------------------------------------------------------------------------------
-- Tables that 1.0 counted as watched and 1.1 does not: say which, once.
-------------------------------------------------------------------------------

DO $$
DECLARE
    tbl regclass;
BEGIN
    FOR tbl IN SELECT t.tgrelid::regclass
                 FROM pg_catalog.pg_trigger t
                WHERE t.tgname = 'pg_memo_invalidate'
                  AND t.tgfoid = '@extschema@.invalidation_trigger()'::pg_catalog.regprocedure
                  AND t.tgparentid = 0
                  AND NOT @extschema@.is_watch_trigger(t.oid)
                ORDER BY 1 LOOP
        RAISE WARNING 'table % is no longer watched by pg_memo: its trigger pg_memo_invalidate is not the one memo.watch creates',
                      tbl
            USING HINT = format('Run SELECT @extschema@.watch(%L); as the table''s owner to replace it.', tbl::text);
    END LOOP;
END;
$$;

-------------------------------------------------------------------------------
-- Function properties, stated on every function, and comments
-------------------------------------------------------------------------------

-- The monitoring functions read shared memory and write nothing: PARALLEL
-- SAFE. They take no argument, so STRICT meant nothing: CALLED ON NULL
-- INPUT. From 1.1 on they are the library's versioned entry points (the
-- 1.0 ones stay in the library for databases not yet updated). memo.stats
-- and memo.info gain columns at their end (deltas, older answers, remembered
-- errors, warm restart), so they and their views
-- are made anew, with 1.0's grants; memo.flights keeps its columns.
DROP VIEW @extschema@.stats;
DROP FUNCTION @extschema@.stats();
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
    OUT stats_reset timestamptz,
    OUT delta_kept bigint,
    OUT delta_corrected bigint,
    OUT delta_fallbacks bigint,
    OUT stale_hits bigint,
    OUT stale_on_error_hits bigint,
    OUT error_hits bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_stats_1_1'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.stats AS
SELECT d.datname, s.*
  FROM @extschema@.stats() s
  LEFT JOIN pg_catalog.pg_database d ON d.oid = s.dbid;
GRANT SELECT ON @extschema@.stats TO PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.flights(
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
AS 'MODULE_PATHNAME', 'pg_memo_flights_1_1'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

DROP VIEW @extschema@.info;
DROP FUNCTION @extschema@.info();
CREATE FUNCTION @extschema@.info(
    OUT arena_bytes bigint,
    OUT used_bytes bigint,
    OUT free_bytes bigint,
    OUT entries bigint,
    OUT evictions bigint,
    OUT delta_log_bytes bigint,
    OUT delta_records bigint,
    OUT delta_fallbacks bigint,
    OUT restored_at timestamptz,
    OUT restored_entries bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_memo_info_1_1'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

CREATE VIEW @extschema@.info AS SELECT * FROM @extschema@.info();
GRANT SELECT ON @extschema@.info TO PUBLIC;

-- The memo functions store entries and statistics in shared memory, join
-- flights and run their query: VOLATILE and PARALLEL UNSAFE, as in 1.0,
-- now stated.
ALTER FUNCTION @extschema@.list(text, text, text[]) VOLATILE PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.list_as(anyelement, text, text, text[]) VOLATILE PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.count(text, text, text[]) VOLATILE PARALLEL UNSAFE;

-- Watching runs DDL; invalidating and the trigger register work for the
-- transaction's commit; the resets write shared memory (and take no
-- argument: CALLED ON NULL INPUT).
ALTER FUNCTION @extschema@.drop_delta_triggers(regclass) PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.unwatch(regclass) PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.invalidate(regclass) PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.invalidation_trigger() PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.reset() CALLED ON NULL INPUT PARALLEL UNSAFE;
ALTER FUNCTION @extschema@.reset_stats() CALLED ON NULL INPUT PARALLEL UNSAFE;

-- Read-only: a counter in shared memory, and the catalogs.
ALTER FUNCTION @extschema@.generation(regclass) PARALLEL SAFE;
ALTER FUNCTION @extschema@.is_watch_trigger(oid) PARALLEL SAFE;
ALTER FUNCTION @extschema@.watch_targets(regclass) PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.invalidate(regclass) IS
'Invalidates the entries that depend on a table or its descendants, now and at commit (table owner)';
COMMENT ON FUNCTION @extschema@.generation(regclass) IS
'The generation counter of a relation: incremented by every committed write, DDL change or memo.invalidate';
COMMENT ON FUNCTION @extschema@.invalidation_trigger() IS
'The function of the trigger memo.watch installs: records that the transaction wrote the table';
COMMENT ON FUNCTION @extschema@.watch_targets(regclass) IS
'Helper of memo.watch and memo.unwatch: checks that a table can be watched, returns it and its descendants';
COMMENT ON FUNCTION @extschema@.stats() IS
'One row per (database, cache name): calls, hits, misses, computations, flights; the source of memo.stats';
COMMENT ON FUNCTION @extschema@.flights() IS
'Computations in progress, their leader and waiters; the source of memo.flights';
COMMENT ON FUNCTION @extschema@.info() IS
'The shared arena: its size, bytes used and free, entries, evictions; the delta log; the warm restart; the source of memo.info';
COMMENT ON FUNCTION @extschema@.reset() IS
'Removes every entry of every database; returns how many (superuser unless granted)';
COMMENT ON FUNCTION @extschema@.reset_stats() IS
'Zeroes the counters of memo.stats in every database, keeping the gauges (superuser unless granted)';

COMMENT ON VIEW @extschema@.stats IS
'pg_memo statistics, one row per (database, cache name)';
COMMENT ON VIEW @extschema@.flights IS
'pg_memo computations in progress (query and parameters shown to their own role and pg_read_all_stats)';
COMMENT ON VIEW @extschema@.info IS
'pg_memo''s shared arena (size, bytes used and free, entries, evictions), delta log (size, records written, commits of watched rows that fell back to table-level invalidation) and warm restart (when this start restored saved results, how many)';
COMMENT ON VIEW @extschema@.watched IS
'Tables of this database that have pg_memo''s trigger, their generation and whether the trigger is enabled ALWAYS';
