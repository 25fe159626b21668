#!/usr/bin/env perl
# Stand-alone randomized consistency checker for pg_memo: the long mode of
# test/t/003_checker_consistency.pl (same code: test/perl/MemoConsistency.pm).
#
# Starts its own cluster under /tmp (unix socket only, a port in
# 55600-55699), seeds the directory and the checker's tables, runs writers
# and readers until --reads reads were checked, prints the figures, and
# stops the cluster with pg_ctl (its own data directory's postmaster).
# pg_memo and pg_memo_directory must be installed (scripts/build.sh).
#
#   test/consistency/checker.pl --reads 100000 --writers 2 --readers 4
#   ... --no-deltas   chk.items and directory.employees watched without deltas
#   ... --standby     the readers read on a streaming hot standby of the
#                     cluster (pg_memo.standby_records = on), the writers
#                     write on the primary
#   ... --faults      fault mode (test/consistency/MemoFaults.pm): for
#                     --max-seconds (660 by default) the readers read and
#                     the writers write while a fault injector terminates
#                     readers, writers and flight leaders, cancels
#                     computations (and readers run some reads with a tiny
#                     statement_timeout), ends the waits of commits for a
#                     synchronous standby that never comes (commits in
#                     doubt), and kill -9s a backend --resets
#                     times (8 by default; the postmaster resets shared
#                     memory each time); the sessions reconnect; --reads
#                     (10000 by default) is then only the least number of
#                     reads to check. --fault-every-ms (2000): mean time
#                     between the other faults; --wait-timeout-ms (2000):
#                     pg_memo.wait_timeout; --timeout-share (0.05): the
#                     share of reads with a statement_timeout of 1-30 ms.
#
# Run as root it re-runs itself as the postgres OS user (initdb refuses
# root). Exits 1 if any mismatch was found, a worker failed, fewer than
# --reads reads were checked, a read raised an error or the directory's
# derived columns were found inconsistent; in fault mode also if a flight
# was stuck or left at the end, a wait outlasted its bound, fewer than
# --resets kill -9 resets were done and logged, or the server log shows a
# crash the injector did not cause. Errors that the injected faults explain
# (SQLSTATE class 57 and 08) are counted by SQLSTATE, never judged.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Getopt::Long;
use File::Temp ();
use MemoConsistency;
use lib $FindBin::RealBin;
use MemoFaults;

my %opt = (reads => undef, writers => 2, readers => 4, 'seed-rows' => 2000, 'pause-ms' => 20,
           'max-seconds' => undef, port => 55600 + int rand 99, keep => 0, rng => undef,
           'cache-size' => '64MB', bindir => undef, 'no-deltas' => 0, standby => 0, faults => 0,
           'fault-every-ms' => 2000, resets => 8, 'wait-timeout-ms' => 2000, 'timeout-share' => 0.05);
GetOptions(\%opt, 'reads=i', 'writers=i', 'readers=i', 'seed-rows=i', 'pause-ms=f', 'max-seconds=i',
           'port=i', 'keep!', 'rng=i', 'cache-size=s', 'bindir=s', 'no-deltas!', 'standby!', 'faults!',
           'fault-every-ms=i', 'resets=i', 'wait-timeout-ms=i', 'timeout-share=f')
  or die "usage: $0 [--reads N] [--writers N] [--readers N] [--seed-rows N] [--pause-ms MS]"
       . " [--max-seconds S] [--port P] [--cache-size SIZE] [--rng SEED] [--bindir DIR] [--keep] [--no-deltas]"
       . " [--standby] [--faults [--resets N] [--fault-every-ms MS] [--wait-timeout-ms MS] [--timeout-share F]]\n";
die "--port must be in 55600-55698\n" unless $opt{port} >= 55600 && $opt{port} <= 55698;
die "--faults does not go with --standby\n" if $opt{faults} && $opt{standby};
$opt{reads} //= $opt{faults} ? 10_000 : 100_000;
$opt{'max-seconds'} //= $opt{faults} ? 660 : 4 * 3600;

if ($> == 0) {
    my %flag = map { $_ => 1 } qw(keep no-deltas standby faults);
    my @args = map { ("--$_", $opt{$_}) } grep { !$flag{$_} && defined $opt{$_} } sort keys %opt;
    push @args, map { "--$_" } grep { $opt{$_} } sort keys %flag;
    exec('runuser', '-u', 'postgres', '--', $^X, "$FindBin::RealBin/$FindBin::RealScript", @args)
      or die "runuser: $!";
}

# --bindir: another (relocated) installation, e.g. one with a modified pg_memo.
my $bindir = $opt{bindir} // `pg_config --bindir`;
chomp $bindir;
die "no PostgreSQL bindir (pg_config not found)\n" unless $bindir && -x "$bindir/postgres";
my $dir = File::Temp::tempdir('pgm_consistency.XXXXXX', DIR => '/tmp', CLEANUP => !$opt{keep});
my $data = "$dir/data";

sub run_cmd { system(@_) == 0 or die "failed: @_\n" }

run_cmd("$bindir/initdb", '-D', $data, '-A', 'trust', '-U', 'postgres', '--no-sync');
open my $conf, '>>', "$data/postgresql.conf" or die $!;
print $conf <<"CONF";
shared_preload_libraries = 'pg_memo'
pg_memo.cache_size = '$opt{'cache-size'}'
listen_addresses = ''
unix_socket_directories = '$dir'
port = $opt{port}
max_connections = 40
max_prepared_transactions = 20
deadlock_timeout = '100ms'
fsync = off
CONF
print $conf "pg_memo.standby_records = on\nwal_level = replica\nmax_wal_senders = 4\n" if $opt{standby};
# Fault mode: a short wait_timeout, so that a wait past it shows; a crash
# restart after each kill -9 (the default, said); a synchronous standby
# that never comes, which only the writers' transactions that set
# synchronous_commit = on wait for (commits in doubt that did commit).
print $conf "pg_memo.wait_timeout = '$opt{'wait-timeout-ms'}ms'\nrestart_after_crash = on\n"
  . "synchronous_standby_names = 'pgm_nobody'\nsynchronous_commit = local\n" if $opt{faults};
close $conf;
if ($opt{standby}) {
    open my $hba, '>>', "$data/pg_hba.conf" or die $!;
    print $hba "local replication all trust\n";
    close $hba;
}

my (@started, $standby_data);
END {
    # Stops exactly these clusters: pg_ctl signals the postmaster whose pid
    # its data directory's postmaster.pid holds. system() sets $?, the exit
    # status the END block would otherwise replace with pg_ctl's.
    local $?;
    system("$bindir/pg_ctl", '-D', $_, '-m', 'fast', '-w', 'stop') for reverse @started;
}
$SIG{INT} = $SIG{TERM} = sub { exit 2 };

run_cmd("$bindir/pg_ctl", '-D', $data, '-l', "$dir/server.log", '-w', 'start');
push @started, $data;

my $conn = { psql => "$bindir/psql", host => $dir, port => $opt{port}, dbname => 'postgres' };
MemoConsistency::setup($conn, seed_rows => $opt{'seed-rows'}, no_deltas => $opt{'no-deltas'});
my $reader_conn = $conn;
if ($opt{standby}) {
    # A hot standby on the next port: its queries never cancelled by
    # replay (they delay it instead), so every read is judged.
    $standby_data = "$dir/standby";
    run_cmd("$bindir/pg_basebackup", '-D', $standby_data, '-h', $dir, '-p', $opt{port}, '-U', 'postgres', '-R',
            '-X', 'stream', '--no-sync');
    open my $sconf, '>>', "$standby_data/postgresql.conf" or die $!;
    printf $sconf "port = %d\nhot_standby_feedback = on\nmax_standby_streaming_delay = -1\n", $opt{port} + 1;
    close $sconf;
    run_cmd("$bindir/pg_ctl", '-D', $standby_data, '-l', "$dir/standby.log", '-w', 'start');
    push @started, $standby_data;
    $reader_conn = { %$conn, port => $opt{port} + 1 };
    # Serving starts at the primary's first pg_memo record (a miss writes one).
    my $db = MemoConsistency::Psql->new($conn);
    $db->ok(q{SELECT memo.count('checker.start', 'SELECT * FROM chk.groups')});
    $db->ok(q{SELECT pg_current_xact_id()});  # flushes it
    $db->close;
    for (my $i = 0;; $i++) {  # until the standby has replayed all of it
        $db = MemoConsistency::Psql->new($conn);
        my ($r) = $db->query(q{SELECT count(*) FROM pg_stat_replication WHERE replay_lsn >= pg_current_wal_lsn()});
        $db->close;
        last if $r && $r->[0] == 1;
        die "the standby did not catch up\n" if $i > 600;
        select(undef, undef, undef, 0.1);
    }
}
my $faults;
if ($opt{faults}) {
    my $db = MemoConsistency::Psql->new($conn);
    my $commit_wait_ms = $db->ok(q{SELECT setting FROM pg_settings WHERE name = 'pg_memo.commit_wait_timeout'});
    $db->close;
    my $tolerant = { %$conn, tolerant => 1 };
    $faults = {
        timeout_share => $opt{'timeout-share'}, wait_timeout_ms => $opt{'wait-timeout-ms'},
        workers => [
            [faults => sub {
                my ($stop_file, $started, $deadline) = @_;
                MemoFaults::run_injector(conn => { %$tolerant, appname => 'faults' }, data => $data,
                    server_log => "$dir/server.log", log => "$dir/faults.log", problems_log => "$dir/problems.log",
                    every_ms => $opt{'fault-every-ms'}, resets => $opt{resets}, warmup => 10, quiet => 20,
                    stop_file => $stop_file, started => $started, deadline => $deadline);
            }],
            [monitor => sub {
                my ($stop_file, $started) = @_;
                MemoFaults::run_monitor(conn => { %$tolerant, appname => 'monitor' }, log => "$dir/faults.log",
                    wait_timeout_ms => $opt{'wait-timeout-ms'}, commit_wait_timeout_ms => $commit_wait_ms,
                    stop_file => $stop_file, started => $started);
            }],
        ],
    };
}
my $n = MemoConsistency::run(conn => $conn, reader_conn => $reader_conn, writers => $opt{writers},
    readers => $opt{readers}, reads => $opt{reads}, seed_rows => $opt{'seed-rows'}, pause_ms => $opt{'pause-ms'},
    max_seconds => $opt{'max-seconds'}, dir => $dir, rng => $opt{rng}, faults => $faults);
my ($fault_failures, @fault_report) = $opt{faults} ? after_faults($n) : (0);
my $stats = MemoConsistency::cache_stats($reader_conn);

print "\n", MemoConsistency::report($n, $stats);
print "directory.check_consistency() rows: $stats->{directory_inconsistencies}\n";
print "fault mode:\n", map { "  $_\n" } @fault_report if $opt{faults};
if (-s "$dir/problems.log") {
    print "problems log: $dir/problems.log\n" if $opt{keep};
    open my $p, '<', "$dir/problems.log" or die $!;
    my @lines = <$p>;
    print "first lines of the problems log:\n", @lines[0 .. ($#lines < 40 ? $#lines : 40)];
}
print "cluster kept in $dir\n" if $opt{keep};
# Fails on every error test/t/003_checker_consistency.pl fails on (003 also checks
# how much was covered).
exit($n->{mismatches} || $n->{worker_failures} || $n->{checked} < $opt{reads}
     || $n->{'reads.error'} || $n->{'repeatable_read.error'}
     || $stats->{directory_inconsistencies} || $fault_failures ? 1 : 0);

# Fault mode, once the workers have stopped: the flights must drain, the
# resets must have happened and be logged, and nothing else may have
# crashed. Returns the number of failures and the report's lines.
sub after_faults {
    my ($n) = @_;
    my @r;
    my $failures = 0;
    my $fail = sub { my ($why) = @_; $failures++; push @r, "FAILED: $why" };
    my $v = sub { $n->{$_[0]} // 0 };
    my $by = sub {  # "a 3, b 4" of the keys under a prefix
        my ($prefix) = @_;
        my @keys = sort grep { index($_, "$prefix.") == 0 } keys %$n;
        return join(', ', map { substr($_, length($prefix) + 1) . " $n->{$_}" } @keys) || 'none';
    };

    # No calls are running now: every flight must be gone within
    # pg_memo.wait_timeout and a margin, and nobody may still wait.
    my $db = MemoConsistency::reconnect({ %$conn, tolerant => 1 });
    my ($left, $waiting, $prepared, $t0) = (undef, undef, undef, time);
    for (;;) {
        ($left, $waiting, $prepared) = @{ ($db->query(q{SELECT (SELECT count(*) FROM memo.flights),
            (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension'),
            (SELECT count(*) FROM pg_prepared_xacts)}))[0] };
        last if $left == 0 && $waiting == 0;
        last if time - $t0 > $opt{'wait-timeout-ms'} / 1000 + 10;
        select(undef, undef, undef, 0.2);
    }
    my ($flight_rows) = $db->query(q{SELECT string_agg(format('leader %s, state %s, waiters %s, started %s, %s',
        leader_pid, state, waiters, started, cache_name), '; ') FROM memo.flights});
    $db->close;

    my @killed;
    if (open my $fl, '<', "$dir/faults.log") {
        while (<$fl>) { push @killed, $1 if /^KILL9 (\d+)$/ }
    }
    my $log = MemoFaults::read_server_log("$dir/server.log", \@killed);

    my $faults = $by->('faults');
    push @r, "faults injected: $faults";
    push @r, sprintf('terminated leaders had %d waiters in all (%d leaders had some)',
                     $v->('faults.terminate_leader.waiters'), $v->('faults.terminate_leader.with_waiters'));
    push @r, sprintf('reads run with a statement_timeout of 1-30 ms: %d', $v->('reads.with_statement_timeout'));
    push @r, sprintf('kill -9: %d done (%d of a flight leader) of %d requested; server log: %d "terminating any other'
        . ' active server processes", %d "all server processes terminated; reinitializing", %d "pg_memo: starting with'
        . ' an empty cache", %d of the killed pids logged as terminated by signal 9; back to accepting connections'
        . ' after %.1f s on average, %.1f s at most',
        $v->('faults.kill9'), $v->('faults.kill9.of_a_leader'), $opt{resets}, $log->{terminating},
        $log->{reinitializing}, $log->{memo_empty}, $log->{killed_logged},
        $v->('faults.kill9') ? $v->('kill9.recovery_ms_total') / $v->('faults.kill9') / 1000 : 0,
        $v->('max.kill9_recovery_ms') / 1000);
    push @r, 'helper readers (3 in the flight of one key, at each leader fault): ' . $by->('reads.helper.split');
    push @r, sprintf('reads ended by a fault (not judged): %d; reconnections: %d (longest wait %.1f s);'
        . ' connection attempts refused: %s', $v->('reads.fault'), $v->('reconnects'),
        $v->('max.reconnect_ms') / 1000, $by->('connect_refused'));
    push @r, 'reader errors by SQLSTATE: ' . $by->('fault_errors.reader');
    push @r, 'writer errors by SQLSTATE: ' . $by->('fault_errors.writer');
    push @r, 'helper errors by SQLSTATE: ' . $by->('fault_errors.helper');
    push @r, 'commits in doubt (a fault ended their round trip): ' . $by->('in_doubt');
    push @r, 'prepared transactions left behind, then finished: ' . $by->('prepared_left_behind');
    push @r, 'the injector\'s and the monitor\'s own sessions: ' . join('; ', $by->('injector'), $by->('monitor'));
    push @r, sprintf('timed reads: memo call alone (split, txn) %d, longest %d ms, %d over pg_memo.wait_timeout'
        . ' (%d ms); statement-mode reads %d, longest %d ms, %d over it', $v->('timed.memo_call'),
        $v->('max.memo_call_ms'), $v->('timed.memo_call.over_wait_timeout'), $opt{'wait-timeout-ms'},
        $v->('timed.statement_read'), $v->('max.statement_read_ms'), $v->('timed.statement_read.over_wait_timeout'));
    my $per_call = $v->('bound.wait_per_call_ms') / 1000;
    push @r, sprintf('sampled pg_stat_activity %d times: longest wait in pg_memo (wait_event_type Extension) of one'
        . ' statement at least %.1f s for a statement of 1 memo call (bound %.1f s), %.1f s for one of 2 (bound %.1f s):'
        . ' calls x (wait_timeout + 4 x commit_wait_timeout) + 5 s; waits past their bound: %d', $v->('samples'),
        $v->('max.sampled_wait_ms.calls_1') / 1000, $per_call + 5, $v->('max.sampled_wait_ms.calls_2') / 1000,
        2 * $per_call + 5, $v->('waits_past_bound'));
    push @r, sprintf('flights seen in samples: %d, oldest %.1f s; stuck (no running live leader for more than'
        . ' %.1f s): %d; left after the run: %d, backends still waiting: %d, prepared transactions left: %d',
        $v->('flights_seen'), $v->('max.flight_age_ms') / 1000, $v->('bound.stuck_flight_ms') / 1000,
        $v->('stuck_flights'), $left, $waiting, $prepared);
    push @r, 'memo.stats summed just before each kill -9 (they restart with shared memory): ' . $by->('stats_before_resets');

    $fail->('stuck flights') if $v->('stuck_flights');
    $fail->('helper reads stuck a minute after the lock was released') if $v->('helpers_stuck');
    $fail->('helper readers died') if $v->('helpers_died');
    $fail->("flights left after the run: $flight_rows") if $left;
    $fail->("$waiting backends still waiting in pg_memo after the run") if $waiting;
    $fail->('waits past their bound') if $v->('waits_past_bound');
    $fail->('only ' . $v->('faults.kill9') . " kill -9 resets of $opt{resets}") if $v->('faults.kill9') < $opt{resets};
    # Each kill -9, and nothing else, restarted the server, and each restart
    # is logged: by the postmaster, by pg_memo, and under the pid killed.
    for my $line (qw(terminating reinitializing memo_empty killed_logged)) {
        $fail->(sprintf('%d kill -9 but %d "%s" lines in the server log', $v->('faults.kill9'), $log->{$line}, $line))
          if $log->{$line} != $v->('faults.kill9');
    }
    $fail->("unexpected lines in the server log:\n    " . join('    ', @{ $log->{unexpected} }))
      if @{ $log->{unexpected} };
    push @r, "faults log: $dir/faults.log" if $opt{keep};
    return ($failures, @r);
}
