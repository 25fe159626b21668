-- pg_memo 1.2: memoized list and count results in shared memory, with
-- registered statements served transparently, scope columns, the
-- operator's views (memo.entries, the reasons) and parameters as drivers
-- bind them.
--
-- The whole of 1.2 in one install script: every object's current
-- definition, as pg_memo--1.0.sql, pg_memo--1.0--1.1.sql and
-- pg_memo--1.1--1.2.sql leave it (a definition those replaced appears once,
-- as it is now). CREATE EXTENSION pg_memo runs this file alone; a database
-- at 1.0 or 1.1 reaches the same objects through ALTER EXTENSION pg_memo
-- UPDATE (test/t/022_admin_install_script.pl compares the two). Frozen
-- from the 1.2 release on, as the 1.0 and 1.1 scripts are: later changes go
-- into pg_memo--1.2--1.3.sql.
\echo Use "CREATE EXTENSION pg_memo" to load this file. \quit

GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-------------------------------------------------------------------------------
-- memo.params: the parameters of a memo call as drivers bind them.
--
-- memo.params is a text array inside; its category is string, so an
-- untyped argument ('{1,2}', a node-postgres parameter) resolves to it
-- before text[], and its implicit casts take the arrays drivers bind
-- (psycopg sends [42] as smallint[]). Each value becomes the text its type
-- reads back the same in any session: 42 as smallint, integer or text makes
-- one key.
-------------------------------------------------------------------------------

CREATE TYPE @extschema@.params;

CREATE FUNCTION @extschema@.params_in(cstring) RETURNS @extschema@.params
AS 'MODULE_PATHNAME', 'pg_memo_params_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.params_out(@extschema@.params) RETURNS cstring
AS 'MODULE_PATHNAME', 'pg_memo_params_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.params_recv(internal) RETURNS @extschema@.params
AS 'MODULE_PATHNAME', 'pg_memo_params_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.params_send(@extschema@.params) RETURNS bytea
AS 'MODULE_PATHNAME', 'pg_memo_params_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.params_in(cstring) IS 'memo.params from its text form, a text array''s';
COMMENT ON FUNCTION @extschema@.params_out(@extschema@.params) IS 'memo.params as text, a text array''s form';
COMMENT ON FUNCTION @extschema@.params_recv(internal) IS 'memo.params from its binary form, a text array''s';
COMMENT ON FUNCTION @extschema@.params_send(@extschema@.params) IS 'memo.params in binary, a text array''s form';

CREATE TYPE @extschema@.params (
    INPUT = @extschema@.params_in,
    OUTPUT = @extschema@.params_out,
    RECEIVE = @extschema@.params_recv,
    SEND = @extschema@.params_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = int4,
    STORAGE = extended,
    CATEGORY = 'S'
);

COMMENT ON TYPE @extschema@.params IS
'The parameters of a memo call: a text array literal, or an array of integers, numerics, floats, booleans, uuids, dates or timestamps, each value taken as its text';

-- STABLE: a timestamptz's text depends on TimeZone.
CREATE FUNCTION @extschema@.params(anyarray) RETURNS @extschema@.params
AS 'MODULE_PATHNAME', 'pg_memo_params_from_array' LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.params(anyarray) IS
'The values of an array as memo call parameters: each the text its type reads back the same in any session';

CREATE CAST (text[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (varchar[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (smallint[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (integer[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (bigint[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (numeric[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (real[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (double precision[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (boolean[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (uuid[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (date[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (timestamp[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;
CREATE CAST (timestamptz[] AS @extschema@.params) WITH FUNCTION @extschema@.params(anyarray) AS IMPLICIT;

-------------------------------------------------------------------------------
-- Memoized queries. VOLATILE on purpose: a miss must compute with a fresh
-- snapshot, taken after the dependencies' generations were read, never with
-- the calling statement's (docs/consistency.md). PARALLEL UNSAFE: they
-- store entries and statistics in shared memory, join flights and run
-- their query.
--
-- Two generations of each: 1.0's, with parameters as text[] (views and
-- functions may use them; a text[] argument without options still resolves
-- to them), and 1.2's, with parameters as memo.params and the relaxations
-- as named arguments. The options: NULL is the session's setting
-- (pg_memo.max_staleness, stale_on_error, error_ttl), so that nothing
-- depends on a session a transaction pooler shares. params has no default
-- in 1.2's: a call with two arguments is 1.0's.
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.list(cache_name text, query text, params text[] DEFAULT '{}')
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_list'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.list(text, text, text[]) IS
'Rows of one SELECT, memoized; use with a column definition list';

CREATE FUNCTION @extschema@.list_as(row_type anyelement, cache_name text, query text,
                                    params text[] DEFAULT '{}')
RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'pg_memo_list_as'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.list_as(anyelement, text, text, text[]) IS
'Rows of one SELECT, memoized, typed as row_type (pass NULL::some_type)';

CREATE FUNCTION @extschema@.count(cache_name text, query text, params text[] DEFAULT '{}')
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_count'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.count(text, text, text[]) IS
'count(*) of the rows of one SELECT, memoized';

CREATE FUNCTION @extschema@.list(cache_name text, query text, params @extschema@.params,
                                 max_staleness interval DEFAULT NULL, stale_on_error interval DEFAULT NULL,
                                 error_ttl interval DEFAULT NULL)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_list_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.list(text, text, @extschema@.params, interval, interval, interval) IS
'Rows of one SELECT, memoized, with parameters as drivers bind them and per-call options; use with a column definition list';

CREATE FUNCTION @extschema@.list_as(row_type anyelement, cache_name text, query text, params @extschema@.params,
                                    max_staleness interval DEFAULT NULL, stale_on_error interval DEFAULT NULL,
                                    error_ttl interval DEFAULT NULL)
RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'pg_memo_list_as_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.list_as(anyelement, text, text, @extschema@.params, interval, interval, interval) IS
'Rows of one SELECT, memoized, typed as row_type (pass NULL::some_type), with parameters as drivers bind them and per-call options';

CREATE FUNCTION @extschema@.count(cache_name text, query text, params @extschema@.params,
                                  max_staleness interval DEFAULT NULL, stale_on_error interval DEFAULT NULL,
                                  error_ttl interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_count_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.count(text, text, @extschema@.params, interval, interval, interval) IS
'count(*) of the rows of one SELECT, memoized, with parameters as drivers bind them and per-call options';

-------------------------------------------------------------------------------
-- Watching tables: the invalidation trigger, and only the trigger
-- memo.watch creates counts as watching a table (a role holding only the
-- TRIGGER privilege could otherwise plant one of pg_memo's name that never
-- fires: the query path refuses any other as "not watched", memo.watch
-- replaces it, memo.unwatch leaves it alone and memo.watched does not list
-- it).
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.invalidation_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_invalidation_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.invalidation_trigger() IS
'The function of the trigger memo.watch installs: records that the transaction wrote the table';

-- The definition of pg_memo's trigger, shared with the query path.
CREATE FUNCTION @extschema@.is_watch_trigger(trigger_oid oid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_is_watch_trigger'
LANGUAGE C STRICT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.is_watch_trigger(oid) IS
'True if the trigger is exactly the one memo.watch creates (its enabled state aside)';

-- Deltas: the rows each statement changed, captured by AFTER statement
-- triggers with transition tables (one per event: PostgreSQL allows
-- transition tables on single-event triggers only), so that a write that
-- cannot change a cached result leaves it alone and counts are corrected
-- (docs/consistency.md, "Deltas"). Their arguments are the table's scope
-- columns (docs/consistency.md, "Scopes").
CREATE FUNCTION @extschema@.delta_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_delta_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.delta_trigger() IS
'The function of the delta triggers memo.watch(rel, deltas => true) installs: keeps the rows a statement changed for the commit';

-- The table and, for partitioned tables and inheritance parents, every
-- descendant: a write aimed straight at one fires only that table's trigger.
CREATE FUNCTION @extschema@.watch_targets(rel regclass)
RETURNS TABLE (relid oid)
LANGUAGE plpgsql STABLE PARALLEL SAFE
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

COMMENT ON FUNCTION @extschema@.watch_targets(regclass) IS
'Helper of memo.watch and memo.unwatch: checks that a table can be watched, returns it and its descendants';

-- The delta triggers of a table, and any trigger bearing their names.
CREATE FUNCTION @extschema@.drop_delta_triggers(rel regclass)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE
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

-- Scopes (docs/consistency.md, "Scopes"): memo.watch names a table's scope
-- columns, which its delta triggers carry as arguments (attribute numbers,
-- so a rename keeps them); memo.watched shows them.
CREATE FUNCTION @extschema@.scope_column(rel regclass, column_name text)
RETURNS smallint
LANGUAGE C STRICT STABLE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_memo_scope_column';

COMMENT ON FUNCTION @extschema@.scope_column(regclass, text) IS
'Helper of memo.watch: the attribute number of a column that can be a scope column (its type, or its element type, has a default hash operator class), or an error';

CREATE FUNCTION @extschema@.scope_columns(rel regclass)
RETURNS name[]
LANGUAGE C STRICT STABLE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_memo_scope_columns';

COMMENT ON FUNCTION @extschema@.scope_columns(regclass) IS
'The scope columns readers of the table use: those its three delta triggers name alike (empty if none)';

-- memo.watch(rel, deltas, scope_columns): a trigger of pg_memo's name that
-- is not pg_memo's is replaced; deltas installs (or, false, removes) the
-- delta triggers, which carry the scope columns. Two signatures: with
-- defaults on both, memo.watch(rel, true) would match two functions. Scope
-- columns need deltas, so deltas has no default here; memo.watch(rel[,
-- deltas]) calls this one.
CREATE FUNCTION @extschema@.watch(rel regclass, deltas boolean, scope_columns text[])
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE
SET search_path = pg_catalog
AS $$
DECLARE
    target oid;
    existing oid;
    existing_parent oid;
    ours boolean;
    scope_args text;
BEGIN
    IF coalesce(cardinality(scope_columns), 0) > 0 AND NOT deltas THEN
        RAISE EXCEPTION 'scope columns need deltas'
            USING ERRCODE = '22023',
                  DETAIL = 'A write bumps the scopes of the rows its delta triggers capture.',
                  HINT = 'Watch it with deltas: memo.watch(rel, deltas => true, scope_columns => ...).';
    END IF;
    IF cardinality(scope_columns) > 8 THEN
        RAISE EXCEPTION 'a table has at most 8 scope columns' USING ERRCODE = '54000';
    END IF;
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
        -- triggers there are (src/pg/deltas/delta_capture.cpp).
        PERFORM @extschema@.drop_delta_triggers(target);
        IF deltas THEN
            IF (SELECT relkind FROM pg_class WHERE oid = target) <> 'r'
               OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = target OR inhparent = target) THEN
                RAISE EXCEPTION 'pg_memo keeps deltas only for tables without partitions or inheritance'
                    USING ERRCODE = '0A000',
                          DETAIL = format('%s is partitioned, a partition, or in an inheritance tree.', target::regclass),
                          HINT = 'Watch it without deltas: memo.watch(rel).';
            END IF;
            -- The scope columns' attribute numbers, each checked, once each.
            SELECT string_agg(quote_literal(n::text), ', ' ORDER BY first_at)
              INTO scope_args
              FROM (SELECT @extschema@.scope_column(target, c) AS n, min(i) AS first_at
                      FROM unnest(scope_columns) WITH ORDINALITY AS s(c, i)
                     GROUP BY 1) numbers;
            scope_args := coalesce(scope_args, '');
            EXECUTE format('CREATE TRIGGER pg_memo_delta_insert AFTER INSERT ON %s '
                           'REFERENCING NEW TABLE AS pg_memo_new '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger(%s)',
                           target::regclass, scope_args);
            EXECUTE format('CREATE TRIGGER pg_memo_delta_update AFTER UPDATE ON %s '
                           'REFERENCING OLD TABLE AS pg_memo_old NEW TABLE AS pg_memo_new '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger(%s)',
                           target::regclass, scope_args);
            EXECUTE format('CREATE TRIGGER pg_memo_delta_delete AFTER DELETE ON %s '
                           'REFERENCING OLD TABLE AS pg_memo_old '
                           'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.delta_trigger(%s)',
                           target::regclass, scope_args);
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

COMMENT ON FUNCTION @extschema@.watch(regclass, boolean, text[]) IS
'Installs the invalidation trigger on a table and its partitions, replacing any other trigger of its name, and with deltas the delta triggers, which carry its scope columns; idempotent';

CREATE FUNCTION @extschema@.watch(rel regclass, deltas boolean DEFAULT false)
RETURNS void
LANGUAGE sql PARALLEL UNSAFE
SET search_path = pg_catalog
AS $$ SELECT @extschema@.watch(rel, deltas, NULL::text[]) $$;

COMMENT ON FUNCTION @extschema@.watch(regclass, boolean) IS
'Installs the invalidation trigger on a table and its partitions, replacing any other trigger of its name, and with deltas the delta triggers (without scope columns); idempotent';

-- memo.unwatch drops pg_memo's trigger only, and the delta triggers.
CREATE FUNCTION @extschema@.unwatch(rel regclass)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE
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

-- Manual invalidation, for the owner of the table.
CREATE FUNCTION @extschema@.invalidate(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'pg_memo_invalidate'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.invalidate(regclass) IS
'Invalidates the entries that depend on a table or its descendants, now and at commit (table owner)';

-- Read-only: a counter in shared memory.
CREATE FUNCTION @extschema@.generation(rel regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_generation'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.generation(regclass) IS
'The generation counter of a relation: incremented by every committed write, DDL change or memo.invalidate';

-- One row per table of this database that has pg_memo's own trigger.
-- triggers_enabled is false when a DBA disabled (or changed the firing mode
-- of) the trigger: its queries then run uncached, as bypasses, until
-- memo.watch() is run again. deltas: the three delta triggers, enabled
-- ALWAYS; scope_columns: those they carry.
CREATE VIEW @extschema@.watched AS
SELECT t.tgrelid::regclass AS table_name,
       @extschema@.generation(t.tgrelid) AS generation,
       t.tgenabled = 'A' AS triggers_enabled,
       CASE t.tgenabled WHEN 'A' THEN 'always' WHEN 'O' THEN 'origin'
                        WHEN 'R' THEN 'replica' WHEN 'D' THEN 'disabled' END AS trigger_mode,
       (SELECT count(*) = 3 FROM pg_catalog.pg_trigger d
         WHERE d.tgrelid = t.tgrelid AND d.tgenabled = 'A'
           AND d.tgfoid = '@extschema@.delta_trigger()'::pg_catalog.regprocedure) AS deltas,
       @extschema@.scope_columns(t.tgrelid) AS scope_columns
  FROM pg_catalog.pg_trigger t
 WHERE t.tgname = 'pg_memo_invalidate'
   AND t.tgfoid = '@extschema@.invalidation_trigger()'::pg_catalog.regprocedure
   AND @extschema@.is_watch_trigger(t.oid);

COMMENT ON VIEW @extschema@.watched IS
'Tables of this database that have pg_memo''s trigger, their generation and whether the trigger is enabled ALWAYS';

-------------------------------------------------------------------------------
-- Statistics and administration.
--
-- The monitoring functions read shared memory and write nothing: PARALLEL
-- SAFE; they take no argument: CALLED ON NULL INPUT. They are the
-- library's versioned entry points (pg_memo_stats_1_2, ...), which check
-- the number of result columns they are declared with; the library keeps
-- the older ones for databases not yet updated.
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
    OUT stats_reset timestamptz,
    OUT delta_kept bigint,
    OUT delta_corrected bigint,
    OUT delta_fallbacks bigint,
    OUT stale_hits bigint,
    OUT stale_on_error_hits bigint,
    OUT error_hits bigint,
    OUT failures bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_stats_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.stats() IS
'One row per (database, cache name): calls, hits, misses, computations, failures, flights; the source of memo.stats';

-- memo.bypass_reasons: why calls ran their query without the cache, one row
-- per (database, cache name, reason) that counted. refused_plans counts
-- plannings of a registered statement that pg_memo did not serve (not
-- calls: a generic plan is refused once, a statement planned at every
-- execution each time), a column of its own in memo.stats.
CREATE FUNCTION @extschema@.bypass_reasons(OUT dbid oid, OUT cache_name text, OUT reason text,
                                           OUT bypasses bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_bypass_reasons_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.bypass_reasons() IS
'Bypasses by reason, one row per (database, cache name, reason) that counted; the source of memo.stats.bypass_reasons';

-- memo.recompute_reasons: why entries were computed again, one row per
-- (database, cache name, reason) that counted. writes, catalog_changes and
-- the delta_* reasons add up to invalidations (an entry kept by deltas
-- counts where its carry ended); the delta_* reasons alone add up to
-- delta_fallbacks. evicted equals evictions; error_expired counts the
-- remembered errors that outlived their error_ttl, in no other column.
CREATE FUNCTION @extschema@.recompute_reasons(OUT dbid oid, OUT cache_name text, OUT reason text,
                                              OUT recomputations bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_recompute_reasons_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.recompute_reasons() IS
'Entries computed again by reason (writes, catalog_changes, delta_records_missing, delta_query_changed, delta_not_evaluable, evicted, error_expired), one row per (database, cache name, reason) that counted; the source of memo.stats.recompute_reasons';

-- The reasons as jsonb columns at the end. bypass_reasons holds the
-- bypasses only (its values add up to bypasses); refused_plans is a column
-- of its own. NULL where the name is hidden.
CREATE VIEW @extschema@.stats AS
SELECT d.datname, s.*,
       CASE WHEN s.cache_name IS NOT NULL THEN COALESCE(r.bypass_reasons, '{}') END AS bypass_reasons,
       CASE WHEN s.cache_name IS NOT NULL THEN COALESCE(r.refused_plans, 0) END AS refused_plans,
       CASE WHEN s.cache_name IS NOT NULL THEN COALESCE(c.recompute_reasons, '{}') END AS recompute_reasons
  FROM @extschema@.stats() s
  LEFT JOIN pg_catalog.pg_database d ON d.oid = s.dbid
  LEFT JOIN (SELECT b.dbid, b.cache_name,
                    pg_catalog.jsonb_object_agg(b.reason, b.bypasses)
                      FILTER (WHERE b.reason OPERATOR(pg_catalog.<>) 'refused_plans') AS bypass_reasons,
                    pg_catalog.sum(b.bypasses) FILTER (WHERE b.reason OPERATOR(pg_catalog.=) 'refused_plans')::bigint
                      AS refused_plans
               FROM @extschema@.bypass_reasons() b
              GROUP BY b.dbid, b.cache_name) r ON r.dbid = s.dbid AND r.cache_name = s.cache_name
  LEFT JOIN (SELECT x.dbid, x.cache_name, pg_catalog.jsonb_object_agg(x.reason, x.recomputations) AS recompute_reasons
               FROM @extschema@.recompute_reasons() x
              GROUP BY x.dbid, x.cache_name) c ON c.dbid = s.dbid AND c.cache_name = s.cache_name;

COMMENT ON VIEW @extschema@.stats IS
'pg_memo statistics, one row per (database, cache name)';

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
AS 'MODULE_PATHNAME', 'pg_memo_flights_1_1'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flights() IS
'Computations in progress, their leader and waiters; the source of memo.flights';

CREATE VIEW @extschema@.flights AS
SELECT d.datname, f.*
  FROM @extschema@.flights() f
  LEFT JOIN pg_catalog.pg_database d ON d.oid = f.dbid;

COMMENT ON VIEW @extschema@.flights IS
'pg_memo computations in progress (query and parameters shown to their own role and pg_read_all_stats)';

-- The arena, the delta log, the warm restart, and the writes: with
-- memo.stats' invalidations and carries, writing_commits and
-- counters_bumped tell how many entries a write makes stale.
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
    OUT restored_entries bigint,
    OUT writing_commits bigint,
    OUT counters_bumped bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_memo_info_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.info() IS
'The shared arena: its size, bytes used and free, entries, evictions; the delta log; the warm restart; the commits that bumped counters; the source of memo.info';

CREATE VIEW @extschema@.info AS SELECT * FROM @extschema@.info();

COMMENT ON VIEW @extschema@.info IS
'pg_memo''s shared arena (size, bytes used and free, entries, evictions), delta log (size, records written, commits of watched rows that fell back to table-level invalidation), warm restart (when this start restored saved results, how many) and writes (commits on this server that bumped generation counters, and how many counters they bumped)';

-- memo.entries: one row per cached entry, results and remembered errors
-- (kind error). Every role sees its own database's cache names; another
-- database's, the query, the parameters and the relations only the entry's
-- role, superusers and pg_read_all_stats see (parameters can be secrets);
-- the rows and the error only the entry's role and superusers. Read one
-- hash bucket at a time: a hit or a miss waits at most for one bucket's
-- copy.
CREATE FUNCTION @extschema@.entries(
    OUT dbid oid,
    OUT cache_name text,
    OUT kind text,
    OUT userid oid,
    OUT query text,
    OUT params text[],
    OUT bytes bigint,
    OUT rows bigint,
    OUT created timestamptz,
    OUT state text,
    OUT deltas boolean,
    OUT relations oid[],
    OUT error text,
    OUT hits bigint,
    OUT last_hit timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_entries_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.entries() IS
'The cached entries, one row each, read one hash bucket at a time; the source of memo.entries';

-- relations as names only for the current database's entries: another
-- database's OIDs name relations of its own catalog.
CREATE VIEW @extschema@.entries AS
SELECT d.datname, e.dbid, e.cache_name, e.kind, e.userid, pg_catalog.pg_get_userbyid(e.userid) AS role,
       e.query, e.params, e.bytes, e.rows, e.created, e.hits, e.last_hit, e.state, e.deltas,
       CASE WHEN d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
            THEN e.relations::pg_catalog.regclass[] END AS relations,
       e.error
  FROM @extschema@.entries() e
  LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) e.dbid;

COMMENT ON VIEW @extschema@.entries IS
'One row per cached entry: its database, cache name, kind, role, query and parameters (to its role, superusers and pg_read_all_stats), size, rows, when it was stamped, its hits (estimated: one in 16 counted) and last hit, state and relations';

-- The resets write shared memory.
CREATE FUNCTION @extschema@.reset()
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_reset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.reset() IS
'Removes every entry of every database; returns how many (superuser unless granted)';

CREATE FUNCTION @extschema@.reset(cache_name text, database name DEFAULT pg_catalog.current_database())
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_reset_cache_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.reset(text, name) IS
'Removes the entries of one cache name in one database (the current one by default) on this server, results and remembered errors alike; returns how many';

CREATE FUNCTION @extschema@.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_memo_reset_stats'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.reset_stats() IS
'Zeroes the counters of memo.stats in every database, keeping the gauges (superuser unless granted)';

-- Cluster-wide effects: superusers, or roles they grant it to.
REVOKE ALL ON FUNCTION @extschema@.reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.reset(text, name) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.reset_stats() FROM PUBLIC;

-- Monitoring is for everyone, as with pg_stat_statements; memo.flights and
-- memo.entries hide query texts and parameters from roles that do not own
-- them.
GRANT SELECT ON @extschema@.stats, @extschema@.info, @extschema@.watched, @extschema@.flights,
                @extschema@.entries TO PUBLIC;

-------------------------------------------------------------------------------
-- Registered statements, served transparently (src/pg/planner/README.md): a
-- statement registered with memo.cache_statement is served from the cache
-- to every client that runs it, without a change to the client.
--
-- memo.statements: one row per registered statement, by PostgreSQL's query
-- identifier (the one pg_stat_statements shows). Extension configuration, so
-- pg_dump keeps its rows. Written only by memo.cache_statement and
-- memo.uncache_statement, which check the caller; readable by superusers
-- (its texts hold the constants of the statements).
-------------------------------------------------------------------------------

CREATE TABLE @extschema@.statements (
    query_id       bigint      PRIMARY KEY,
    cache_name     text        NOT NULL CHECK (cache_name <> '' AND octet_length(cache_name) <= 63),
    query          text        NOT NULL,
    max_staleness  interval,
    stale_on_error interval,
    error_ttl      interval,
    relations      regclass[]  NOT NULL,
    registered_by  regrole     NOT NULL,
    registered_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON @extschema@.statements FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.statements', '');

COMMENT ON TABLE @extschema@.statements IS
'Statements registered with memo.cache_statement, by query identifier';

-- Every backend keeps a copy of the registrations and reads the table again
-- only after a change to it: this trigger announces every change (also one
-- made with plain DML) as a relcache invalidation, which reaches hot
-- standbys with the commit record.
CREATE FUNCTION @extschema@.statements_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_statements_changed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.statements_changed() IS
'Trigger of memo.statements: every backend reads the registrations again';

CREATE TRIGGER statements_changed
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.statements
FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.statements_changed();

CREATE FUNCTION @extschema@.cache_statement(query text, cache_name text DEFAULT NULL,
                                            max_staleness interval DEFAULT NULL,
                                            stale_on_error interval DEFAULT NULL,
                                            error_ttl interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_cache_statement'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.cache_statement(text, text, interval, interval, interval) IS
'Registers one SELECT over watched tables (a superuser or the owner of every relation it reads); returns its query identifier';

CREATE FUNCTION @extschema@.cache_statement(query_id bigint, cache_name text DEFAULT NULL,
                                            max_staleness interval DEFAULT NULL,
                                            stale_on_error interval DEFAULT NULL,
                                            error_ttl interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_cache_statement_by_id'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.cache_statement(bigint, text, interval, interval, interval) IS
'Registers the statement pg_stat_statements shows under this query identifier';

CREATE FUNCTION @extschema@.uncache_statement(query text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_uncache_statement'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.uncache_statement(text) IS
'Removes the statement''s registration; false if there is none the caller may remove';

CREATE FUNCTION @extschema@.uncache_statement(query_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_uncache_statement_by_id'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.uncache_statement(bigint) IS
'Removes the registration of this query identifier; false if there is none the caller may remove';

CREATE FUNCTION @extschema@.explain_cache(query text, OUT cacheable boolean, OUT query_id bigint,
                                          OUT sqlstate text, OUT reason text, OUT hint text)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_memo_explain_cache'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.explain_cache(text) IS
'Whether memo.cache_statement would take the statement, and if not why, without running it';

-- memo.registered_statements: each registration with its cache's counters
-- (memo.stats, this database) and whether it can serve: a registration
-- whose table was dropped says so (its statement no longer plans).
CREATE VIEW @extschema@.registered_statements AS
SELECT s.query_id, s.cache_name, s.query, s.max_staleness, s.stale_on_error, s.error_ttl,
       s.relations, s.registered_by, s.registered_at,
       CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.unnest(s.relations) AS r(relid)
                          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = r.relid))
            THEN 'a table it reads was dropped' ELSE 'serving' END AS state,
       COALESCE(st.calls, 0) AS calls, COALESCE(st.hits, 0) AS hits, COALESCE(st.misses, 0) AS misses,
       COALESCE(st.computations, 0) AS computations, COALESCE(st.bypasses, 0) AS bypasses,
       COALESCE(st.bypass_reasons, '{}') AS bypass_reasons, COALESCE(st.refused_plans, 0) AS refused_plans,
       COALESCE(st.stale_hits, 0) AS stale_hits, COALESCE(st.entries, 0) AS entries,
       COALESCE(st.mean_compute_ms, 0) AS mean_compute_ms,
       -- each hit saved about one computation's time
       COALESCE(st.hits * st.mean_compute_ms, 0) AS saved_ms
  FROM @extschema@.statements s
  LEFT JOIN @extschema@.stats st ON st.dbid = (SELECT oid FROM pg_catalog.pg_database
                                                WHERE datname = pg_catalog.current_database())
                                AND st.cache_name = s.cache_name;
REVOKE ALL ON @extschema@.registered_statements FROM PUBLIC;

COMMENT ON VIEW @extschema@.registered_statements IS
'Registered statements with their calls, hits, computations and bypasses, and whether they serve';

-- memo.candidates: what to register (ReadySet's workflow, in SQL): the
-- statements pg_stat_statements ranks highest by total time in this
-- database, each with memo.explain_cache's verdict and whether it is
-- registered. A function, not a view: pg_stat_statements is optional and
-- its schema is the DBA's choice. It runs with the caller's search path,
-- which the statements' names are resolved in.
CREATE FUNCTION @extschema@.candidates(top integer DEFAULT 20)
RETURNS TABLE (query_id bigint, calls bigint, total_ms double precision, mean_ms double precision,
               query text, registered boolean, cacheable boolean, sqlstate text, reason text, hint text)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
AS $f$
DECLARE
  pss_schema name;
BEGIN
  IF top IS NULL OR top < 1 THEN
    RAISE EXCEPTION 'top must be at least 1' USING ERRCODE = '22023';
  END IF;
  SELECT n.nspname INTO pss_schema
    FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
   WHERE x.extname = 'pg_stat_statements';
  IF pss_schema IS NULL THEN
    RAISE EXCEPTION 'memo.candidates needs pg_stat_statements'
      USING ERRCODE = '55000',
            HINT = 'Add pg_stat_statements to shared_preload_libraries and run CREATE EXTENSION pg_stat_statements;';
  END IF;
  RETURN QUERY EXECUTE format($q$
    SELECT s.queryid, s.calls, s.total_exec_time, s.mean_exec_time, s.query,
           EXISTS (SELECT 1 FROM @extschema@.statements r WHERE r.query_id OPERATOR(pg_catalog.=) s.queryid),
           e.cacheable, e.sqlstate, e.reason, e.hint
      FROM (SELECT p.queryid, pg_catalog.sum(p.calls)::bigint AS calls,
                   pg_catalog.sum(p.total_exec_time) AS total_exec_time,
                   pg_catalog.sum(p.total_exec_time) / nullif(pg_catalog.sum(p.calls), 0) AS mean_exec_time,
                   pg_catalog.min(p.query) AS query
              FROM %I.pg_stat_statements p
             WHERE p.dbid = (SELECT d.oid FROM pg_catalog.pg_database d
                              WHERE d.datname = pg_catalog.current_database())
               AND p.query OPERATOR(pg_catalog.~*) '^\s*(select|with|table|values|\()'
             GROUP BY p.queryid
             ORDER BY 3 DESC
             LIMIT $1) s
      CROSS JOIN LATERAL @extschema@.explain_cache(s.query) e
     ORDER BY s.total_exec_time DESC$q$, pss_schema)
  USING top;
END
$f$;

COMMENT ON FUNCTION @extschema@.candidates(integer) IS
'The statements pg_stat_statements ranks highest by total time, with whether memo.cache_statement would take each and why not';
