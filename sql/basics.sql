-- Basic memoization: list, list_as and count hit, miss and keep results apart.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/setup.sql

CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, dept text, salary numeric);
INSERT INTO emp SELECT g, 'name ' || g, 'd' || (g % 3), g * 100 FROM generate_series(1, 30) g;
SELECT memo.watch('emp');
SELECT memo.watch('emp');  -- idempotent
SELECT table_name, triggers_enabled, trigger_mode FROM memo.watched WHERE table_name = 'emp'::regclass;

-- A page: ORDER BY, LIMIT and OFFSET are part of what is memoized.
SELECT * FROM memo.list('emp.page',
  'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id LIMIT $2::int OFFSET $3::int',
  '{d1,3,1}') AS t(id int, name text);
SELECT * FROM counters('emp.page');
SELECT * FROM memo.list('emp.page',
  'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id LIMIT $2::int OFFSET $3::int',
  '{d1,3,1}') AS t(id int, name text);
SELECT * FROM counters('emp.page');

-- Another parameter value is another entry (a scope keys the entry).
SELECT * FROM memo.list('emp.page',
  'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id LIMIT $2::int OFFSET $3::int',
  '{d2,3,1}') AS t(id int, name text);
SELECT hits, misses, entries FROM counters('emp.page');

-- count: the total behind the page, with no page in its key.
SELECT memo.count('emp.count', 'SELECT * FROM emp WHERE dept = $1', '{d1}');
SELECT memo.count('emp.count', 'SELECT * FROM emp WHERE dept = $1', '{d1}');
SELECT memo.count('emp.count', 'SELECT * FROM emp WHERE dept = $1;  ', '{d1}');
SELECT hits, misses, entries FROM counters('emp.count');

-- Typed results without a column definition list.
SELECT * FROM memo.list_as(NULL::emp, 'emp.rows', 'SELECT * FROM emp WHERE id <= $1::int ORDER BY id', '{3}');
SELECT * FROM memo.list_as(NULL::emp, 'emp.rows', 'SELECT * FROM emp WHERE id <= $1::int ORDER BY id', '{3}');
SELECT hits, misses FROM counters('emp.rows');

-- Parameter types come from the query; NULL parameters are values too.
SELECT * FROM memo.list('emp.nulls',
  'SELECT count(*) FROM emp WHERE dept IS NOT DISTINCT FROM $1', ARRAY[NULL]) AS t(n bigint);
SELECT * FROM memo.list('emp.nulls',
  'SELECT count(*) FROM emp WHERE dept IS NOT DISTINCT FROM $1', ARRAY['']) AS t(n bigint);
SELECT hits, misses, entries FROM counters('emp.nulls');

-- Empty results are results.
SELECT * FROM memo.list('emp.empty', 'SELECT id FROM emp WHERE false') AS t(id int);
SELECT * FROM memo.list('emp.empty', 'SELECT id FROM emp WHERE false') AS t(id int);
SELECT hits FROM counters('emp.empty');

-- Large values are stored whole (TOASTed columns are flattened).
CREATE TABLE docs (id int PRIMARY KEY, body text);
SELECT memo.watch('docs');
INSERT INTO docs VALUES (1, repeat('abcdefghij', 100000));
SELECT id, length(body), md5(body) FROM memo.list('docs', 'SELECT * FROM docs') AS t(id int, body text);
SELECT id, length(body), md5(body) FROM memo.list('docs', 'SELECT * FROM docs') AS t(id int, body text);
SELECT hits FROM counters('docs');

-- The column definition list must match the query's columns.
SELECT * FROM memo.list('emp.page',
  'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id LIMIT $2::int OFFSET $3::int',
  '{d1,3,1}') AS t(id int, name int);
SELECT * FROM memo.list('emp.page',
  'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id LIMIT $2::int OFFSET $3::int',
  '{d1,3,1}') AS t(id int);
SELECT * FROM memo.list('emp.page', 'SELECT id FROM emp');
-- A mismatch names the column, the query's type and the declared one.
SELECT * FROM memo.list('emp.salary', 'SELECT id, salary FROM emp WHERE id = 1') AS t(id int, salary float8);
SELECT * FROM memo.list('emp.total', 'SELECT count(*) FROM emp') AS t(n int);
SELECT * FROM memo.list_as(NULL::emp, 'emp.typed', 'SELECT id, name, dept, salary::float8 FROM emp WHERE id = 1');
SELECT * FROM memo.list_as(NULL::emp, 'emp.typed', 'SELECT id, name FROM emp WHERE id = 1');

-- Settings that change how values print are part of the key.
SELECT * FROM memo.list('emp.bytes', 'SELECT decode(md5(name), ''hex'')::text FROM emp WHERE id = 1') AS t(b text);
SET bytea_output = escape;
SELECT * FROM memo.list('emp.bytes', 'SELECT decode(md5(name), ''hex'')::text FROM emp WHERE id = 1') AS t(b text);
RESET bytea_output;
SELECT entries FROM counters('emp.bytes');

-- Joins, subqueries, CTEs and views all work, over watched tables.
CREATE VIEW rich AS SELECT id, name FROM emp WHERE salary > 2500;
SELECT * FROM memo.list('rich', 'WITH r AS (SELECT * FROM rich) SELECT count(*) FROM r JOIN emp USING (id) WHERE emp.id IN (SELECT id FROM emp)') AS t(n bigint);
SELECT * FROM memo.list('rich', 'WITH r AS (SELECT * FROM rich) SELECT count(*) FROM r JOIN emp USING (id) WHERE emp.id IN (SELECT id FROM emp)') AS t(n bigint);
SELECT hits FROM counters('rich');

-- A miss may use a parallel plan, as the same query run directly would: the
-- rows are counted in a parallel worker, whose pid is not the caller's.
-- (worker_pid is IMMUTABLE only so that pg_memo accepts it; its argument
-- keeps the planner from folding it.)
CREATE TABLE wide AS SELECT g AS id FROM generate_series(1, 1000) g;
SELECT memo.watch('wide');
CREATE FUNCTION worker_pid(int) RETURNS int LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS 'BEGIN RETURN pg_backend_pid(); END';
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT memo.count('wide', 'SELECT 1 FROM wide WHERE worker_pid(id) <> $1::int', ARRAY[pg_backend_pid()::text]) AS counted_in_a_worker;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
