-- pg_memo_directory 1.0 -> 1.1: directory.cached_count_employees, the total
-- of a listing on its own.
--
-- cached_list_employees carries the total in every row (total_count), so a
-- page past the end, or filters that match nothing, return no rows and no
-- total. The companion returns the total alone, from the very memo.count
-- entry the listing uses: after a listing, it is a cache hit.
--
-- A new install of 1.1 runs pg_memo_directory--1.0.sql, then this script.
\echo Use "ALTER EXTENSION pg_memo_directory UPDATE TO '1.1'" to load this file. \quit

-- The arguments go through the listing's own builder (build_list_query,
-- src/list_query.cpp), with a fixed valid page, page size and sort: the
-- same checks, with the same SQLSTATEs and messages, and the same count
-- query and parameters, which depend on the scope and the filters only.
-- The cache name is the one cached_list_employees gives memo.count, so both
-- share one entry. No SET clause and no SECURITY DEFINER: pg_memo's key
-- includes the current user and the search_path, which must be the
-- caller's, as they are for cached_list_employees.
CREATE FUNCTION directory.cached_count_employees(scope_root bigint, filters jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $$
DECLARE
    q directory.list_query := directory.build_list_query(scope_root, 1, 1, 'full_name:asc', filters);
    total bigint;
BEGIN
    -- The count includes a sentinel row for the scope root itself.
    total := memo.count('employees.count', q.count_sql, q.count_params) - 1;
    IF total < 0 THEN  -- no sentinel row: the scope root does not exist
        RAISE EXCEPTION 'scope_root % is not an employee', scope_root USING ERRCODE = '22023';
    END IF;
    RETURN total;
END;
$$;

COMMENT ON FUNCTION directory.cached_count_employees(bigint, jsonb) IS
'The number of rows matching scope and filters across all pages (the total_count of cached_list_employees), memoized by pg_memo in the same entry';

-- Writes keep the listings by deltas (pg_memo 1.1): a write that cannot
-- change a cached page leaves it valid, and the counts are corrected
-- instead of recomputed. The pages' entries no longer hold the total
-- (cached_list_employees writes it into the rows), so a hire changes no
-- page's key. With pg_memo still at 1.0, the table stays watched as before
-- until both are updated and this is run again.
DO $$
BEGIN
    IF to_regprocedure('memo.watch(regclass, boolean)') IS NOT NULL THEN
        PERFORM memo.watch('directory.employees', deltas => true);
    ELSE
        RAISE WARNING 'pg_memo is older than 1.1: directory.employees is watched without deltas'
            USING HINT = 'Run ALTER EXTENSION pg_memo UPDATE, then SELECT memo.watch(''directory.employees'', deltas => true);';
    END IF;
END;
$$;
