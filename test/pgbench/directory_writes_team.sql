-- pg_memo_directory: a manager opens their own team, page 1, default sort.
-- The manager is drawn uniformly from bench.managers (n = 1..:managers, ids
-- of employees who led a team when the org was seeded, never removed by the
-- writer of directory_writes_writer.sql), in one statement, no extra round
-- trip. bench.team_page(scope) is cached_list_employees(scope) run by a
-- SECURITY DEFINER function owned by the role bench_team, so that
-- pg_stat_statements (which keys by role) counts the team-scope
-- computations apart from the CEO-scope ones: the memo keys differ by role
-- too, and nobody else reads these entries. bench/directory_writes.sh
-- creates bench.managers, bench.team_page and bench.team_page_uncached (the
-- same through list_employees, for the no-cache floor), and passes
-- -D managers=N.
--   pgbench -n -M prepared -D managers=1000 -f directory_writes_team.sql <db>
\set k random(1, :managers)
SELECT t.* FROM bench.managers b, bench.team_page(b.id) AS t WHERE b.n = :k;
