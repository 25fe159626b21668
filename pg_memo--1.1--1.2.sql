-- pg_memo 1.2: registered statements, the first step of transparent
-- serving (issue 30; src/pg/planner/README.md). Registrations are kept and
-- checked; serving them is not built yet.
\echo Use "ALTER EXTENSION pg_memo UPDATE TO '1.2'" to load this file. \quit

-------------------------------------------------------------------------------
-- memo.statements: one row per registered statement, by PostgreSQL's query
-- identifier (the one pg_stat_statements shows). Extension configuration, so
-- pg_dump keeps its rows. Written only by memo.cache_statement and
-- memo.uncache_statement, which check the caller; readable by superusers
-- (its texts hold the constants of the statements).
-------------------------------------------------------------------------------

CREATE TABLE @extschema@.statements (
    query_id       bigint      PRIMARY KEY,
    cache_name     text        NOT NULL CHECK (cache_name <> ''),
    query          text        NOT NULL,
    max_staleness  interval,
    stale_on_error boolean,
    error_ttl      interval,
    relations      regclass[]  NOT NULL,
    registered_by  regrole     NOT NULL,
    registered_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON @extschema@.statements FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.statements', '');

COMMENT ON TABLE @extschema@.statements IS
'Statements registered with memo.cache_statement, by query identifier';

CREATE FUNCTION @extschema@.cache_statement(query text, cache_name text DEFAULT NULL,
                                            max_staleness interval DEFAULT NULL,
                                            stale_on_error boolean DEFAULT NULL,
                                            error_ttl interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_cache_statement'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.cache_statement(text, text, interval, boolean, interval) IS
'Registers one SELECT over watched tables (a superuser or the owner of every relation it reads); returns its query identifier';

CREATE FUNCTION @extschema@.cache_statement(query_id bigint, cache_name text DEFAULT NULL,
                                            max_staleness interval DEFAULT NULL,
                                            stale_on_error boolean DEFAULT NULL,
                                            error_ttl interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_memo_cache_statement_by_id'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION @extschema@.cache_statement(bigint, text, interval, boolean, interval) IS
'Registers the statement pg_stat_statements shows under this query identifier';

CREATE FUNCTION @extschema@.uncache_statement(query text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_uncache_statement'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION @extschema@.uncache_statement(query_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_memo_uncache_statement_by_id'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION @extschema@.uncache_statement(text) IS
'Removes the statement''s registration; false if there is none the caller may remove';
COMMENT ON FUNCTION @extschema@.uncache_statement(bigint) IS
'Removes the registration of this query identifier; false if there is none the caller may remove';

CREATE FUNCTION @extschema@.explain_cache(query text, OUT cacheable boolean, OUT query_id bigint,
                                          OUT sqlstate text, OUT reason text, OUT hint text)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_memo_explain_cache'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION @extschema@.explain_cache(text) IS
'Whether memo.cache_statement would take the statement, and if not why, without running it';
