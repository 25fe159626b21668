# Fault injection: pg_memo stays consistent when backends die, when time runs
# out and when its shared tables are too small for the load.
#
#   1. kill -9 of a flight's leader: the postmaster's crash restart leaves an
#      empty cache, no flights, and calls (and invalidation) that work.
#   2. pg_terminate_backend of leaders, waiters and random backends under
#      pgbench load: no other session fails, no flight is left, no arena byte
#      leaks.
#   3. statement_timeout very low in random sessions under load: only they get
#      57014, nothing is left behind.
#   4. pg_memo.max_flights = 1 under load: results right, fallbacks counted.
#   5. pg_memo.cache_size at its minimum, results of many sizes, and results
#      above pg_memo.max_result_size: results right, evictions counted,
#      memory within the arena at every sample.
#
# Every memo call of the load is checked by faults_check(), which compares it
# with the uncached truth and raises on a mismatch. The writes of the load
# change only a column that no cached query reads, so the truth stays fixed
# while each commit invalidates every entry over the table. The writer holds
# an ACCESS EXCLUSIVE lock for a moment before it commits, so that misses
# queue up behind it in flights (hits take no table lock).
#
# The CI mode runs a few short rounds. PG_MEMO_FAULTS_LONG=1 runs many more
# (bench/faults.sh); PG_MEMO_FAULTS_SEED fixes the random choices. Figures are
# printed as "figure: name = value" lines (in the regress log; on the
# terminal too in the long mode).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;
use IPC::Run;
use List::Util qw(max sum0);
use Time::HiRes qw(usleep);

my $long = $ENV{PG_MEMO_FAULTS_LONG} ? 1 : 0;
my %scale = $long
  ? (crashes => 5, terminate_rounds => 40, timeout_rounds => 20, round_seconds => 5,
     flights_seconds => 30, arena_seconds => 60, tiny_terminate_rounds => 20)
  : (crashes => 1, terminate_rounds => 4, timeout_rounds => 3, round_seconds => 3,
     flights_seconds => 4, arena_seconds => 6, tiny_terminate_rounds => 2);
my $clients = 6;
my $seed = $ENV{PG_MEMO_FAULTS_SEED} // time;
srand($seed);

sub figure {
    my ($name, $value) = @_;
    my $line = "figure: $name = $value";
    $long ? diag($line) : note($line);
}
figure('mode', $long ? 'long' : 'ci');
figure('seed', $seed);

my $node = memo_node('faults', conf => qq{
pg_memo.cache_size = '16MB'
restart_after_crash = on
max_connections = 40
log_statement = none
log_line_prefix = '%m [%p] %e '
});

# The items' counts and id sums below are the truth, computed once without
# the cache; the load's writes change only "touched".
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, touched int NOT NULL DEFAULT 0,
                      payload text NOT NULL);
  INSERT INTO items SELECT g, g % 8, 0, md5(g::text) FROM generate_series(1, 40000) g;
  SELECT memo.watch('items');
  CREATE TABLE truth (kind text, k int, value text, PRIMARY KEY (kind, k));
  INSERT INTO truth
    SELECT 'count', k, (SELECT count(*) FROM items WHERE grp <= k AND payload LIKE '%a%')
      FROM generate_series(0, 7) k
    UNION ALL
    SELECT 'ids', k, (SELECT sum(id) FROM items WHERE grp = k AND payload LIKE '%b%')
      FROM generate_series(0, 7) k;
  -- Rows 1..n for the size scenario: their md5 is computed uncached on demand.
  CREATE FUNCTION faults_rows_md5(n int) RETURNS text LANGUAGE sql STABLE AS
    $$ SELECT md5(string_agg(id || ':' || payload, ',' ORDER BY id)) FROM items WHERE id <= n $$;
  CREATE FUNCTION faults_check(kind text, k int, got text) RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    want text := CASE kind WHEN 'rows' THEN faults_rows_md5(k)
                           ELSE (SELECT value FROM truth t WHERE t.kind = faults_check.kind AND t.k = faults_check.k) END;
  BEGIN
    IF got IS DISTINCT FROM want THEN
      RAISE EXCEPTION 'faults: wrong % result for k = %: got %, want %', kind, k, got, want;
    END IF;
  END $$;
});

my %query = (
    count => q{SELECT * FROM items WHERE grp <= $1::int AND payload LIKE '%a%'},
    ids   => q{SELECT id FROM items WHERE grp = $1::int AND payload LIKE '%b%' ORDER BY id},
    rows  => q{SELECT id, payload FROM items WHERE id <= $1::int ORDER BY id},
);
(my $count_text = $query{count}) =~ s/'/''/g;
(my $ids_text = $query{ids}) =~ s/'/''/g;

# The memo calls, as SQL whose value faults_check compares with the truth.
sub count_call {
    my ($cache, $k) = @_;
    return "memo.count('$cache', '$count_text', ARRAY[$k]::text[])::text";
}
sub ids_call {
    my ($cache, $k) = @_;
    return "(SELECT sum(id)::text FROM memo.list('$cache', '$ids_text', ARRAY[$k]::text[]) AS t(id int))";
}
sub rows_call {
    my ($cache, $n) = @_;
    return "(SELECT md5(string_agg(id || ':' || payload, ',' ORDER BY id)) FROM "
      . "memo.list('$cache', '$query{rows}', ARRAY[$n]::text[]) AS t(id int, payload text))";
}

sub sql_value { return $node->safe_psql('postgres', $_[0]); }
# Runs a faults_check() call; returns its error, '' when the result was right.
sub check_error {
    my (undef, undef, $err) = $node->psql('postgres', $_[0]);
    return $err;
}
# The WARNING a session gets for its first result too large to store, with
# its DETAIL and HINT: removed from err; says whether it was there.
# (larger than pg_memo.max_result_size, or than half of pg_memo.cache_size)
my $too_large_warning = qr/^psql:<stdin>:\d+: WARNING:  a result of cache name "[^"]+" is not stored: about \d+ kB, (?:larger than pg_memo\.max_result_size|more than half of pg_memo\.cache_size) \(\d+ kB\)\nDETAIL:  [^\n]*\nHINT:  [^\n]*pg_memo\.(?:max_result_size|cache_size)[^\n]*(?:\n|\z)/m;
sub without_too_large_warning {
    my ($err) = @_;
    my $warned = $$err =~ s/$too_large_warning//;
    return $warned ? 1 : 0;
}
sub stat_sum {
    my ($column, $cache_like) = @_;
    return sql_value("SELECT coalesce(sum($column), 0) FROM memo.stats WHERE cache_name LIKE '$cache_like'");
}
sub info { return $node->query_hash('postgres', 'SELECT * FROM memo.info',
        qw(arena_bytes used_bytes free_bytes entries evictions)); }

# The arena's bookkeeping when it holds nothing: what "no leaked byte" means.
sql_value('SELECT memo.reset()');
my $empty_arena_used = info()->{used_bytes};
figure('empty arena used_bytes', $empty_arena_used);

# --- pgbench load ------------------------------------------------------------

my $script_dir = PostgreSQL::Test::Utils::tempdir;
sub script {
    my ($name, $text) = @_;
    my $path = "$script_dir/$name.sql";
    open my $fh, '>', $path or die "cannot write $path: $!";
    print $fh $text;
    close $fh;
    return $path;
}

# Readers: a few keys, so that several clients miss the same key at once.
my $read_script = script('read', qq{\\set k random(0, 2)
SELECT faults_check('count', :k, @{[count_call('faults.count', ':k')]});
SELECT faults_check('ids', :k, @{[ids_call('faults.ids', ':k')]});
});
# A committed write that invalidates every entry over items. Its lock holds
# the next misses back, so that flights with waiters form.
my $write_script = script('write', q{\set id random(1, 40000)
BEGIN;
LOCK TABLE items IN ACCESS EXCLUSIVE MODE;
UPDATE items SET touched = touched + 1 WHERE id = :id;
SELECT pg_sleep(0.05);
COMMIT;
});

# The application_name of the load's sessions (the TAP framework sets
# PGAPPNAME for every other one).
my $load_name = 'faults_load';

# Runs pgbench with the scripts (path@weight) for $seconds, calling $during
# until it ends. Returns the transactions processed and every client abort
# as {command, message}: pgbench stops a client at its first error.
sub run_load {
    my ($seconds, $scripts, $during) = @_;
    my @cmd = ('pgbench', '-n', '-c', $clients, '-j', 2, '-T', $seconds, '-h', $node->host,
        '-p', $node->port, (map { ('-f', $_) } @$scripts), 'postgres');
    my ($out, $err) = ('', '');
    my $run = do {
        local $ENV{PGAPPNAME} = $load_name;  # only pgbench's sessions
        IPC::Run::start(\@cmd, '>', \$out, '2>', \$err,
            IPC::Run::timeout($seconds + $PostgreSQL::Test::Utils::timeout_default));
    };
    while ($run->pumpable) {
        $during ? $during->() : usleep(50_000);
        $run->pump_nb;
    }
    $run->finish;
    my ($tx) = $out =~ /number of transactions actually processed: (\d+)/;
    die "pgbench did not run:\n$out\n$err" unless defined $tx;
    my @aborts;
    for my $chunk (split /^pgbench: /m, $err) {
        next unless $chunk =~ /client \d+ script \d+ aborted in command (\d+) query \d+: (.*)/s;
        push @aborts, { command => $1, message => $2 };
    }
    my @other = grep { /^error: / && !/aborted in command|Run was aborted/ } split /^pgbench: /m, $err;
    push @aborts, map { { command => -1, message => $_ } } @other;
    # The load is over only when its backends are gone, not just its client.
    if (!$node->poll_query_until('postgres',
            qq{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = '$load_name'})) {
        diag($node->safe_psql('postgres', qq{SELECT pid, state, wait_event_type, wait_event, query
            FROM pg_stat_activity WHERE application_name = '$load_name'}));
        diag($node->safe_psql('postgres', 'SELECT * FROM memo.flights'));
        die 'the backends of the load did not exit';
    }
    return ($tx, @aborts);
}

# The error a client gets when its own backend is terminated.
sub own_termination {
    my ($message) = @_;
    return $message =~ /terminating connection due to administrator command|server closed the connection unexpectedly|connection to server was lost/;
}

# Counts the server log's ERROR and FATAL lines since $offset by SQLSTATE.
sub log_errors_since {
    my ($offset) = @_;
    my %by_state;
    my $log = slurp_file($node->logfile, $offset);
    $by_state{$1}++ while $log =~ /^\S+ \S+ \S+ \[\d+\] (\w{5}) (?:ERROR|FATAL|PANIC):/mg;
    # The postmaster reports a crashed backend at LOG level.
    $by_state{'crash'}++
      while $log =~ /server process \(PID \d+\) (?:was terminated by signal|exited with exit code)|reinitializing/g;
    return \%by_state;
}
sub describe { my ($h) = @_; return join(', ', map { "$_: $h->{$_}" } sort keys %$h) || 'none'; }

sub no_flights_left {
    my ($what) = @_;
    is(sql_value('SELECT count(*) FROM memo.flights'), '0', "$what: no flight left once the load is over");
}

# The arena holds exactly its empty bookkeeping once every entry is reset.
sub no_leaked_bytes {
    my ($what) = @_;
    sql_value('SELECT memo.reset()');
    my $i = info();
    is($i->{entries}, '0', "$what: no entry after memo.reset()");
    is(sql_value('SELECT coalesce(sum(bytes), 0) FROM memo.stats'), '0', "$what: no bytes counted in memo.stats");
    figure("$what: leaked arena bytes", $i->{used_bytes} - $empty_arena_used);
    is($i->{used_bytes}, $empty_arena_used, "$what: the arena is back to its empty size (no leaked byte)");
}

# --- shared session helpers (background psql) ---------------------------------

sub hold_items {
    my $blocker = $node->background_psql('postgres');
    $blocker->query_safe('BEGIN');
    $blocker->query_safe('LOCK TABLE items IN ACCESS EXCLUSIVE MODE');
    return $blocker;
}
# psql exits when it loses its connection: collect what it printed.
sub lost_session_stderr {
    my ($s) = @_;
    eval { $s->{run}->pump while $s->{run}->pumpable; };
    eval { $s->{run}->finish; };
    return $s->{stderr};
}

# --- 1. kill -9 of a flight's leader ------------------------------------------

my $crash_sql = "SELECT faults_check('count', 2, " . count_call('faults.crash', 2) . ')';
for my $crash (1 .. $scale{crashes}) {
    sql_value('UPDATE items SET touched = touched + 1 WHERE id = 2');  # the leader must miss
    sql_value("SELECT faults_check('count', 1, " . count_call('faults.crash', 1) . ')');
    ok(info()->{entries} > 0, "crash $crash: the cache holds entries before the crash");

    my $blocker = hold_items();
    my ($leader, $leader_pid) = start_call($node, $crash_sql);
    $node->poll_query_until('postgres',
        "SELECT wait_event_type = 'Lock' OR state = 'idle' FROM pg_stat_activity WHERE pid = $leader_pid")
      or die 'the leader neither blocked nor finished';
    if (!is(sql_value("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $leader_pid"), 'Lock',
            "crash $crash: the leader missed and waits for the table lock")) {
        $_->quit for $leader, $blocker;
        next;
    }
    my @waiters = map { [start_call($node, $crash_sql)] } 1 .. 3;
    $node->poll_query_until('postgres', q{SELECT waiters = 3 FROM memo.flights WHERE cache_name = 'faults.crash'})
      or die 'the waiters did not join';
    is(sql_value(q{SELECT leader_pid FROM memo.flights WHERE cache_name = 'faults.crash'}), $leader_pid,
        "crash $crash: the held-back backend leads the flight");

    my $log_offset = -s $node->logfile;
    kill 'KILL', $leader_pid;
    $node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
    $node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
    pass("crash $crash: the server accepts connections again after the crash restart");

    # A crash restart ends every session: the waiters lose theirs too.
    my $waiters_lost = grep { /crash of another server process|server closed the connection unexpectedly|connection to server was lost/ }
      map { lost_session_stderr($_->[0]) } @waiters;
    is($waiters_lost, 3, "crash $crash: each waiter lost its session in the crash restart");
    like(lost_session_stderr($leader), qr/server closed the connection unexpectedly|connection to server was lost/,
        "crash $crash: the killed leader's client lost its connection");
    $blocker->{run}->kill_kill;
    figure("crash $crash: waiters that lost their session", $waiters_lost);

    my $after = info();
    is($after->{entries}, '0', "crash $crash: memo.info shows an empty cache");
    is($after->{used_bytes}, $empty_arena_used, "crash $crash: the arena is empty");
    is(sql_value('SELECT count(*) FROM memo.flights'), '0', "crash $crash: memo.flights is empty");
    my $computations = stat_sum('computations', 'faults.crash');
    is(check_error($crash_sql), '', "crash $crash: the crashed flight's key computes the right result");
    is(check_error("SELECT faults_check('count', 1, " . count_call('faults.crash', 1) . ')'), '',
        "crash $crash: a key cached before the crash is computed again, right");
    is(stat_sum('computations', 'faults.crash'), $computations + 2, "crash $crash: both were computed");
    sql_value($crash_sql);
    is(stat_sum('computations', 'faults.crash'), $computations + 2, "crash $crash: and then hit");
    is(sql_value(q{SELECT triggers_enabled FROM memo.watched WHERE table_name = 'items'::regclass}), 't',
        "crash $crash: items is still watched");
    sql_value('UPDATE items SET touched = touched + 1 WHERE id = 1');
    sql_value($crash_sql);
    is(stat_sum('computations', 'faults.crash'), $computations + 3,
        "crash $crash: a committed write still invalidates");
}

# --- 2. pg_terminate_backend under load -----------------------------------------

# Terminates one backend of the load: the leader of a running flight (one
# with waiters first), a waiter on a flight, or any backend of the load
# (between statements, on the table lock, computing, ...). Returns what it
# aimed at and how many waiters the flight had, or nothing when no such
# backend existed at that moment.
my %victims = (
    leader => q{SELECT leader_pid, waiters FROM memo.flights WHERE state = 'running'},
    waiter => qq{SELECT pid, 0 FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND application_name = '$load_name'},
    # Not one still connecting (state NULL): pgbench gives up if it cannot connect.
    any    => qq{SELECT pid, 0 FROM pg_stat_activity WHERE application_name = '$load_name' AND state IS NOT NULL},
);
my @victim_kinds = qw(leader leader waiter waiter any);
sub terminate_one {
    my $kind = $victim_kinds[int rand @victim_kinds];
    my ($done, $waiters) = split /\|/, sql_value("SELECT pg_terminate_backend(pid), waiters
        FROM ($victims{$kind}) v(pid, waiters) ORDER BY waiters DESC, random() LIMIT 1");
    return ($done // '') eq 't' ? ($kind, $waiters) : ();
}

sub reset_counters { sql_value('SELECT memo.reset_stats()'); }

# The server log since $offset has errors of the given SQLSTATEs only.
sub log_has_only {
    my ($offset, $what, @allowed) = @_;
    my $errors = log_errors_since($offset);
    my %unexpected = map { $_ => $errors->{$_} } grep { my $e = $_; !grep { $_ eq $e } @allowed } keys %$errors;
    is(describe(\%unexpected), 'none',
        "$what: the server log has no error" . (@allowed ? ' but ' . join(', ', @allowed) : ''));
    return $errors;
}

# Rounds of load during which backends are terminated (at most half the
# clients a round) and, now and then, memo.reset() drops every entry,
# including those pinned by flights.
sub terminate_under_load {
    my ($what, $rounds, $scripts, $check_sql) = @_;
    reset_counters();
    my (%terminated, $transactions, @failures, $self_aborts, $orphaned_waiters, $resets);
    my $log_offset = -s $node->logfile;
    for my $round (1 .. $rounds) {
        my $kills = 0;
        my ($tx, @aborts) = run_load($scale{round_seconds}, $scripts, sub {
            usleep(int(rand 100_000));
            if (rand() < 0.1) {
                sql_value('SELECT memo.reset()');
                $resets++;
            }
            return if $kills >= $clients / 2;  # keep most clients running
            my ($kind, $waiters) = terminate_one() or return;
            $terminated{$kind}++;
            $orphaned_waiters += $waiters;
            $kills++;
        });
        $transactions += $tx;
        $self_aborts += grep { own_termination($_->{message}) } @aborts;
        push @failures, grep { !own_termination($_->{message}) } @aborts;
        no_flights_left("$what round $round") if $round == 1;
    }
    my $terminations = sum0(values %terminated);
    figure("$what: transactions", $transactions);
    figure("$what: terminations ($_)", $terminated{$_} // 0) for sort keys %victims;
    figure("$what: waiters on the flights of terminated leaders", $orphaned_waiters // 0);
    figure("$what: memo.reset() calls", $resets // 0);
    figure("$what: clients ended by their own termination", $self_aborts);
    figure("$what: failed clients (any other error)", scalar @failures);
    figure("$what: $_", stat_sum($_, 'faults.%'))
      for qw(waits shared takeovers computations wait_timeouts evictions flight_full);
    ok($terminations > 0, "$what: backends were terminated under load");
    ok($self_aborts <= $terminations, "$what: only terminated sessions ended");
    is(scalar(@failures), 0, "$what: no other session got an error (0 failed waiters)")
      or diag(join("\n", map { "command $_->{command}: $_->{message}" } @failures));
    log_has_only($log_offset, $what, '57P01');
    figure("$what: stuck flights", sql_value('SELECT count(*) FROM memo.flights'));
    no_flights_left($what);
    is(check_error($check_sql), '', "$what: later calls are right");
    no_leaked_bytes($what);
}

terminate_under_load('terminate', $scale{terminate_rounds}, ["$read_script\@8", "$write_script\@1"],
    "SELECT faults_check('count', 1, " . count_call('faults.count', 1) . ')');

# --- 3. statement_timeout under load ----------------------------------------------

# One session in ten runs its call with a 1 ms statement_timeout. pgbench
# names the failing command: those of the limited branch are numbered 3 to 5,
# the unlimited call 7. Both messages below are SQLSTATE 57014: PostgreSQL
# itself reports a 1 ms timeout that fires while the statement is still being
# parsed as "user request" (start_xact_command re-arms the timer, which
# clears its indicator, while the cancel it sent is still pending).
my $timeout_script = script('timeout', qq{\\set k random(0, 2)
\\set limited random(0, 9)
\\if :limited = 0
SET statement_timeout = '1ms';
SELECT faults_check('count', :k, @{[count_call('faults.count', ':k')]});
RESET statement_timeout;
\\else
SELECT faults_check('count', :k, @{[count_call('faults.count', ':k')]});
\\endif
});
{
    reset_counters();
    my ($transactions, @timeouts, @failures);
    my $log_offset = -s $node->logfile;
    for my $round (1 .. $scale{timeout_rounds}) {
        my ($tx, @aborts) = run_load($scale{round_seconds}, ["$timeout_script\@8", "$write_script\@1"]);
        $transactions += $tx;
        for my $a (@aborts) {
            if ($a->{command} >= 3 && $a->{command} <= 5
                && $a->{message} =~ /canceling statement due to (?:statement timeout|user request)/) {
                push @timeouts, $a;
            } else {
                push @failures, $a;
            }
        }
    }
    figure('timeout: transactions', $transactions);
    figure('timeout: limited sessions that got 57014', scalar @timeouts);
    figure('timeout: of which reported as "user request"', scalar grep { $_->{message} =~ /user request/ } @timeouts);
    figure('timeout: other failures', scalar @failures);
    figure("timeout: $_", stat_sum($_, 'faults.%')) for qw(waits shared takeovers computations);
    ok(@timeouts > 0, 'timeout: limited sessions timed out');
    is(scalar(@failures), 0, 'timeout: no other session got an error')
      or diag(join("\n", map { "command $_->{command}: $_->{message}" } @failures));
    my $errors = log_has_only($log_offset, 'timeout', '57014');
    # A client whose 1 ms statement is still running when pgbench's -T ends
    # is dropped without reading its result: the server logs that timeout and
    # no client reports it, at most one a client and round.
    my $logged = $errors->{'57014'} // 0;
    figure('timeout: 57014 in the server log', $logged);
    ok($logged >= @timeouts && $logged <= @timeouts + $clients * $scale{timeout_rounds},
        'timeout: each timeout was a 57014 in the server log')
      or diag("logged $logged, clients reported " . scalar(@timeouts));
    no_flights_left('timeout');
    is(check_error("SELECT faults_check('count', 2, " . count_call('faults.count', 2) . ')'), '',
        'timeout: later calls are right');
    no_leaked_bytes('timeout');
}

# --- 4. a flight table that is too small ---------------------------------------------

$node->append_conf('postgresql.conf', 'pg_memo.max_flights = 1');
$node->restart;
{
    my @flight_counts;
    my $log_offset = -s $node->logfile;
    my ($tx, @aborts) = run_load($scale{flights_seconds}, ["$read_script\@8", "$write_script\@1"], sub {
        push @flight_counts, sql_value('SELECT count(*) FROM memo.flights');
        usleep(20_000);
    });
    figure('max_flights=1: transactions', $tx);
    figure('max_flights=1: most flights seen at once', max(@flight_counts));
    figure("max_flights=1: $_", stat_sum($_, 'faults.%')) for qw(flight_full waits shared computations);
    is(scalar(@aborts), 0, 'max_flights=1: no errors, results right')
      or diag(join("\n", map { "command $_->{command}: $_->{message}" } @aborts));
    ok(max(@flight_counts) <= 1, 'max_flights=1: never more than one flight');
    ok(stat_sum('flight_full', 'faults.%') > 0, 'max_flights=1: fallbacks are counted in flight_full');
    log_has_only($log_offset, 'max_flights=1');
    no_flights_left('max_flights=1');
}

# --- 5. an arena far too small, and results too large to store -------------------------

$node->append_conf('postgresql.conf', "pg_memo.cache_size = '1MB'\npg_memo.max_flights = 1024");
$node->restart;
sql_value('SELECT memo.reset()');
$empty_arena_used = info()->{used_bytes};
is(info()->{arena_bytes}, 1024 * 1024, 'tiny arena: the arena is pg_memo.cache_size (1MB)');

# Results above pg_memo.max_result_size (1MB) and above half the arena are
# returned right, computed every time, and not stored.
{
    for my $case ([40000, 'above max_result_size'], [9000, 'above half the arena'], [200, 'small']) {
        my ($n, $what) = @$case;
        my $cache = "faults.size.$n";
        for my $call (1, 2) {
            my $err = check_error("SELECT faults_check('rows', $n, " . rows_call($cache, $n) . ')');
            is(without_too_large_warning(\$err), $n == 200 ? 0 : 1,
                "result $what: call $call warns (a session each) unless it is stored");
            is($err, '', "result $what: call $call is right");
        }
        figure("result of $n rows: bytes", sql_value(
            "SELECT sum(pg_column_size(t.*)) FROM ($query{rows}) t" =~ s/\$1::int/$n/r));
    }
    is(stat_sum('too_large', 'faults.size.40000'), '2', 'result above max_result_size: counted too_large each time');
    is(stat_sum('computations', 'faults.size.40000'), '2', 'result above max_result_size: computed each time');
    is(stat_sum('entries', 'faults.size.40000'), '0', 'result above max_result_size: not stored');
    is(stat_sum('too_large', 'faults.size.9000'), '2', 'result above half the arena: counted too_large');
    is(stat_sum('entries', 'faults.size.9000'), '0', 'result above half the arena: not stored');
    is(stat_sum('hits', 'faults.size.200'), '1', 'small result: stored and hit');

    my $err = check_error("SET pg_memo.max_result_size = '8kB'; SELECT faults_check('rows', 200, "
            . rows_call('faults.size.setting', 200) . ')');
    is(without_too_large_warning(\$err), 1, 'max_result_size lowered: a WARNING');
    is($err, '', 'max_result_size lowered: the result is right');
    is(stat_sum('too_large', 'faults.size.setting'), '1', 'max_result_size lowered: the 200-row result is too large now');
    is(stat_sum('entries', 'faults.size.setting'), '0', 'max_result_size lowered: and not stored');
}

# Results of many sizes (100 to 9,000 rows: 6 kB to over half the arena)
# under 90 keys: far more than the arena holds.
my $sizes_script = script('sizes', qq{\\set n 100 * random(1, 90)
SELECT faults_check('rows', :n, @{[rows_call('faults.sizes', ':n')]});
});
{
    reset_counters();
    my (@used, @entry_bytes);
    my $arena = info()->{arena_bytes};
    my $log_offset = -s $node->logfile;
    my ($tx, @aborts) = run_load($scale{arena_seconds}, ["$sizes_script\@20", "$write_script\@1"], sub {
        my $s = $node->query_hash('postgres',
            'SELECT used_bytes, (SELECT coalesce(sum(bytes), 0) FROM memo.stats) AS entry_bytes FROM memo.info',
            qw(used_bytes entry_bytes));
        push @used, $s->{used_bytes};
        push @entry_bytes, $s->{entry_bytes};
        usleep(20_000);
    });
    my $i = info();
    figure('tiny arena: transactions', $tx);
    figure('tiny arena: memo.info samples', scalar @used);
    figure('tiny arena: most used_bytes sampled', max(@used));
    figure('tiny arena: most entry bytes sampled', max(@entry_bytes));
    figure('tiny arena: memo.info evictions', $i->{evictions});
    figure("tiny arena: $_", stat_sum($_, 'faults.sizes')) for qw(evictions too_large invalidations hits misses);
    is(scalar(@aborts), 0, 'tiny arena: no errors, every result right')
      or diag(join("\n", map { "command $_->{command}: $_->{message}" } @aborts));
    ok(max(@entry_bytes) <= $arena, 'tiny arena: entry bytes never above pg_memo.cache_size');
    ok(stat_sum('evictions', 'faults.sizes') > 0, 'tiny arena: evictions are counted in memo.stats');
    ok($i->{evictions} > 0, 'tiny arena: and in memo.info');
    log_has_only($log_offset, 'tiny arena');
    no_flights_left('tiny arena');
    no_leaked_bytes('tiny arena');
}

# Terminations and resets while the tiny arena evicts: pinned entries must
# neither be evicted nor leak.
terminate_under_load('tiny arena + terminate', $scale{tiny_terminate_rounds},
    ["$sizes_script\@10", "$read_script\@10", "$write_script\@1"],
    "SELECT faults_check('rows', 4000, " . rows_call('faults.sizes', 4000) . ')');

$node->stop;
done_testing();
