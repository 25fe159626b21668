# What a caller may opt into instead of an exact result, where more than
# one session is needed (the single-session cases are sql/older_answers.sql):
#
# 1. pg_memo.max_staleness: the bound, proven from the commit times of the
#    writes. Readers record when each call started and ended and what it
#    returned; the writer records the clock just before and just after each
#    COMMIT. A result that misses write v+1 and was read after
#    (end of v+1's COMMIT) + bound would be a proven violation. Some writes
#    make the recomputation slow (seconds), so older answers would outlive
#    the bound if it were not enforced.
# 2. pg_memo.error_ttl under concurrency: a failing query called by many
#    clients at once, with a ttl longer than the run, runs exactly once.
#
# No assertion depends on how fast the machine is: the bound is checked
# against the recorded commit times, and the counts that depend on
# scheduling (how many reads, how many of them older answers) are notes.
# 3. pg_memo.stale_on_error: a lock timeout gives the older result; a
#    cancel by the user never does.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use MemoTest;

my $node = memo_node('older_answers');
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE s (id int PRIMARY KEY, v int NOT NULL, n int NOT NULL);
  INSERT INTO s VALUES (1, 0, 1);
  SELECT memo.watch('s');
  CREATE TABLE writes (v int PRIMARY KEY, before_commit timestamptz, after_commit timestamptz);
  CREATE TABLE reads (reader int, started timestamptz, ended timestamptz, v int);
});

# ---- 1. the staleness bound -------------------------------------------------

my $bound_ms = 1000;
my $seconds = 9;

# Each reader loops for $seconds, a call every 5 ms, through a cached list
# whose recomputation takes as long as n rows of generate_series.
my $reader_sql = qq{
SET pg_memo.max_staleness = '${bound_ms}ms';
DO \$\$
DECLARE
  deadline timestamptz := clock_timestamp() + interval '$seconds s';
  t0 timestamptz; t1 timestamptz; got int;
  started timestamptz[] := '{}'; ended timestamptz[] := '{}'; vs int[] := '{}';
BEGIN
  WHILE clock_timestamp() < deadline LOOP
    t0 := clock_timestamp();
    SELECT x.v INTO got FROM memo.list('bounded',
      'SELECT s.v, count(*) AS rows FROM s, generate_series(1, s.n) g WHERE s.id = 1 GROUP BY s.v')
      AS x(v int, rows bigint);
    t1 := clock_timestamp();
    started := started || t0; ended := ended || t1; vs := vs || got;
    PERFORM pg_sleep(0.005);
  END LOOP;
  INSERT INTO reads SELECT pg_backend_pid(), a, b, c FROM unnest(started, ended, vs) AS u(a, b, c);
END \$\$;
};

# The writer: v = 1, 2, ...; every fourth write makes the recomputation
# slow (20 million rows), the next one fast again.
$node->safe_psql('postgres', qq{
CREATE PROCEDURE write_loop(seconds int) LANGUAGE plpgsql AS \$\$
DECLARE
  deadline timestamptz := clock_timestamp() + make_interval(secs => seconds);
  i int := 0; before timestamptz;
BEGIN
  WHILE clock_timestamp() < deadline LOOP
    i := i + 1;
    UPDATE s SET v = i, n = CASE WHEN i % 4 = 0 THEN 20000000 ELSE 1 END WHERE id = 1;
    before := clock_timestamp();
    COMMIT;
    INSERT INTO writes VALUES (i, before, clock_timestamp());
    COMMIT;
    PERFORM pg_sleep(0.4);
  END LOOP;
END \$\$;
});

my @readers = map { my ($s) = start_call($node, $reader_sql); $s } 1 .. 3;
$node->safe_psql('postgres', "CALL write_loop($seconds - 1)");
finish_call($_) for @readers;

my ($nreads, $nwrites) = split /\|/, $node->safe_psql('postgres',
    'SELECT (SELECT count(*) FROM reads), (SELECT count(*) FROM writes)');
cmp_ok($nreads, '>', 0, "readers made calls ($nreads)");
cmp_ok($nwrites, '>', 0, "the writer committed writes ($nwrites)");

# For each read of v: the write it misses is v + 1. Stale: v + 1's COMMIT
# had ended before the read started. A proven violation: the read started
# more than the bound after that.
my ($stale, $violations, $worst_ms, $waited) = split /\|/, $node->safe_psql('postgres', qq{
  SELECT count(*) FILTER (WHERE r.started > w.after_commit),
         count(*) FILTER (WHERE r.started > w.after_commit + interval '$bound_ms ms'),
         coalesce(round(max(extract(epoch FROM r.started - w.after_commit) * 1000)
                        FILTER (WHERE r.started > w.after_commit)), 0),
         count(*) FILTER (WHERE r.ended - r.started > interval '$bound_ms ms')
    FROM reads r JOIN writes w ON w.v = r.v + 1});
note("older answers served: $stale reads, the oldest ${worst_ms} ms after the commit it missed");
is($violations, '0', "no read was served an answer older than pg_memo.max_staleness ($bound_ms ms)");
note("calls that waited longer than the bound for a recomputation: $waited");
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM reads r WHERE r.v > (SELECT max(v) FROM writes w WHERE w.before_commit < r.ended)}),
   '0', 'no read returned a write before its COMMIT began');
# memo.stats counts each older answer once. Which reads those were is known
# only within the window of a COMMIT: a read proven stale (it started after
# the commit it missed had returned) is one; a read that ended before that
# commit began cannot be one.
my $possible = $node->safe_psql('postgres', q{
  SELECT count(*) FROM reads r JOIN writes w ON w.v = r.v + 1 WHERE w.before_commit < r.ended});
my $stale_hits = memo_stat($node, 'bounded', 'stale_hits');
note("stale_hits $stale_hits; proven stale $stale, possibly stale $possible");
cmp_ok($stale_hits, '>=', $stale, 'memo.stats counts every proven older answer as a stale hit');
cmp_ok($stale_hits, '<=', $possible, 'memo.stats counts no read as a stale hit that ended before the commit it would have missed');

# Once the bound has passed, the older answer is refused: a call waits for
# the recomputation and returns the write it would have missed.
my $bounded_call = q{SELECT x.v FROM memo.list('bounded',
  'SELECT s.v, count(*) AS rows FROM s, generate_series(1, s.n) g WHERE s.id = 1 GROUP BY s.v')
  AS x(v int, rows bigint)};
$node->safe_psql('postgres', 'UPDATE s SET v = -1, n = 1 WHERE id = 1');
Time::HiRes::sleep(($bound_ms + 200) / 1000);
is($node->safe_psql('postgres', "SET pg_memo.max_staleness = '${bound_ms}ms'; $bounded_call"), '-1',
   'past the bound, the older answer is refused: the call returns the write it missed');

# ---- 2. error_ttl under concurrency ----------------------------------------

$node->safe_psql('postgres', q{
  CREATE TABLE e (v int);
  INSERT INTO e VALUES (1);
  SELECT memo.watch('e');
  CREATE FUNCTION call_failing() RETURNS text LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM memo.count('failing', 'SELECT * FROM e WHERE 1 / (v - v) = 1');
    RETURN 'ok';
  EXCEPTION WHEN division_by_zero THEN
    RETURN 'failed';
  END $$;
});
my $clients = 16;
$node->pgbench("-n -c $clients -j 2 -t 20", 0, [qr/processed: [1-9]/], [qr/^$/],
    'clients call a failing query at once',
    { 'failing.sql' => "SET pg_memo.error_ttl = '1h';\nSELECT call_failing();\n" });
my ($executions, $error_hits, $calls) = split /\|/, $node->safe_psql('postgres',
    q{SELECT failures, error_hits, calls FROM memo.stats WHERE cache_name = 'failing'});
# One execution: its error is shared with the callers that waited on its
# flight and remembered for the others (a leader that did not look for the
# remembered error before it computed ran the query 10 times in one run).
is($executions, '1', "$clients clients, $calls calls: the failing query ran once");
# A client's calls after its first come after the error was remembered.
cmp_ok($error_hits, '>=', $calls - $clients, "of the $calls calls, $error_hits got the remembered error");

# ---- 3. stale_on_error: a lock timeout, and a cancel ------------------------

$node->safe_psql('postgres', q{
  CREATE TABLE l (id int PRIMARY KEY, n int);
  INSERT INTO l VALUES (1, 1);
  SELECT memo.watch('l');
});
my $lsql = q{SELECT memo.count('locked', 'SELECT * FROM l, generate_series(1, l.n) g')};
is($node->safe_psql('postgres', $lsql), '1', 'computed before the write');
$node->safe_psql('postgres', 'UPDATE l SET n = 2');

# The recomputation waits for a lock another session holds.
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE l IN ACCESS EXCLUSIVE MODE');
my ($ret, $out, $err) = $node->psql('postgres',
    "SET pg_memo.stale_on_error = '1h'; SET lock_timeout = '200ms'; $lsql");
is($out, '1', 'a lock timeout serves the older result');
like($err, qr/WARNING:  pg_memo served an older result of "locked".*SQLSTATE 55P03/s, 'with a WARNING naming the lock timeout');
($ret, $out, $err) = $node->psql('postgres', "SET lock_timeout = '200ms'; $lsql");
like($err, qr/ERROR:  canceling statement due to lock timeout/, 'without stale_on_error, the lock timeout is raised');
$holder->query_safe('COMMIT');
$holder->quit;

# A cancel by the user during a slow recomputation is never replaced.
$node->safe_psql('postgres', 'UPDATE l SET n = 100000000');
my ($call, $pid) = start_call($node, $lsql, setup => q{SET pg_memo.stale_on_error = '1h'});
wait_until($node, "SELECT state = 'active' AND query LIKE '%generate_series%' FROM pg_stat_activity WHERE pid = $pid",
    'the slow recomputation to run');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my ($cout, $cerr) = finish_call($call);
like($cerr, qr/canceling statement due to user request/, 'a cancel reaches the caller');
unlike($cerr, qr/older result/, 'no older result for a cancel');

$node->stop;
done_testing();
