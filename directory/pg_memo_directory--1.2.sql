-- pg_memo_directory 1.2: an employee directory served through pg_memo.
--
-- The whole of 1.2 in one install script: every object's current
-- definition, as pg_memo_directory--1.0.sql, --1.0--1.1.sql and
-- --1.1--1.2.sql leave it. CREATE EXTENSION pg_memo_directory runs this
-- file alone; a database at 1.0 or 1.1 reaches the same objects through
-- ALTER EXTENSION pg_memo_directory UPDATE
-- (test/t/022_admin_install_script.pl compares the two). Frozen from the
-- 1.2 release on, as the 1.0 and 1.1 scripts are: later changes go into
-- pg_memo_directory--1.2--1.3.sql.
--
-- directory.list_employees          the uncached truth
-- directory.cached_list_employees   the same rows through memo.count + memo.list_as
-- directory.cached_count_employees  the total alone, from the same memo.count entry
-- directory.directory_seed          deterministic, set-based org chart generator
-- directory.hire_employee, move_employee, rename_employee, remove_employee
--                                   writes that keep the derived columns exact
-- directory.check_consistency       recomputes the derived columns from manager_id
\echo Use "CREATE EXTENSION pg_memo_directory CASCADE" to load this file. \quit

GRANT USAGE ON SCHEMA directory TO PUBLIC;

-------------------------------------------------------------------------------
-- The table
--
-- path is the chain of ids from the CEO down to the employee itself
-- ({1,4,57,803}); "in the subtree of S" is path @> ARRAY[S], which a GIN
-- index answers and which uses only built-in, immutable operators, so the
-- memoized query text needs nothing from another extension's schema.
-- org_depth (CEO = 0) and sub_org_size (the employee plus everyone below)
-- are stored, kept exact by the write functions below; a statement trigger
-- refuses structural writes that bypass them.
-------------------------------------------------------------------------------

CREATE SEQUENCE directory.employees_id_seq;

CREATE TABLE directory.employees (
    id           bigint  PRIMARY KEY DEFAULT nextval('directory.employees_id_seq'),
    manager_id   bigint  REFERENCES directory.employees (id),
    full_name    text    NOT NULL,
    email        text    NOT NULL,
    title        text    NOT NULL,
    department   text    NOT NULL,
    location     text    NOT NULL,
    hired_on     date    NOT NULL,
    path         bigint[] NOT NULL,
    org_depth    integer NOT NULL,
    sub_org_size bigint  NOT NULL,
    CONSTRAINT employees_path_ends_with_id CHECK (path[cardinality(path)] = id),
    CONSTRAINT employees_path_matches_manager
        CHECK (manager_id IS NOT DISTINCT FROM path[cardinality(path) - 1]),
    CONSTRAINT employees_depth_matches_path CHECK (org_depth = cardinality(path) - 1),
    CONSTRAINT employees_sub_org_size_positive CHECK (sub_org_size >= 1)
);

ALTER SEQUENCE directory.employees_id_seq OWNED BY directory.employees.id;

COMMENT ON TABLE directory.employees IS
'The org chart; path, org_depth and sub_org_size are maintained by the directory functions';
COMMENT ON COLUMN directory.employees.path IS
'Ids from the CEO down to this employee, inclusive';
COMMENT ON COLUMN directory.employees.org_depth IS
'Number of managers above this employee (the CEO is 0)';
COMMENT ON COLUMN directory.employees.sub_org_size IS
'Head count of the sub-organisation this employee leads, the employee included (1 for a leaf)';

-- At most one root.
CREATE UNIQUE INDEX employees_single_root ON directory.employees ((true)) WHERE manager_id IS NULL;
-- Direct reports, and the foreign key's checks on delete.
CREATE INDEX employees_manager_id ON directory.employees (manager_id);
-- Subtree membership: path @> ARRAY[scope].
CREATE INDEX employees_path ON directory.employees USING gin (path);
-- One (key, id) index per sort key: the tie-breaker is part of the index, so
-- a page is an index range in either direction.
CREATE INDEX employees_full_name_id  ON directory.employees (full_name, id);
CREATE INDEX employees_title_id      ON directory.employees (title, id);
CREATE INDEX employees_department_id ON directory.employees (department, id);
CREATE INDEX employees_location_id   ON directory.employees (location, id);
CREATE INDEX employees_hired_on_id   ON directory.employees (hired_on, id);
CREATE INDEX employees_org_depth_id  ON directory.employees (org_depth, id);
-- name_prefix: LIKE 'prefix%' under a non-C collation needs pattern ops.
CREATE INDEX employees_full_name_pattern ON directory.employees (full_name text_pattern_ops);

-- Not marked with pg_extension_config_dump: a restore's COPY would meet the
-- structural write guard below. The rows are a workload; re-seed them.

GRANT SELECT ON directory.employees TO PUBLIC;

-- Writes invalidate the memoized listings at commit, and only those they
-- can change:
-- - deltas (pg_memo 1.1): a write that cannot change a cached page leaves
--   it valid, and the counts are corrected instead of recomputed. The
--   pages' entries do not hold the total (cached_list_employees writes it
--   into the rows), so a hire changes no page's key.
-- - scope columns (pg_memo 1.2, docs/consistency.md "Scopes"): a page or
--   count of the subtree of S (path @> ARRAY[S]; the count also reads
--   e.id = S) is made stale only by writes to rows whose old or new path
--   holds S: a team's by writes in that team, the CEO's by every write.
-- With an older pg_memo the table is watched as that version can, until
-- both are updated and the call in the hint is run.
DO $$
BEGIN
    IF to_regprocedure('memo.watch(regclass, boolean, text[])') IS NOT NULL THEN
        PERFORM memo.watch('directory.employees', true, '{path, id}');
    ELSIF to_regprocedure('memo.watch(regclass, boolean)') IS NOT NULL THEN
        PERFORM memo.watch('directory.employees', deltas => true);
        RAISE WARNING 'pg_memo is older than 1.2: directory.employees is watched without scope columns'
            USING HINT = 'Run ALTER EXTENSION pg_memo UPDATE, then SELECT memo.watch(''directory.employees'', true, ''{path, id}'');';
    ELSE
        PERFORM memo.watch('directory.employees');
        RAISE WARNING 'pg_memo is older than 1.1: directory.employees is watched without deltas'
            USING HINT = 'Run ALTER EXTENSION pg_memo UPDATE, then SELECT memo.watch(''directory.employees'', true, ''{path, id}'');';
    END IF;
END;
$$;

-------------------------------------------------------------------------------
-- Structural writes go through the functions below
-------------------------------------------------------------------------------

CREATE FUNCTION directory.structural_write_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF pg_catalog.current_setting('directory.structural_write', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'direct % directory.employees is not supported',
                        CASE TG_OP WHEN 'INSERT' THEN 'INSERT into' WHEN 'DELETE' THEN 'DELETE from'
                                   ELSE 'UPDATE of id, manager_id, path, org_depth or sub_org_size in' END
            USING ERRCODE = '0A000',
                  DETAIL = 'path, org_depth and sub_org_size are derived from manager_id and must stay exact.',
                  HINT = 'Use directory.hire_employee, directory.move_employee, directory.remove_employee or directory.directory_seed; other columns may be updated directly.';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER employees_structural_write_guard
    BEFORE INSERT OR DELETE OR UPDATE OF id, manager_id, path, org_depth, sub_org_size
    ON directory.employees
    FOR EACH STATEMENT EXECUTE FUNCTION directory.structural_write_guard();

-- Structural writers run one at a time (SHARE ROW EXCLUSIVE conflicts with
-- itself and with other writers, not with readers), each statement with a
-- snapshot taken after the lock: READ COMMITTED only.
CREATE FUNCTION directory.begin_structural_write()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'directory writes require READ COMMITTED isolation, not %',
                        pg_catalog.current_setting('transaction_isolation')
            USING ERRCODE = '0A000',
                  DETAIL = 'They read the hierarchy after taking the table lock; an older snapshot would miss concurrent moves.';
    END IF;
    LOCK TABLE directory.employees IN SHARE ROW EXCLUSIVE MODE;
END;
$$;

CREATE FUNCTION directory.require_argument(value anyelement, name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    IF value IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', name USING ERRCODE = '22023';
    END IF;
END;
$$;

-------------------------------------------------------------------------------
-- Listing: one validation and query builder for both the uncached truth and
-- the memoized path
-------------------------------------------------------------------------------

-- One row of a listing, as both list functions return it. The page query
-- selects exactly these columns, total_count included, so that a cached page
-- is returned as stored, without a projection. (A named row type rather than
-- RETURNS TABLE: the executor takes it from the type cache, instead of
-- building it from the function's OUT arguments on every call.)
CREATE TYPE directory.employee_row AS (
    id           bigint,
    full_name    text,
    title        text,
    department   text,
    location     text,
    manager_id   bigint,
    org_depth    integer,
    sub_org_size bigint,
    total_count  bigint
);

-- count_sql: the rows matching scope and filters, plus one sentinel row for
-- the scope root itself, so that one memoized count answers both "how many"
-- and "does the scope exist" (0 means it does not). Its params are the scope
-- and the filter values: no page, no sort.
-- page_sql: one page of directory.employee_row. page_params add limit and
-- offset to count_params; the query takes one more parameter, last, that the
-- caller appends: total_count, which the count query gives.
CREATE TYPE directory.list_query AS (
    count_sql    text,
    count_params text[],
    page_sql     text,
    page_params  text[]
);

-- In C (src/list_query.cpp), shared with cached_list_employees: checks the
-- arguments (22023 naming the problem) and builds both queries. The SQL text
-- depends only on the sort and on which filter keys are present; values
-- travel as parameters.
CREATE FUNCTION directory.build_list_query(
    scope_root bigint, page integer, page_size integer, sort text, filters jsonb)
RETURNS directory.list_query
LANGUAGE c IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'directory_build_list_query';

COMMENT ON FUNCTION directory.build_list_query(bigint, integer, integer, text, jsonb) IS
'Validates list arguments and builds the count and page queries shared by list_employees and cached_list_employees';

-- The truth: both queries run directly, with the caller's snapshot.
CREATE FUNCTION directory.list_employees(
    scope_root bigint, page integer DEFAULT 1, page_size integer DEFAULT 20,
    sort text DEFAULT 'full_name:asc', filters jsonb DEFAULT '{}')
RETURNS SETOF directory.employee_row
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    q directory.list_query := directory.build_list_query(scope_root, page, page_size, sort, filters);
    p text[] := q.count_params;
    total bigint;
BEGIN
    -- The count query takes at most 5 parameters (the scope, 4 filters),
    -- the page query 8 (plus limit, offset and total); unused ones are NULL
    -- and unreferenced.
    EXECUTE 'SELECT count(*) - 1 FROM (' || q.count_sql || ') AS c'
       INTO total USING p[1], p[2], p[3], p[4], p[5];
    IF total < 0 THEN  -- no sentinel row: the scope root does not exist
        RAISE EXCEPTION 'scope_root % is not an employee', scope_root USING ERRCODE = '22023';
    END IF;
    p := q.page_params || total::text;
    RETURN QUERY EXECUTE q.page_sql USING p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8];
END;
$$;

COMMENT ON FUNCTION directory.list_employees(bigint, integer, integer, text, jsonb) IS
'One page of the sub-organisation under scope_root, filtered and sorted; uncached';

-- The same through pg_memo: one memo.count ('employees.count', keyed by
-- scope and filters) and one memo.list_as ('employees.page', keyed by scope,
-- filters, sort, page, page size and the total), called from C
-- (src/cached_list.cpp) so that a hit is the builder, two lookups and one
-- copy of the stored rows into the result.
CREATE FUNCTION directory.cached_list_employees(
    scope_root bigint, page integer DEFAULT 1, page_size integer DEFAULT 20,
    sort text DEFAULT 'full_name:asc', filters jsonb DEFAULT '{}')
RETURNS SETOF directory.employee_row
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'directory_cached_list_employees';

COMMENT ON FUNCTION directory.cached_list_employees(bigint, integer, integer, text, jsonb) IS
'Same arguments and rows as list_employees, memoized by pg_memo';

-- The total of a listing on its own. cached_list_employees carries the
-- total in every row (total_count), so a page past the end, or filters
-- that match nothing, return no rows and no total. This returns the total
-- alone, from the very memo.count entry the listing uses: after a listing,
-- it is a cache hit.
--
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

-------------------------------------------------------------------------------
-- Writes
-------------------------------------------------------------------------------

CREATE FUNCTION directory.hire_employee(
    manager bigint, full_name text, title text DEFAULT 'Associate',
    department text DEFAULT NULL, location text DEFAULT NULL,
    hired_on date DEFAULT NULL, email text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET directory.structural_write = 'on'
AS $$
DECLARE
    m record;
    new_id bigint;
BEGIN
    PERFORM directory.require_argument(manager, 'manager');
    PERFORM directory.require_argument(full_name, 'full_name');
    PERFORM directory.require_argument(title, 'title');
    PERFORM directory.begin_structural_write();
    SELECT e.path, e.department, e.location INTO m FROM directory.employees e WHERE e.id = manager;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'manager % is not an employee', manager USING ERRCODE = '22023';
    END IF;
    new_id := pg_catalog.nextval('directory.employees_id_seq');
    INSERT INTO directory.employees AS e
           (id, manager_id, full_name, email, title, department, location, hired_on,
            path, org_depth, sub_org_size)
    VALUES (new_id, manager, hire_employee.full_name,
            coalesce(hire_employee.email,
                     pg_catalog.lower(pg_catalog.regexp_replace(hire_employee.full_name, '[^A-Za-z]+', '.', 'g'))
                     || '.' || new_id || '@example.com'),
            hire_employee.title,
            coalesce(hire_employee.department, m.department),
            coalesce(hire_employee.location, m.location),
            coalesce(hire_employee.hired_on, CURRENT_DATE),
            m.path || new_id, pg_catalog.cardinality(m.path), 1);
    UPDATE directory.employees a SET sub_org_size = a.sub_org_size + 1 WHERE a.id = ANY (m.path);
    RETURN new_id;
END;
$$;

COMMENT ON FUNCTION directory.hire_employee(bigint, text, text, text, text, date, text) IS
'Adds an employee under manager (department and location default to the manager''s); returns the new id';

CREATE FUNCTION directory.move_employee(emp bigint, new_manager bigint)
RETURNS void
LANGUAGE plpgsql
SET directory.structural_write = 'on'
AS $$
DECLARE
    e record;
    m record;
    k integer;
BEGIN
    PERFORM directory.require_argument(emp, 'emp');
    PERFORM directory.require_argument(new_manager, 'new_manager');
    PERFORM directory.begin_structural_write();
    SELECT x.manager_id, x.path, x.sub_org_size INTO e FROM directory.employees x WHERE x.id = emp;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'employee % does not exist', emp USING ERRCODE = '22023';
    END IF;
    SELECT x.path INTO m FROM directory.employees x WHERE x.id = new_manager;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'manager % is not an employee', new_manager USING ERRCODE = '22023';
    END IF;
    IF emp = new_manager THEN
        RAISE EXCEPTION 'cannot move employee % under itself', emp USING ERRCODE = '22023';
    END IF;
    IF m.path @> ARRAY[emp] THEN
        RAISE EXCEPTION 'cannot move employee % under %, which is in its own sub-organisation', emp, new_manager
            USING ERRCODE = '22023';
    END IF;
    IF e.manager_id = new_manager THEN
        RETURN;
    END IF;
    k := pg_catalog.cardinality(e.path);  -- emp's own position in its path

    -- Old ancestors lose the sub-organisation, new ones gain it; the common
    -- ones (from the lowest common manager up) are unchanged.
    UPDATE directory.employees a
       SET sub_org_size = a.sub_org_size + d.delta
      FROM (SELECT u.anc, sum(u.delta) AS delta
              FROM (SELECT pg_catalog.unnest(e.path[1:k - 1]) AS anc, -e.sub_org_size AS delta
                    UNION ALL
                    SELECT pg_catalog.unnest(m.path), e.sub_org_size) AS u
             GROUP BY u.anc
            HAVING sum(u.delta) <> 0) AS d
     WHERE a.id = d.anc;

    UPDATE directory.employees s
       SET path = m.path || s.path[k:],
           org_depth = pg_catalog.cardinality(m.path) + pg_catalog.cardinality(s.path) - k,
           manager_id = CASE WHEN s.id = emp THEN new_manager ELSE s.manager_id END
     WHERE s.path @> ARRAY[emp];
END;
$$;

COMMENT ON FUNCTION directory.move_employee(bigint, bigint) IS
'Moves an employee and their whole sub-organisation under new_manager';

CREATE FUNCTION directory.rename_employee(emp bigint, new_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM directory.require_argument(emp, 'emp');
    PERFORM directory.require_argument(new_name, 'new_name');
    UPDATE directory.employees x SET full_name = new_name WHERE x.id = emp;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'employee % does not exist', emp USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION directory.rename_employee(bigint, text) IS 'Changes an employee''s full_name';

-- The employee leaves; their direct reports move up to their manager.
CREATE FUNCTION directory.remove_employee(emp bigint)
RETURNS void
LANGUAGE plpgsql
SET directory.structural_write = 'on'
AS $$
DECLARE
    e record;
    k integer;
BEGIN
    PERFORM directory.require_argument(emp, 'emp');
    PERFORM directory.begin_structural_write();
    SELECT x.manager_id, x.path, x.sub_org_size INTO e FROM directory.employees x WHERE x.id = emp;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'employee % does not exist', emp USING ERRCODE = '22023';
    END IF;
    IF e.manager_id IS NULL AND e.sub_org_size > 1 THEN
        RAISE EXCEPTION 'cannot remove the root employee % while others report to it', emp
            USING ERRCODE = '22023';
    END IF;
    k := pg_catalog.cardinality(e.path);
    UPDATE directory.employees a SET sub_org_size = a.sub_org_size - 1 WHERE a.id = ANY (e.path[1:k - 1]);
    UPDATE directory.employees s
       SET path = s.path[1:k - 1] || s.path[k + 1:],
           org_depth = s.org_depth - 1,
           manager_id = CASE WHEN s.manager_id = emp THEN e.manager_id ELSE s.manager_id END
     WHERE s.path @> ARRAY[emp] AND s.id <> emp;
    DELETE FROM directory.employees x WHERE x.id = emp;
END;
$$;

COMMENT ON FUNCTION directory.remove_employee(bigint) IS
'Deletes an employee; their direct reports then report to the employee''s manager';

-- Rows whose stored path, org_depth or sub_org_size differ from what
-- manager_id implies (recomputed from scratch); no rows means consistent.
CREATE FUNCTION directory.check_consistency()
RETURNS TABLE (id bigint, problem text, stored text, expected text)
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE tree AS (
        SELECT e.id, ARRAY[e.id] AS path
          FROM directory.employees e WHERE e.manager_id IS NULL
        UNION ALL
        SELECT c.id, t.path || c.id
          FROM directory.employees c JOIN tree t ON c.manager_id = t.id
    ), sizes AS (
        SELECT a.id, count(*) AS n FROM tree t, unnest(t.path) AS a(id) GROUP BY a.id
    ), truth AS (
        SELECT e.id, e.path, e.org_depth, e.sub_org_size,
               t.path AS t_path, cardinality(t.path) - 1 AS t_depth, s.n AS t_size
          FROM directory.employees e
          LEFT JOIN tree t ON t.id = e.id
          LEFT JOIN sizes s ON s.id = e.id
    )
    SELECT x.id, x.problem, x.stored, x.expected
      FROM truth,
           LATERAL (VALUES (truth.id, 'path', truth.path::text, truth.t_path::text),
                           (truth.id, 'org_depth', truth.org_depth::text, truth.t_depth::text),
                           (truth.id, 'sub_org_size', truth.sub_org_size::text, truth.t_size::text))
               AS x(id, problem, stored, expected)
     WHERE x.stored IS DISTINCT FROM x.expected
     ORDER BY x.id, x.problem;
$$;

COMMENT ON FUNCTION directory.check_consistency() IS
'Rows whose path, org_depth or sub_org_size disagree with manager_id; empty when consistent';

-------------------------------------------------------------------------------
-- Deterministic seed
-------------------------------------------------------------------------------

-- A uniform double in [0, 1) from (key, salt): hash-based, so the same
-- arguments give the same tree whatever plan the queries get.
CREATE FUNCTION directory.seed_unit(key bigint, salt bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((pg_catalog.hashint8extended(key, salt) >> 11) & 9007199254740991)::double precision
       / 9007199254740992.0;

-- An integer in [0, n) from (key, salt).
CREATE FUNCTION directory.seed_pick(key bigint, salt bigint, n integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((pg_catalog.hashint8extended(key, salt) & 2147483647) % n)::integer;

CREATE FUNCTION directory.seed_first_names()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[
    'Aaliyah', 'Adam', 'Aisha', 'Alejandro', 'Alice', 'Amara', 'Andrew', 'Ana', 'Arjun', 'Ava',
    'Ben', 'Camila', 'Carlos', 'Chen', 'Chloe', 'Daniel', 'David', 'Diego', 'Elena', 'Emeka',
    'Emily', 'Emma', 'Ethan', 'Fatima', 'Felix', 'Gabriel', 'Grace', 'Hannah', 'Hiroshi', 'Ibrahim',
    'Isabella', 'Ivan', 'Jack', 'James', 'Javier', 'Jin', 'Julia', 'Kai', 'Karen', 'Kenji',
    'Laura', 'Leila', 'Liam', 'Lucas', 'Maria', 'Mateo', 'Maya', 'Mei', 'Michael', 'Mohammed',
    'Nadia', 'Noah', 'Olivia', 'Omar', 'Priya', 'Rafael', 'Ravi', 'Rosa', 'Samuel', 'Sara',
    'Sofia', 'Sophie', 'Thomas', 'Wei', 'William', 'Yara', 'Yuki', 'Zoe'];

CREATE FUNCTION directory.seed_last_names()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[
    'Adams', 'Ahmed', 'Ali', 'Anderson', 'Bauer', 'Brown', 'Chen', 'Clark', 'Cohen', 'Costa',
    'Davis', 'Dubois', 'Evans', 'Fernandez', 'Fischer', 'Garcia', 'Gonzalez', 'Gupta', 'Hall', 'Hernandez',
    'Hughes', 'Ito', 'Jackson', 'Johnson', 'Jones', 'Kim', 'Kowalski', 'Kumar', 'Lee', 'Lewis',
    'Lopez', 'Martin', 'Martinez', 'Mendes', 'Miller', 'Moore', 'Muller', 'Murphy', 'Nakamura', 'Nguyen',
    'Novak', 'Okafor', 'Olsen', 'Park', 'Patel', 'Perez', 'Petrov', 'Rossi', 'Sanchez', 'Santos',
    'Schmidt', 'Sharma', 'Silva', 'Singh', 'Smith', 'Suzuki', 'Tanaka', 'Taylor', 'Thomas', 'Walker',
    'Wang', 'White', 'Williams', 'Wilson', 'Wong', 'Yamamoto', 'Young', 'Zhang'];

-- Index 0 is the CEO's office; 1..8 are the executives' departments.
CREATE FUNCTION directory.seed_departments()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY['Executive Office', 'Engineering', 'Sales', 'Marketing', 'Finance',
             'Operations', 'Human Resources', 'Legal', 'Product'];

CREATE FUNCTION directory.seed_executive_titles()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY['Chief Executive Officer', 'Chief Technology Officer', 'Chief Revenue Officer',
             'Chief Marketing Officer', 'Chief Financial Officer', 'Chief Operating Officer',
             'Chief People Officer', 'General Counsel', 'Chief Product Officer'];

-- Individual contributor titles, one row of six per department (1..8).
CREATE FUNCTION directory.seed_ic_titles()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[
    ['Software Engineer', 'Senior Software Engineer', 'Staff Software Engineer',
     'Site Reliability Engineer', 'QA Engineer', 'Data Engineer'],
    ['Account Executive', 'Senior Account Executive', 'Sales Development Representative',
     'Solutions Engineer', 'Account Manager', 'Sales Operations Analyst'],
    ['Marketing Specialist', 'Content Strategist', 'Product Marketing Manager',
     'Growth Marketer', 'Brand Designer', 'Marketing Analyst'],
    ['Financial Analyst', 'Senior Accountant', 'Accountant',
     'Payroll Specialist', 'Treasury Analyst', 'Tax Specialist'],
    ['Operations Analyst', 'Program Manager', 'Facilities Coordinator',
     'Supply Chain Analyst', 'Procurement Specialist', 'Logistics Coordinator'],
    ['Recruiter', 'HR Business Partner', 'People Operations Specialist',
     'Compensation Analyst', 'Learning Specialist', 'Talent Sourcer'],
    ['Counsel', 'Senior Counsel', 'Paralegal',
     'Contracts Manager', 'Compliance Analyst', 'Legal Operations Specialist'],
    ['Product Manager', 'Senior Product Manager', 'Product Designer',
     'UX Researcher', 'Technical Writer', 'Product Analyst']];

CREATE FUNCTION directory.seed_locations()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY['New York', 'San Francisco', 'London', 'Berlin', 'Toronto',
             'Austin', 'Singapore', 'Bangalore', 'Sydney', 'Remote'];

-- Replaces the table's contents with a deterministic org of n employees:
-- the CEO (id 1), up to 8 executives (ids 2..9, one per department), then
-- managers with 4..10 reports each, level by level (ids in breadth-first
-- order), the share of managers per level tuned so that the deepest level
-- is about log7(n/9) + 1 below the executives (7 for 500,000). Set-based:
-- one INSERT per level into a scratch table, one INSERT into the table.
-- Returns n.
CREATE FUNCTION directory.directory_seed(n integer, seed integer DEFAULT 1)
RETURNS bigint
LANGUAGE plpgsql
SET directory.structural_write = 'on'
AS $$
DECLARE
    target_depth integer;
    growth double precision;
    lo double precision;
    hi double precision;
    manager_share double precision;
    share double precision;
    lvl integer := 1;
    made bigint;
    added bigint;
    salt bigint := seed::bigint * 16;
BEGIN
    PERFORM directory.require_argument(n, 'n');
    PERFORM directory.require_argument(seed, 'seed');
    IF n < 1 OR n > 20000000 THEN
        RAISE EXCEPTION 'n must be between 1 and 20000000, got %', n USING ERRCODE = '22023';
    END IF;

    -- Per-level growth g with 1 + 8 * (1 + g + ... + g^(D-1)) = n.
    target_depth := greatest(2, least(8, ceil(ln(greatest(n, 10) / 9.0) / ln(7.0))::integer + 1));
    lo := 0.01;
    hi := 50;
    FOR i IN 1..60 LOOP
        growth := (lo + hi) / 2;
        IF 1 + 8 * (SELECT sum(power(growth, j)) FROM generate_series(0, target_depth - 1) j) > n THEN
            hi := growth;
        ELSE
            lo := growth;
        END IF;
    END LOOP;
    manager_share := least(1.0, growth / 7.0);  -- managers have 7 reports on average

    IF pg_catalog.to_regclass('pg_temp.directory_seed_tree') IS NOT NULL THEN
        DROP TABLE pg_temp.directory_seed_tree;  -- an earlier call in this transaction
    END IF;
    CREATE TEMP TABLE directory_seed_tree (
        id bigint, manager_id bigint, path bigint[], depth integer, dept integer, loc integer
    ) ON COMMIT DROP;

    INSERT INTO pg_temp.directory_seed_tree
    VALUES (1, NULL, ARRAY[1::bigint], 0, 0, directory.seed_pick(1, salt + 1, 10));
    INSERT INTO pg_temp.directory_seed_tree
    SELECT 1 + k, 1, ARRAY[1, 1 + k], 1, k, directory.seed_pick(1 + k, salt + 1, 10)
      FROM generate_series(1, least(8, n - 1)) AS k;
    made := least(n, 9);

    WHILE made < n LOOP
        lvl := lvl + 1;
        -- Executives always lead; beyond the target depth everyone left
        -- leads, so the loop always reaches n.
        share := CASE WHEN lvl = 2 OR lvl > target_depth THEN 1.0 ELSE manager_share END;
        INSERT INTO pg_temp.directory_seed_tree
        SELECT made + c.rn, c.parent, c.ppath || (made + c.rn), lvl, c.dept,
               CASE WHEN directory.seed_unit(c.ckey, salt + 4) < 0.7 THEN c.loc
                    ELSE directory.seed_pick(c.ckey, salt + 5, 10) END
          FROM (SELECT x.*, row_number() OVER (ORDER BY x.parent, x.k) AS rn
                  FROM (SELECT p.id AS parent, p.path AS ppath, p.dept, p.loc, k, p.id * 16 + k AS ckey
                          FROM pg_temp.directory_seed_tree p,
                               generate_series(1, 4 + directory.seed_pick(p.id, salt + 2, 7)) AS k
                         WHERE p.depth = lvl - 1
                           AND directory.seed_unit(p.id, salt + 3) < share
                         ORDER BY directory.seed_unit(p.id * 16 + k, salt + 6)
                         LIMIT n - made) AS x) AS c;
        GET DIAGNOSTICS added = ROW_COUNT;
        IF added = 0 THEN
            -- Nobody at the previous level leads (tiny n): let all of them.
            lvl := lvl - 1;
            manager_share := 1.0;
            CONTINUE;
        END IF;
        made := made + added;
    END LOOP;

    TRUNCATE directory.employees;
    INSERT INTO directory.employees
           (id, manager_id, full_name, email, title, department, location, hired_on,
            path, org_depth, sub_org_size)
    SELECT t.id, t.manager_id,
           f.first_name || ' ' || f.last_name,
           pg_catalog.lower(f.first_name || '.' || f.last_name) || '.' || t.id || '@example.com',
           CASE WHEN t.depth <= 1 THEN (directory.seed_executive_titles())[t.dept + 1]
                WHEN s.n > 1 THEN
                    CASE t.depth WHEN 2 THEN 'Vice President' WHEN 3 THEN 'Director'
                                 WHEN 4 THEN 'Senior Manager' ELSE 'Manager' END
                ELSE (directory.seed_ic_titles())[t.dept][1 + directory.seed_pick(t.id, salt + 9, 6)]
           END,
           (directory.seed_departments())[t.dept + 1],
           (directory.seed_locations())[t.loc + 1],
           DATE '2005-01-03' + directory.seed_pick(t.id, salt + 10, 7300),
           t.path, t.depth, s.n
      FROM pg_temp.directory_seed_tree t
      JOIN (SELECT a.id, count(*) AS n
              FROM pg_temp.directory_seed_tree x, unnest(x.path) AS a(id)
             GROUP BY a.id) AS s ON s.id = t.id
     CROSS JOIN LATERAL (
           SELECT (directory.seed_first_names())[1 + directory.seed_pick(t.id, salt + 7, cardinality(directory.seed_first_names()))] AS first_name,
                  (directory.seed_last_names())[1 + directory.seed_pick(t.id, salt + 8, cardinality(directory.seed_last_names()))] AS last_name) AS f;

    DROP TABLE pg_temp.directory_seed_tree;
    PERFORM pg_catalog.setval('directory.employees_id_seq', n);
    ANALYZE directory.employees;
    RETURN n;
END;
$$;

COMMENT ON FUNCTION directory.directory_seed(integer, integer) IS
'Replaces directory.employees with a deterministic org chart of n employees';
