# A computation that finds a commit in progress on a table it reads waits
# for that commit (at most pg_memo.commit_wait_timeout), so that its result
# includes the commit and stays valid after it.
#
# The commit is held in progress by synchronous replication to a standby
# that does not exist: it stays announced (pre-commit done, bump not yet)
# until its wait is cancelled, and then completes locally. No timing
# assumptions: every step waits for an observable state.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

# Only a session that sets synchronous_commit = on waits for the standby
# (and only with max_wal_senders > 0, which allows_streaming sets).
my $node = memo_node('commit_wait', init => [allows_streaming => 1],
    conf => "synchronous_standby_names = 'ghost'\nsynchronous_commit = local\n");

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int);
  INSERT INTO t SELECT generate_series(1, 3);
  SELECT memo.watch('t');
});

my $count = q{SELECT memo.count('c', 'SELECT * FROM t', '{}')};
sub computations { return memo_stat($node, 'c', 'computations'); }

is($node->safe_psql('postgres', $count), '3', 'first call computes 3');

# Inserts one row into t (or runs the statement given) and starts COMMIT,
# which then waits for the ghost standby.
sub commit_in_progress {
    my ($id, $statement) = @_;
    $statement //= "INSERT INTO t VALUES ($id)";
    my $w = $node->background_psql('postgres');
    my $pid = $w->query_safe('SELECT pg_backend_pid()');
    $w->query_safe("SET synchronous_commit = on; BEGIN; $statement");
    $w->query_until(qr/started/, "\\echo started\nCOMMIT;\n");
    wait_until($node, "SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $pid",
        'the commit to wait for the standby');
    return ($w, $pid);
}

# Cancelling the wait lets the commit complete locally (with a WARNING).
sub let_commit_finish {
    my ($w, $pid) = @_;
    $node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
    $w->query('SELECT 1');
    $w->quit;
}

# 1. A miss during the commit waits for it, and its result survives it.
{
    my ($w, $w_pid) = commit_in_progress(4);
    my ($r, $r_pid) = start_call($node, $count, setup => q{SET pg_memo.commit_wait_timeout = '5min'});
    wait_until($node, "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $r_pid",
        'the miss to wait for the commit');
    is($node->safe_psql('postgres', "SELECT wait_event FROM pg_stat_activity WHERE pid = $r_pid"),
        $node->pg_version >= 17 ? 'pg_memo commit' : 'Extension',
        "the waiting miss shows pg_memo's own wait event (17+)");
    is(computations(), '1', 'the miss is computing: not counted until it succeeds');
    let_commit_finish($w, $w_pid);
    like((finish_call($r))[0], qr/^\s*4\s*$/m, 'the waiting miss returns the committed row');
    is($node->safe_psql('postgres', $count), '4', 'the next call sees it too');
    is(computations(), '2', 'from the stored entry: the commit did not make it stale');
}

# 2. The wait is bounded: a commit that stays in progress does not hold the
#    reader, which computes without it; that result goes stale at the commit.
{
    my ($w, $w_pid) = commit_in_progress(5);
    is($node->safe_psql('postgres', "SET pg_memo.commit_wait_timeout = '20ms'; $count"), '4',
        'past the bound, the miss computes without the uncommitted row');
    is(computations(), '3', 'it computed');
    let_commit_finish($w, $w_pid);
    is($node->safe_psql('postgres', $count), '5', 'after the commit, the row is seen');
    is(computations(), '4', 'the entry computed during the commit was stale');
}

# 3. The wait is interruptible, and a cancelled miss leaves no flight behind.
{
    my ($w, $w_pid) = commit_in_progress(6);
    my ($r, $r_pid) = start_call($node, $count, setup => q{SET pg_memo.commit_wait_timeout = '5min'});
    wait_until($node, "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $r_pid",
        'the miss to wait for the commit');
    is($node->safe_psql('postgres', 'SELECT leader_pid FROM memo.flights'), $r_pid, 'it waits as a flight\'s leader');
    $node->safe_psql('postgres', "SELECT pg_cancel_backend($r_pid)");
    like((finish_call($r))[1], qr/canceling statement due to user request/, 'the waiting miss is cancelled');
    is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight is left');
    let_commit_finish($w, $w_pid);
    is($node->safe_psql('postgres', $count), '6', 'after the commit, the row is seen');
}

# 4. Waiters whose leader did not wait (commit_wait_timeout = 0 in its
#    session) find its entry behind the commit in progress. They fly again
#    behind a new leader that waits for the commit, rather than each
#    computing alone without it. The leader is held in its parse by a lock
#    on a second table the query reads, until every waiter has joined.
{
    $node->safe_psql('postgres', q{CREATE TABLE u (id int); INSERT INTO u VALUES (1); SELECT memo.watch('u')});
    my $join = q{SELECT memo.count('j', 'SELECT * FROM t, u', '{}')};
    my $waiters = 3;
    my ($w, $w_pid) = commit_in_progress(7);
    my $blocker = $node->background_psql('postgres');
    $blocker->query_safe('BEGIN; LOCK TABLE u IN ACCESS EXCLUSIVE MODE');
    my ($leader, $leader_pid) = start_call($node, $join, setup => q{SET pg_memo.commit_wait_timeout = 0});
    wait_until($node, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $leader_pid",
        'the leader to wait for the lock');
    my @w = map { [start_call($node, $join, setup => q{SET pg_memo.commit_wait_timeout = '5min'})] } 1 .. $waiters;
    wait_until($node, "SELECT count(*) = $waiters FROM pg_stat_activity WHERE wait_event_type = 'Extension'",
        'the waiters to join the flight');
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($leader))[0], qr/^\s*6\s*$/m, 'the leader computed without the commit in progress');
    # One waiter now leads a new flight and waits for the commit; the others
    # wait on its flight.
    my $others = $waiters - 1;
    wait_until($node, qq{SELECT count(*) = 1 FROM memo.flights f JOIN pg_stat_activity a ON a.pid = f.leader_pid
                         WHERE f.cache_name = 'j' AND f.state = 'running' AND f.waiters = $others
                           AND a.wait_event_type = 'Extension'},
        'a new leader to wait for the commit, with the other waiters on its flight');
    let_commit_finish($w, $w_pid);
    my @results = map { (finish_call($_->[0]))[0] } @w;
    is(scalar(grep { /^\s*7\s*$/m } @results), $waiters, 'every waiter returns the committed row');
    is(memo_stat($node, 'j', 'computations'), '2', 'two computations: the first leader and the new one');
    is(memo_stat($node, 'j', 'shared'), $waiters - 1, 'the new leader served the other waiters');
}

# 5. The commit waited for changes what the query means without a lock that
#    would have stopped its analysis: ATTACH PARTITION takes only SHARE
#    UPDATE EXCLUSIVE on the parent. The waiting miss analyzes the query
#    again, so its entry depends on the new partition: a later write
#    straight into that partition is seen.
{
    $node->safe_psql('postgres', q{
      CREATE TABLE parted (id int) PARTITION BY RANGE (id);
      CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (1) TO (100);
      INSERT INTO parted SELECT generate_series(1, 5);
      CREATE TABLE parted_2 (id int);
      INSERT INTO parted_2 VALUES (150), (151), (152);
      SELECT memo.watch('parted');
      SELECT memo.watch('parted_2');
    });
    my $parted = q{SELECT memo.count('parted', 'SELECT * FROM parted', '{}')};
    is($node->safe_psql('postgres', $parted), '5', 'the parent before the attach');
    my ($w, $w_pid) = commit_in_progress(undef,
        'ALTER TABLE parted ATTACH PARTITION parted_2 FOR VALUES FROM (100) TO (200)');
    my ($r, $r_pid) = start_call($node, $parted, setup => q{SET pg_memo.commit_wait_timeout = '5min'});
    wait_until($node, "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $r_pid",
        'the miss to wait for the attach');
    let_commit_finish($w, $w_pid);
    like((finish_call($r))[0], qr/^\s*8\s*$/m, 'the waiting miss counts the attached partition');
    $node->safe_psql('postgres', 'INSERT INTO parted_2 VALUES (160)');
    is($node->safe_psql('postgres', $parted), '9', 'a write into the attached partition is seen');
}

$node->stop;
done_testing();
