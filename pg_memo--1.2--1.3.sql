-- pg_memo 1.3: statements matched by shape (issue 47; src/pg/admission/):
-- a registration serves every way clients send its statement, a literal or
-- a parameter in the same place, and the integer types, or text and
-- varchar, where a driver picks one or the other. What is served stays
-- keyed by the statement's own text, parameter types and values.
\echo Use "ALTER EXTENSION pg_memo UPDATE TO '1.3'" to load this file. \quit

-------------------------------------------------------------------------------
-- memo.statement_shape(query): the shape of a statement, as the planner hook
-- computes it for a client's statement (docs/reference.md, "Statements
-- matched by shape"): the same for every way of sending it.
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.statement_shape(query text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_statement_shape'
LANGUAGE C STRICT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.statement_shape(text) IS
'The shape of one SELECT: the same however a client sends it (a literal or a parameter, integer types, text or varchar)';

-------------------------------------------------------------------------------
-- memo.statements.shape_id: each registration's shape, which the planner hook
-- matches when a statement's query identifier is not registered itself.
-------------------------------------------------------------------------------

ALTER TABLE @extschema@.statements ADD COLUMN shape_id bigint;

COMMENT ON COLUMN @extschema@.statements.shape_id IS
'The statement''s shape (memo.statement_shape): statements of this shape are served by this registration';

-- The registrations made before: their shapes, with each text's names
-- resolved as when it was registered, as far as that can be told (this
-- script runs with the extension's schema as its search path): in the
-- schemas of the relations it was registered over, after pg_catalog. A
-- shape is stored only when the text, analyzed so, has the registration's
-- own query identifier; otherwise (names resolved elsewhere, a table
-- dropped) the registration keeps none and is served by its query
-- identifier only, as in 1.2.
DO $$
DECLARE
    r record;
    analyzed bigint;
    path text := pg_catalog.current_setting('search_path');
BEGIN
    FOR r IN SELECT s.query_id, s.query,
                    (SELECT pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(n.nspname), ', ')
                       FROM pg_catalog.unnest(s.relations) AS u(relid)
                       JOIN pg_catalog.pg_class c ON c.oid = u.relid
                       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace) AS schemas
               FROM @extschema@.statements s
    LOOP
        BEGIN
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog' || COALESCE(', ' || r.schemas, ''), true);
            SELECT e.query_id INTO analyzed FROM @extschema@.explain_cache(r.query) e;
            IF analyzed IS NOT DISTINCT FROM r.query_id THEN
                UPDATE @extschema@.statements SET shape_id = @extschema@.statement_shape(r.query)
                 WHERE query_id = r.query_id;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            NULL;  -- no shape: served by its query identifier only
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', path, true);
END
$$;

-------------------------------------------------------------------------------
-- memo.candidates (1.3): a statement is registered when a registration serves
-- it, by its query identifier or by its shape; statements that cannot gain
-- from a cache are not candidates: those over system catalogs (an ORM's type
-- and schema lookups), and those that read no relation at all
-- (administrative calls such as SELECT pg_stat_statements_reset()).
-------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION @extschema@.candidates(top integer DEFAULT 20)
RETURNS TABLE (query_id bigint, calls bigint, total_ms double precision, mean_ms double precision,
               query text, registered boolean, cacheable boolean, sqlstate text, reason text, hint text)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
AS $f$
DECLARE
  pss_schema name;
  s record;
  e record;
  shape bigint;
  found integer := 0;
BEGIN
  IF top IS NULL OR top OPERATOR(pg_catalog.<) 1 THEN
    RAISE EXCEPTION 'top must be at least 1' USING ERRCODE = '22023';
  END IF;
  SELECT n.nspname INTO pss_schema
    FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.extnamespace
   WHERE x.extname OPERATOR(pg_catalog.=) 'pg_stat_statements';
  IF pss_schema IS NULL THEN
    RAISE EXCEPTION 'memo.candidates needs pg_stat_statements'
      USING ERRCODE = '55000',
            HINT = 'Add pg_stat_statements to shared_preload_libraries and run CREATE EXTENSION pg_stat_statements;';
  END IF;
  FOR s IN EXECUTE pg_catalog.format($q$
    SELECT p.queryid, pg_catalog.sum(p.calls)::bigint AS calls,
           pg_catalog.sum(p.total_exec_time) AS total_exec_time,
           pg_catalog.sum(p.total_exec_time) OPERATOR(pg_catalog./)
             NULLIF(pg_catalog.sum(p.calls), 0::numeric)::double precision AS mean_exec_time,
           pg_catalog.min(p.query) AS query
      FROM %I.pg_stat_statements p
     WHERE p.dbid OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                      WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
       AND p.query OPERATOR(pg_catalog.~*) '^\s*(select|with|table|values|\()'
       -- a statement without FROM (nor TABLE) reads no relation (its
       -- constants are $n here)
       AND p.query OPERATOR(pg_catalog.~*) '(\mfrom\M|^\s*table\M)'
     GROUP BY p.queryid
     ORDER BY 3 DESC$q$, pss_schema)
  LOOP
    SELECT * INTO e FROM @extschema@.explain_cache(s.query);
    -- a system catalog: its changes fire no triggers, nothing to cache
    CONTINUE WHEN e.sqlstate OPERATOR(pg_catalog.=) '0A000'
              AND e.reason OPERATOR(pg_catalog.~~) 'pg_memo cannot cache queries over system catalog %';
    BEGIN
      shape := @extschema@.statement_shape(s.query);
    EXCEPTION WHEN OTHERS THEN
      shape := NULL;  -- a text that no longer analyzes: no shape to match
    END;
    query_id := s.queryid;
    calls := s.calls;
    total_ms := s.total_exec_time;
    mean_ms := s.mean_exec_time;
    query := s.query;
    registered := EXISTS (SELECT 1 FROM @extschema@.statements r
                           WHERE r.query_id OPERATOR(pg_catalog.=) s.queryid
                              OR r.shape_id OPERATOR(pg_catalog.=) shape);
    cacheable := e.cacheable;
    sqlstate := e.sqlstate;
    reason := e.reason;
    hint := e.hint;
    RETURN NEXT;
    found := found OPERATOR(pg_catalog.+) 1;
    EXIT WHEN found OPERATOR(pg_catalog.>=) top;
  END LOOP;
END
$f$;

COMMENT ON FUNCTION @extschema@.candidates(integer) IS
'The statements pg_stat_statements ranks highest by total time (not those over system catalogs or reading no relation), with whether a registration serves each (by query identifier or shape), whether memo.cache_statement would take it and why not';

-------------------------------------------------------------------------------
-- memo.admission (1.3): automatic admission (pg_memo.admission; docs/
-- reference.md, "Automatic admission"). Each statement shape observed in
-- this database, its state and why, with what it cost and saved. A shape's
-- sample statement and query identifier are shown to the role that sent it
-- and to members of pg_read_all_stats only: a statement's text may hold its
-- values.
-------------------------------------------------------------------------------

CREATE FUNCTION @extschema@.admission_shapes(
    OUT shape_id bigint, OUT state text, OUT reason text, OUT calls bigint, OUT mean_ms double precision,
    OUT served_calls bigint, OUT recomputed bigint, OUT saved_ms double precision, OUT demotions integer,
    OUT state_since timestamptz, OUT userid oid, OUT query_id bigint, OUT query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_memo_admission_1_3'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.admission_shapes() IS
'The rows of memo.admission: each statement shape automatic admission observes in this database';

-- memo.blocked_shapes: the shapes a DBA keeps automatic admission from
-- serving (memo.block_statement), by shape. Extension configuration, so
-- pg_dump keeps its rows; readable by superusers (a text holds the
-- statement's constants). Its trigger makes every backend read the
-- registrations, and with them the blocks, again.
CREATE TABLE @extschema@.blocked_shapes (
    shape_id   bigint      PRIMARY KEY,
    query      text        NOT NULL,
    blocked_by regrole     NOT NULL DEFAULT pg_catalog.quote_ident(CURRENT_USER)::regrole,
    blocked_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON @extschema@.blocked_shapes FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.blocked_shapes', '');

COMMENT ON TABLE @extschema@.blocked_shapes IS
'Statement shapes automatic admission never serves (memo.block_statement)';

CREATE FUNCTION @extschema@.blocked_shapes_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'pg_memo_blocked_shapes_changed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.blocked_shapes_changed() IS
'Trigger of memo.blocked_shapes: every backend reads the registrations and blocks again';

CREATE TRIGGER blocked_shapes_changed
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.blocked_shapes
FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.blocked_shapes_changed();

-- The text is analyzed with the caller's search path, as
-- memo.statement_shape analyzes it.
CREATE FUNCTION @extschema@.block_statement(query text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
AS $f$
DECLARE
  shape bigint := @extschema@.statement_shape(query);
BEGIN
  INSERT INTO @extschema@.blocked_shapes AS b (shape_id, query) VALUES (shape, $1)
  ON CONFLICT (shape_id) DO UPDATE SET query = EXCLUDED.query, blocked_by = DEFAULT, blocked_at = DEFAULT;
  RETURN shape;
END
$f$;

COMMENT ON FUNCTION @extschema@.block_statement(text) IS
'Keeps automatic admission from serving the statements of this statement''s shape; returns the shape';

CREATE FUNCTION @extschema@.unblock_statement(query text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
AS $f$
BEGIN
  DELETE FROM @extschema@.blocked_shapes WHERE shape_id OPERATOR(pg_catalog.=) @extschema@.statement_shape($1);
  RETURN FOUND;
END
$f$;

COMMENT ON FUNCTION @extschema@.unblock_statement(text) IS
'Lets automatic admission serve the statements of this statement''s shape again; false if it was not blocked';

REVOKE ALL ON FUNCTION @extschema@.block_statement(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.unblock_statement(text) FROM PUBLIC;

-- A blocked shape is shown as such, observed or not; its text only to
-- members of pg_read_all_stats, as an observed shape's to others.
CREATE VIEW @extschema@.admission AS
SELECT COALESCE(a.shape_id, b.shape_id) AS shape_id,
       CASE WHEN b.shape_id IS NOT NULL THEN 'blocked' ELSE a.state END AS state,
       CASE WHEN b.shape_id IS NOT NULL
            THEN pg_catalog.format('blocked: by %s (memo.unblock_statement lets it be admitted)', b.blocked_by)
            ELSE a.reason END AS reason,
       COALESCE(a.calls, 0) AS calls, COALESCE(a.mean_ms, 0) AS mean_ms,
       COALESCE(a.served_calls, 0) AS served_calls, COALESCE(a.recomputed, 0) AS recomputed,
       COALESCE(a.saved_ms, 0) AS saved_ms, COALESCE(a.demotions, 0) AS demotions,
       COALESCE(a.state_since, b.blocked_at) AS state_since,
       a.userid, a.query_id,
       CASE WHEN a.shape_id IS NOT NULL THEN a.query
            WHEN pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') THEN b.query END AS query
  FROM @extschema@.admission_shapes() a
  FULL JOIN @extschema@.blocked_shapes b ON b.shape_id OPERATOR(pg_catalog.=) a.shape_id;

COMMENT ON VIEW @extschema@.admission IS
'Statement shapes automatic admission observes (pg_memo.admission) or a DBA blocked: state, reason, cost and saving';

CREATE FUNCTION @extschema@.admission_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pg_memo_admission_reset_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.admission_reset() IS
'Forgets every shape automatic admission observed, admitted or demoted, in every database';

REVOKE ALL ON FUNCTION @extschema@.admission_reset() FROM PUBLIC;
GRANT SELECT ON @extschema@.admission TO PUBLIC;

-------------------------------------------------------------------------------
-- memo.statement_variants() and memo.registered_statements (1.3): the
-- statements pg_stat_statements recorded in this database, each with its
-- shape, so that each registration shows the variants of its shape clients
-- sent (a literal for a parameter, a bigint parameter for an integer one)
-- and says so when it serves nothing while clients send its shape.
-------------------------------------------------------------------------------

-- Each text is analyzed (with the caller's search path), which locks the
-- tables it names: a lock another session holds makes that text's shape
-- unknown after lock_timeout, not the view wait.
CREATE FUNCTION @extschema@.statement_variants()
RETURNS TABLE (shape_id bigint, query_id bigint, calls bigint, query text)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET lock_timeout = '100ms'
AS $f$
DECLARE
  pss_schema name;
  r record;
BEGIN
  SELECT n.nspname INTO pss_schema
    FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.extnamespace
   WHERE x.extname OPERATOR(pg_catalog.=) 'pg_stat_statements';
  IF pss_schema IS NULL THEN
    RETURN;  -- nothing recorded: no variants
  END IF;
  FOR r IN EXECUTE pg_catalog.format($q$
      SELECT p.queryid, pg_catalog.sum(p.calls)::bigint AS calls, pg_catalog.min(p.query) AS query
        FROM %I.pg_stat_statements p
       WHERE p.dbid OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                        WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
         AND p.query OPERATOR(pg_catalog.~*) '^\s*(select|with|table)\M'
       GROUP BY p.queryid$q$, pss_schema)
  LOOP
    BEGIN
      shape_id := @extschema@.statement_shape(r.query);
    EXCEPTION WHEN OTHERS THEN
      CONTINUE;  -- a text that does not analyze here (another search path, a dropped table, a lock)
    END;
    query_id := r.queryid;
    calls := r.calls;
    query := r.query;
    RETURN NEXT;
  END LOOP;
END
$f$;

COMMENT ON FUNCTION @extschema@.statement_variants() IS
'The read statements pg_stat_statements recorded in this database, each with its shape (none without pg_stat_statements)';

CREATE OR REPLACE VIEW @extschema@.registered_statements AS
WITH variants AS MATERIALIZED (SELECT * FROM @extschema@.statement_variants())
SELECT s.query_id, s.cache_name, s.query, s.max_staleness, s.stale_on_error, s.error_ttl,
       s.relations, s.registered_by, s.registered_at,
       CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.unnest(s.relations) AS r(relid)
                          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = r.relid))
            THEN 'a table it reads was dropped'
            WHEN COALESCE(st.calls, 0) = 0 AND COALESCE(v.calls, 0) > 0
            THEN pg_catalog.format('serves nothing, while pg_stat_statements has %s calls of its shape', v.calls)
            ELSE 'serving' END AS state,
       COALESCE(st.calls, 0) AS calls, COALESCE(st.hits, 0) AS hits, COALESCE(st.misses, 0) AS misses,
       COALESCE(st.computations, 0) AS computations, COALESCE(st.bypasses, 0) AS bypasses,
       COALESCE(st.bypass_reasons, '{}') AS bypass_reasons, COALESCE(st.refused_plans, 0) AS refused_plans,
       COALESCE(st.stale_hits, 0) AS stale_hits, COALESCE(st.entries, 0) AS entries,
       COALESCE(st.mean_compute_ms, 0) AS mean_compute_ms,
       -- each hit saved about one computation's time
       COALESCE(st.hits * st.mean_compute_ms, 0) AS saved_ms,
       s.shape_id,
       COALESCE(v.variants, 0) AS variants,
       COALESCE(v.calls, 0) AS variant_calls
  FROM @extschema@.statements s
  LEFT JOIN @extschema@.stats st ON st.dbid = (SELECT oid FROM pg_catalog.pg_database
                                                WHERE datname = pg_catalog.current_database())
                                AND st.cache_name = s.cache_name
  LEFT JOIN LATERAL (SELECT pg_catalog.count(*) AS variants, pg_catalog.sum(vv.calls)::bigint AS calls
                       FROM variants vv
                      WHERE vv.shape_id = s.shape_id OR vv.query_id = s.query_id) v ON true;

COMMENT ON VIEW @extschema@.registered_statements IS
'Registered statements with their calls, hits, computations and bypasses, whether they serve, and the statements of their shape pg_stat_statements recorded';
