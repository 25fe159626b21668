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
