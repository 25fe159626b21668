\set ECHO none
-- Included at the top of every suite: pg_memo and the helpers the suites
-- share. Idempotent and silent (not echoed, no notices), so that a suite
-- runs alone (make installcheck REGRESS=ddl TAP_TESTS=) or after the
-- others, with the same output.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_memo;
RESET client_min_messages;

-- Counters of one cache name, for assertions.
CREATE OR REPLACE FUNCTION counters(name text)
RETURNS TABLE (calls bigint, hits bigint, misses bigint, computations bigint,
               bypasses bigint, invalidations bigint, entries bigint)
LANGUAGE sql AS $$
  SELECT calls, hits, misses, computations, bypasses, invalidations, entries
    FROM memo.stats WHERE datname = current_database() AND cache_name = name
$$;

-- Computations of one cache name that raised an error (refusals too).
CREATE OR REPLACE FUNCTION failures(name text) RETURNS bigint
LANGUAGE sql AS $$
  SELECT failures FROM memo.stats WHERE datname = current_database() AND cache_name = name
$$;

-- Runs a memo call (a statement returning one value) twice and says whether
-- the second time was a hit: a change made next is then the only thing that
-- can change the next result ("current: <value>"; "NOT A HIT" otherwise).
CREATE OR REPLACE FUNCTION warm(cache text, call text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  hits_before bigint;
  result text;
BEGIN
  EXECUTE call INTO result;
  SELECT hits INTO hits_before FROM counters(cache);
  EXECUTE call INTO result;
  RETURN CASE WHEN (SELECT hits FROM counters(cache)) > hits_before THEN 'current: ' ELSE 'NOT A HIT: ' END || result;
END $$;

-- Shows the SQLSTATE and message of whatever the statement raises.
CREATE OR REPLACE FUNCTION try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

\set ECHO all
