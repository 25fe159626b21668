# Cross-backend behaviour of the cache: one backend computes, others hit, a
# commit anywhere invalidates for everyone, uncommitted writes stay private,
# and a computation never reuses a snapshot older than its generations.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('main', init => [allows_streaming => 'logical']);

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE emp (id int PRIMARY KEY, dept text);
  INSERT INTO emp SELECT g, 'd' || (g % 2) FROM generate_series(1, 10) g;
  SELECT memo.watch('emp');
});

my $count_sql = q{SELECT memo.count('emp.count', 'SELECT * FROM emp WHERE dept = $1', '{d1}')};
sub counter { return memo_stat($node, @_); }

# Backend A computes, backend B hits.
is($node->safe_psql('postgres', $count_sql), '5', 'backend A computes');
is(counter('emp.count', 'computations'), '1', 'one computation');
is($node->safe_psql('postgres', $count_sql), '5', 'backend B gets the same result');
is(counter('emp.count', 'hits'), '1', 'backend B was served from shared memory');

# Backend C writes inside a transaction: only C sees it until it commits.
my $c = $node->background_psql('postgres');
$c->query_safe('BEGIN');
$c->query_safe(q{INSERT INTO emp VALUES (11, 'd1')});
is($c->query_safe($count_sql), '6', 'C sees its own uncommitted write');
is($node->safe_psql('postgres', $count_sql), '5', 'A does not see C\'s uncommitted write');
is($node->safe_psql('postgres', $count_sql), '5', 'B does not see it either');
is(counter('emp.count', 'computations'), '2', 'only C computed (bypass), A and B hit');
is(counter('emp.count', 'bypasses'), '1', 'C\'s read counted as a bypass');

# C commits: the very next statement in A and B sees the write.
$c->query_safe('COMMIT');
is($node->safe_psql('postgres', $count_sql), '6', 'A sees the commit at once');
is($node->safe_psql('postgres', $count_sql), '6', 'B sees the commit at once');
is(counter('emp.count', 'computations'), '3', 'recomputed once after the commit');

# C rolls back: entries stay valid.
$c->query_safe('BEGIN');
$c->query_safe(q{DELETE FROM emp});
is($c->query_safe($count_sql), '0', 'C sees its own delete');
$c->query_safe('ROLLBACK');
is($node->safe_psql('postgres', $count_sql), '6', 'the rolled-back delete never happened');
is(counter('emp.count', 'computations'), '4', 'the entry survived the rollback (only C computed)');
$c->quit;

# A computation whose calling statement's snapshot predates a commit must
# not store that old snapshot's result. R's statement starts, then waits on
# an advisory lock held by W; W commits a write and lets R go; R computes.
my $w = $node->background_psql('postgres');
$w->query_safe('SELECT pg_advisory_lock(42)');
my $r = $node->background_psql('postgres');
my $r_pid = $r->query_safe('SELECT pg_backend_pid()');
$r->query_until(qr/started/, q{\echo started
SELECT CASE WHEN pg_advisory_lock(42) IS NULL THEN NULL
            ELSE memo.count('emp.snap', 'SELECT * FROM emp') END AS snap;
});
$node->poll_query_until('postgres',
    "SELECT wait_event = 'advisory' FROM pg_stat_activity WHERE pid = $r_pid")
  or die 'R did not block on the advisory lock';
$w->query_safe(q{INSERT INTO emp VALUES (12, 'd0')});
$w->query_safe('SELECT pg_advisory_unlock(42)');
my $r_out = $r->query_safe('SELECT 1 AS done');
like($r_out, qr/^12$/m, 'R computed with a fresh snapshot that includes the commit');
is($node->safe_psql('postgres', q{SELECT memo.count('emp.snap', 'SELECT * FROM emp')}),
    '12', 'the stored entry is the fresh result');
$r->quit;
$w->quit;

# Writes made before a table was watched fired no trigger: the transaction
# that watches it must not store results containing them for others.
$node->safe_psql('postgres', q{CREATE TABLE late (id int)});
my $late = $node->background_psql('postgres');
$late->query_safe('BEGIN');
$late->query_safe('INSERT INTO late VALUES (1)');
$late->query_safe(q{SELECT memo.watch('late')});
is($late->query_safe(q{SELECT memo.count('late', 'SELECT * FROM late')}), '1',
    'the watching transaction sees its own earlier write');
is($node->safe_psql('postgres', q{SELECT bypasses || '/' || entries FROM memo.stats WHERE cache_name = 'late'}), '1/0',
   'it computed that as a bypass and stored nothing');
# For everyone else the table is not watched yet: refused, never served.
my ($late_ret, $late_out, $late_err) = $node->psql('postgres', q{SELECT memo.count('late', 'SELECT * FROM late')});
like($late_err, qr/table public\.late is not watched by pg_memo/,
     'another session is refused until the watch commits (never served the uncommitted write)');
$late->query_safe('COMMIT');
$late->quit;
is($node->safe_psql('postgres', q{SELECT memo.count('late', 'SELECT * FROM late')}), '1',
    'after the commit everyone sees it');

# Not preloaded: CREATE EXTENSION works, every function says what to set.
my $bare = PostgreSQL::Test::Cluster->new('bare');
$bare->init;
$bare->start;
$bare->safe_psql('postgres', 'CREATE EXTENSION pg_memo');
my ($ret, $out, $err) = $bare->psql('postgres',
    q{SELECT memo.count('x', 'SELECT 1')}, extra_params => ['-v', 'VERBOSITY=verbose']);
isnt($ret, 0, 'memo.count fails without preloading');
like($err, qr/55000: pg_memo must be loaded via shared_preload_libraries/, 'with SQLSTATE 55000 and what to set');
$bare->stop;

# Hot standby of a primary without pg_memo.standby_records: nothing tells
# it about the primary's commits, so every call bypasses.
$node->backup('b1');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b1', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', q{INSERT INTO emp VALUES (13, 'd1')});
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $count_sql), '7', 'standby returns the current result');
is($standby->safe_psql('postgres', $count_sql), '7', 'and again');
is($standby->safe_psql('postgres', q{SELECT bypasses || '/' || hits FROM memo.stats WHERE cache_name = 'emp.count'}),
    '2/0', 'standby calls bypass the cache');
$node->safe_psql('postgres', q{DELETE FROM emp WHERE id = 13});
$node->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $count_sql), '6', 'standby follows the primary without invalidation');
$standby->stop;

# Logical replication: the apply worker fires no statement triggers, so it
# marks its subscription's tables at commit; applied writes invalidate.
my $sub = memo_node('subscriber');
$sub->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE emp (id int PRIMARY KEY, dept text);
  SELECT memo.watch('emp');
});
$node->safe_psql('postgres', 'CREATE PUBLICATION emp_pub FOR TABLE emp');
my $connstr = $node->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION emp_sub CONNECTION '$connstr' PUBLICATION emp_pub");
$node->wait_for_catchup('emp_sub');
$sub->poll_query_until('postgres', q{SELECT count(*) > 0 FROM emp}) or die 'initial sync';
$node->wait_for_catchup('emp_sub');
my $sub_count = q{SELECT memo.count('sub', 'SELECT * FROM emp')};
my $expected = $node->safe_psql('postgres', 'SELECT count(*) FROM emp');
is($sub->safe_psql('postgres', $sub_count), $expected, 'subscriber computes');
is($sub->safe_psql('postgres', $sub_count), $expected, 'subscriber hits');
$node->safe_psql('postgres', q{INSERT INTO emp VALUES (100, 'd1'), (101, 'd0')});
$node->wait_for_catchup('emp_sub');
is($sub->safe_psql('postgres', $sub_count), $expected + 2, 'an applied INSERT invalidates on the subscriber');
my $sub_x = q{SELECT memo.count('sub.x', 'SELECT * FROM emp WHERE dept = $1', '{x}')};
is($sub->safe_psql('postgres', $sub_x), '0', 'subscriber caches a count before an UPDATE');
$node->safe_psql('postgres', q{UPDATE emp SET dept = 'x' WHERE id = 100});
$node->wait_for_catchup('emp_sub');
is($sub->safe_psql('postgres', $sub_x), '1', 'an applied UPDATE invalidates');
$node->safe_psql('postgres', q{DELETE FROM emp WHERE id = 101});
$node->wait_for_catchup('emp_sub');
is($sub->safe_psql('postgres', $sub_count), $expected + 1, 'an applied DELETE invalidates');
$node->safe_psql('postgres', q{TRUNCATE emp});
$node->wait_for_catchup('emp_sub');
is($sub->safe_psql('postgres', $sub_count), '0', 'an applied TRUNCATE invalidates');
is(memo_stat($sub, 'sub', 'hits'), '1',
    'only the unchanged call was a hit');
$sub->safe_psql('postgres', 'DROP SUBSCRIPTION emp_sub');
$sub->stop;

$node->stop;
done_testing();
