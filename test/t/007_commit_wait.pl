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

# Inserts one row and starts COMMIT, which then waits for the ghost standby.
sub commit_in_progress {
    my ($id) = @_;
    my $w = $node->background_psql('postgres');
    my $pid = $w->query_safe('SELECT pg_backend_pid()');
    $w->query_safe("SET synchronous_commit = on; BEGIN; INSERT INTO t VALUES ($id)");
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
    is(computations(), '2', 'the miss is computing');
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
    $node->safe_psql('postgres', "SELECT pg_cancel_backend($r_pid)");
    like((finish_call($r))[1], qr/canceling statement due to user request/, 'the waiting miss is cancelled');
    is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight is left');
    let_commit_finish($w, $w_pid);
    is($node->safe_psql('postgres', $count), '6', 'after the commit, the row is seen');
}

$node->stop;
done_testing();
