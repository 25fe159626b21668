# Singleflight across backends. The leader's computation is held back by a
# table lock taken in another session, so that the waiters provably join its
# flight (they sleep on the flight's condition variable: wait_event
# 'Extension') before it finishes. No timing assumptions: every step waits for
# an observable state.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('flights');

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE emp (id int PRIMARY KEY, scope text, divisor int);
  INSERT INTO emp SELECT g, 's' || (g % 2), 1 FROM generate_series(1, 10) g;
  SELECT memo.watch('emp');
});

my $waiters = 4;

sub stat_of { return memo_stat($node, @_); }

# The table lock that holds every computation back until released.
sub hold_table {
    my $blocker = $node->background_psql('postgres');
    $blocker->query_safe('BEGIN');
    $blocker->query_safe('LOCK TABLE emp IN ACCESS EXCLUSIVE MODE');
    return $blocker;
}

sub waiting_on_flight {
    my ($n) = @_;
    wait_until($node, "SELECT count(*) = $n FROM pg_stat_activity WHERE wait_event_type = 'Extension'",
        "$n waiters on the flight");
}

sub waiting_on_lock {
    my ($pid) = @_;
    wait_until($node, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid",
        "backend $pid to wait on the table lock");
}

my $count = q{SELECT memo.count('%s', 'SELECT * FROM emp WHERE scope = $1', '{%s}')};

# 1. N concurrent misses on one key: one computation, N-1 shared results.
{
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, sprintf($count, 'one', 's1'));
    waiting_on_lock($leader_pid);
    my @w = map { [start_call($node, sprintf($count, 'one', 's1'))] } 1 .. $waiters;
    waiting_on_flight($waiters);
    is($node->safe_psql('postgres', q{SELECT waiters FROM memo.flights WHERE cache_name = 'one'}),
        $waiters, 'memo.flights shows the waiters');
    # From PostgreSQL 17 on, pg_memo names its own wait event.
    my $event = $node->pg_version >= 17 ? 'pg_memo flight' : 'Extension';
    is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT wait_event, ',') FROM pg_stat_activity
                                      WHERE wait_event_type = 'Extension'}),
        $event, "the waiters show the wait event $event");
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    my @results = map { (finish_call($_->[0]))[0] } ($leader ? [$leader] : (), @w);
    is(scalar(grep { $_ =~ /^\s*5\s*$/m } @results), $waiters + 1, 'every caller got the same result');
    is(stat_of('one', 'computations'), '1', 'one computation for all of them');
    is(stat_of('one', 'shared'), "$waiters", 'N-1 callers were served by the leader');
    is(stat_of('one', 'waits'), "$waiters", 'and each of them waited once');
    is($node->safe_psql('postgres', q{SELECT count(*) FROM memo.flights}), '0', 'no flight left behind');
}

# 2. Two scopes miss at once: two computations, each caller gets its own
#    scope's rows. The optimisation must NOT happen across keys.
{
    my $blocker = hold_table();
    my $list = q{SELECT string_agg(id::text, ',') FROM memo.list('two', 'SELECT id FROM emp WHERE scope = $1 ORDER BY id', '{%s}') AS t(id int)};
    my ($l1, $p1) = start_call($node, sprintf($list, 's0'));
    my ($l2, $p2) = start_call($node, sprintf($list, 's1'));
    waiting_on_lock($p1);
    waiting_on_lock($p2);
    my ($w1) = start_call($node, sprintf($list, 's0'));
    my ($w2) = start_call($node, sprintf($list, 's1'));
    waiting_on_flight(2);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($l1))[0], qr/^\s*2,4,6,8,10\s*$/m, 'scope s0 leader: its own rows');
    like((finish_call($w1))[0], qr/^\s*2,4,6,8,10\s*$/m, 'scope s0 waiter: its own rows');
    like((finish_call($l2))[0], qr/^\s*1,3,5,7,9\s*$/m, 'scope s1 leader: its own rows');
    like((finish_call($w2))[0], qr/^\s*1,3,5,7,9\s*$/m, 'scope s1 waiter: its own rows');
    is(stat_of('two', 'computations'), '2', 'two keys, two computations');
}

# 3. The leader is cancelled, or terminated, while waiters wait: a waiter
#    takes over and everyone gets the right result.
for my $how ('pg_cancel_backend', 'pg_terminate_backend') {
    my $cache = "takeover_$how";
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, sprintf($count, $cache, 's0'));
    waiting_on_lock($leader_pid);
    my @w = map { [start_call($node, sprintf($count, $cache, 's0'))] } 1 .. $waiters;
    waiting_on_flight($waiters);
    $node->safe_psql('postgres', "SELECT $how($leader_pid)");
    # The new leader waits on the lock; the others keep waiting on the flight.
    waiting_on_flight($waiters - 1);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    if ($how eq 'pg_cancel_backend') {
        like((finish_call($leader))[1], qr/canceling statement due to user request/,
            "$how: the leader got its own error");
    } else {
        wait_until($node, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $leader_pid", 'the leader to exit');
        $leader->{run}->kill_kill;  # its psql lost the connection
        pass("$how: the leader's backend is gone");
    }
    my @results = map { [finish_call($_->[0])] } @w;
    is(scalar(grep { $_->[0] =~ /^\s*5\s*$/m && $_->[1] eq '' } @results), $waiters,
        "$how: every waiter succeeded with the right result");
    is(stat_of($cache, 'takeovers'), '1', "$how: one takeover");
    is(stat_of($cache, 'computations'), '1', "$how: one computation succeeded: the takeover's");
    is(stat_of($cache, 'failures'), $how eq 'pg_cancel_backend' ? '1' : '0',
        "$how: the cancelled computation failed (a terminated one ends with its backend, counted nowhere)");
    is($node->safe_psql('postgres', q{SELECT count(*) FROM memo.flights}), '0', "$how: no stuck flight");
}

# 4. The leader's query fails: waiters get the same error, nothing is cached.
{
    $node->safe_psql('postgres', q{UPDATE emp SET divisor = 0 WHERE id = 3});
    my $q = q{SELECT memo.count('fails', 'SELECT * FROM emp WHERE 1 / divisor > 0')};
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, $q);
    waiting_on_lock($leader_pid);
    my @w = map { [start_call($node, $q)] } 1 .. $waiters;
    waiting_on_flight($waiters);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($leader))[1], qr/division by zero/, 'the leader fails');
    my @errs = map { (finish_call($_->[0]))[1] } @w;
    is(scalar(grep { /division by zero/ } @errs), $waiters, 'every waiter gets the same error');
    is(stat_of('fails', 'failures') . ' ' . stat_of('fails', 'computations'), '1 0',
       'the failing query ran once, a failure, not a computation');
    my ($ret, undef, $err) = $node->psql('postgres', $q);
    like($err, qr/division by zero/, 'the next call computes again');
    is(stat_of('fails', 'failures'), '2', 'failures are not cached');
    $node->safe_psql('postgres', q{UPDATE emp SET divisor = 1 WHERE id = 3});
}

# 5. A waiter is cancelled: the leader and the other waiters are unaffected.
{
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, sprintf($count, 'waiter_cancel', 's1'));
    waiting_on_lock($leader_pid);
    my @w = map { [start_call($node, sprintf($count, 'waiter_cancel', 's1'))] } 1 .. $waiters;
    waiting_on_flight($waiters);
    my $victim = $w[0][1];
    $node->safe_psql('postgres', "SELECT pg_cancel_backend($victim)");
    waiting_on_flight($waiters - 1);
    is($node->safe_psql('postgres', q{SELECT waiters FROM memo.flights WHERE cache_name = 'waiter_cancel'}),
        $waiters - 1, 'the cancelled waiter left the flight');
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($w[0][0]))[1], qr/canceling statement/, 'the cancelled waiter got its error');
    like((finish_call($leader))[0], qr/^\s*5\s*$/m, 'the leader finished');
    my @ok = grep { (finish_call($_->[0]))[0] =~ /^\s*5\s*$/m } @w[1 .. $#w];
    is(scalar(@ok), $waiters - 1, 'the other waiters got the result');
}

# 6. pg_memo.wait_timeout: a waiter that waits too long computes on its own.
{
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, sprintf($count, 'timeout', 's0'));
    waiting_on_lock($leader_pid);
    my ($w, $w_pid) = start_call($node, sprintf($count, 'timeout', 's0'), setup => q{SET pg_memo.wait_timeout = '100ms'});
    # After its timeout the waiter computes itself and meets the table lock.
    waiting_on_lock($w_pid);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($leader))[0], qr/^\s*5\s*$/m, 'the leader finished');
    like((finish_call($w))[0], qr/^\s*5\s*$/m, 'the timed-out waiter computed the right result');
    is(stat_of('timeout', 'wait_timeouts'), '1', 'the timeout was counted');
}

# 7. A leader inside a transaction that is rolled back still leaves a
#    correct, usable entry.
{
    my $blocker = hold_table();
    my $l = $node->background_psql('postgres');
    my $l_pid = $l->query_safe('SELECT pg_backend_pid()');
    $l->query_safe('BEGIN');
    $l->query_until(qr/started/, "\\echo started\n" . sprintf($count, 'rollback', 's1') . ";\n");
    waiting_on_lock($l_pid);
    my ($w) = start_call($node, sprintf($count, 'rollback', 's1'));
    waiting_on_flight(1);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($w))[0], qr/^\s*5\s*$/m, 'the waiter got the leader\'s result');
    $l->query_safe('ROLLBACK');
    $l->quit;
    is($node->safe_psql('postgres', sprintf($count, 'rollback', 's1')), '5', 'the entry is correct');
    is(stat_of('rollback', 'hits'), '1', 'and it is served from the cache');
}

# 8. singleflight off: every miss computes (the A/B switch).
{
    my $blocker = hold_table();
    my $setup = q{SET pg_memo.singleflight = off};
    my @s = map { [start_call($node, sprintf($count, 'off', 's1'), setup => $setup)] } 1 .. 3;
    waiting_on_lock($_->[1]) for @s;
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    finish_call($_->[0]) for @s;
    is(stat_of('off', 'computations'), '3', 'without singleflight each miss computes');
}

# 9. memo.flights shows key details only to the flight's role and to
#    pg_read_all_stats; a flight table that is full is a counted fallback.
{
    $node->safe_psql('postgres', q{CREATE ROLE memo_peeker LOGIN});
    my $blocker = hold_table();
    my ($leader, $leader_pid) = start_call($node, sprintf($count, 'peek', 's1'));
    waiting_on_lock($leader_pid);
    is($node->safe_psql('postgres', q{SELECT query FROM memo.flights WHERE cache_name = 'peek'}),
        'SELECT * FROM emp WHERE scope = $1', 'the superuser sees the query');
    is($node->safe_psql('postgres', q{SET ROLE memo_peeker; SELECT coalesce(query, '<hidden>') || ' ' || leader_pid FROM memo.flights WHERE cache_name = 'peek'}),
        "<hidden> $leader_pid", 'another role sees the flight but not its query');
    $node->safe_psql('postgres', q{GRANT pg_read_all_stats TO memo_peeker});
    is($node->safe_psql('postgres', q{SET ROLE memo_peeker; SELECT params FROM memo.flights WHERE cache_name = 'peek'}),
        '{s1}', 'pg_read_all_stats sees the parameters');
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    finish_call($leader);
}
{
    $node->append_conf('postgresql.conf', 'pg_memo.max_flights = 1');
    $node->restart;
    my $blocker = hold_table();
    my ($a, $a_pid) = start_call($node, sprintf($count, 'full', 's0'));
    waiting_on_lock($a_pid);
    my ($b, $b_pid) = start_call($node, sprintf($count, 'full', 's1'));
    waiting_on_lock($b_pid);
    $blocker->query_safe('COMMIT');
    $blocker->quit;
    like((finish_call($a))[0], qr/^\s*5\s*$/m, 'full table: the flight\'s leader is right');
    my ($b_out, $b_err) = finish_call($b);
    like($b_out, qr/^\s*5\s*$/m, 'full table: the fallback is right');
    like($b_err, qr/WARNING:  pg_memo's flight table is full: this miss is computed without a flight\n.*pg_memo\.max_flights \(1\)/,
         'the fallback warned, naming pg_memo.max_flights');
    is(stat_of('full', 'flight_full'), '1', 'the fallback was counted');
}

is($node->safe_psql('postgres', q{SELECT count(*) FROM memo.flights}), '0', 'no flights remain');
$node->stop;
done_testing();
