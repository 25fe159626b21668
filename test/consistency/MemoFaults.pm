# The fault mode of the randomized consistency checker
# (test/consistency/checker.pl --faults): a fault injector that also watches
# the flights and the waits, and the reading of the server log afterwards.
#
# The injector runs beside the checker's readers and writers (one more
# worker of MemoConsistency::run) and, at random moments:
#   - terminates a reader's or a writer's backend (pg_terminate_backend);
#   - terminates a flight's leader: it empties the cache (memo.reset())
#     and holds an ACCESS EXCLUSIVE lock on a table the readers read
#     (directory.employees or chk.items) for a moment, so that the
#     computations of the calls that now miss wait for the lock inside
#     their flights and gather waiters (three helper readers of one key,
#     and the readers' hot reads: the same key in every reader for 5 s),
#     then terminates the leader of one (the most waiters first) found in
#     memo.flights;
#   - cancels a computation (pg_cancel_backend): a leader or a waiter caught
#     the same way, or any backend running a memo call;
#   - kill -9 (SIGKILL) of a client backend of the cluster (a flight's
#     leader half of the time), --resets times in the run, spread over it:
#     the postmaster then ends every session and resets shared memory.
#   - ends the waits of the writers' commits that wait for a synchronous
#     standby that never comes (a few of their transactions set
#     synchronous_commit = on): terminated, the commit is in doubt for the
#     client but committed; cancelled, the COMMIT succeeds with a warning.
# The readers add their own: a share of their reads run with a
# statement_timeout of 1 to 30 ms.
#
# A monitor, in a process of its own, samples pg_stat_activity and
# memo.flights every ~200 ms:
#   - waits: a backend in pg_memo's wait (wait_event_type 'Extension', the
#     only extension loaded) is followed while consecutive samples show it
#     in the same statement (pid, backend_start, query_start). The span
#     between the first and the last sample is a lower bound of the time
#     the statement spent waiting, so a span above the bound is a wait past
#     its timeout, never a timing flake. The bound: the statement's memo
#     calls (counted in its text: each memo.* call 1, cached_list_employees
#     2: memo.count and memo.list_as) times (pg_memo.wait_timeout, the most
#     a call waits for flights in all, plus 4 commit waits of
#     pg_memo.commit_wait_timeout), plus a 5 s margin.
#   - flights: one without a running, live leader (its leader gone, or
#     done, failed, abandoned) seen so in consecutive samples spanning more
#     than pg_memo.wait_timeout + 5 s is stuck: its waiters would have been
#     woken, or have given up, long before.
package MemoFaults;

use strict;
use warnings;
use POSIX ();
use Time::HiRes ();
use MemoConsistency;

use constant MARGIN_SECONDS => 5;

# The tables the injector locks, one at a time (holding one lock and waiting
# for another would make it part of deadlocks), and the specs that read
# each (MemoConsistency::random_spec's names).
my @LOCKABLE = (['directory.employees', qr/^directory$/], ['chk.items', qr/^chk\./]);

sub postmaster_pid {
    my ($data) = @_;
    open my $fh, '<', "$data/postmaster.pid" or return undef;
    my $pid = <$fh>;
    chomp $pid if defined $pid;
    return $pid;
}

# The pid is a backend of this cluster: a child of the postmaster of $data,
# showing the "postgres: " process title.
sub backend_of_cluster {
    my ($pid, $data) = @_;
    my $pm = postmaster_pid($data) or return 0;
    open my $st, '<', "/proc/$pid/stat" or return 0;
    my $stat = <$st> // '';
    my ($after) = $stat =~ /\)\s+(.*)$/ or return 0;
    my (undef, $ppid) = split ' ', $after;
    return 0 unless $ppid && $ppid == $pm;
    open my $cl, '<', "/proc/$pid/cmdline" or return 0;
    my $cmd = <$cl> // '';
    return $cmd =~ /^postgres: / ? 1 : 0;
}

sub count_lines {
    my ($file, $re) = @_;
    open my $fh, '<', $file or return 0;
    my $n = 0;
    while (<$fh>) { $n++ if /$re/ }
    return $n;
}

# What the injector and the monitor start with: their log (appended to,
# flushed at once), a function that writes a timed line to it, and their
# connection.
sub process_start {
    my (%o) = @_;
    open my $log, '>>', $o{log} or die "$o{log}: $!";
    $log->autoflush(1);
    my $say = sub { printf $log "%.3f %s\n", Time::HiRes::time() - $o{started}, join(' ', @_) };
    return ($log, $say, MemoConsistency::reconnect($o{conn}));
}

# Options: conn (a tolerant connection), data (the data directory), server_log,
# log (the injector's own log of what it did), problems_log (the checker's),
# every_ms (mean time between faults other than kill -9), resets (kill -9 in
# the run), warmup and quiet (seconds at the start and the end without
# faults), and from MemoConsistency::run stop_file, started, deadline.
sub run_injector {
    my (%o) = @_;
    my %n;
    my ($log, $say, $db) = process_start(%o);
    my $from = $o{started} + $o{warmup};
    my $until = $o{deadline} - $o{quiet};
    my $slot = ($until - $from) / ($o{resets} || 1);
    my @kill_at = map { $from + $slot * ($_ + 0.15 + 0.7 * rand) } 0 .. $o{resets} - 1;
    my $next_fault = $from + rand($o{every_ms} / 1000);

    # Runs $code with the session; a fault (this session's own: a crash
    # restart ends it too) replaces the session. Returns whether it ran.
    my $guard = sub {
        my ($code) = @_;
        return 1 if eval { $code->(); 1 };
        my $e = $@;
        die $e unless MemoConsistency::is_fault($e);
        $n{'injector.own_faults.' . $e->kind}++;
        $db = MemoConsistency::recover_session($db, $o{conn}, undef);
        return 0;
    };
    my $pick = sub {  # (pid, application_name) of a random client backend of ours
        my ($where) = @_;
        my ($row) = $db->query("SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend'"
                               . " AND pid <> pg_backend_pid() AND application_name LIKE 'chk\\_%' AND ($where)"
                               . ' ORDER BY random() LIMIT 1');
        return @$row ? @$row : ();
    };
    # Helper readers: processes of their own, forked for one moment, each
    # one checked read (split mode: the memo call alone) of one spec, the
    # same for all: one leads the flight of its key, the others wait in it.
    # Their outcomes are counted as the readers' are ('helper'), and judged
    # alike; a read that a fault ends is 'fault'.
    my $helpers_start = sub {
        my ($k, $reads) = @_;
        my $spec = MemoConsistency::random_spec();
        $spec = MemoConsistency::random_spec() until $spec->{name} =~ $reads;
        my @helpers;
        for my $i (1 .. $k) {
            my $file = "$o{log}.helper.$i";
            unlink $file;
            my $pid = fork // die "fork: $!";
            if ($pid == 0) {
                my $outcome = eval {
                    my $h = MemoConsistency::reconnect({ %{ $o{conn} }, appname => "chk_helper_$i" });
                    open my $plog, '>>', $o{problems_log} or die "$o{problems_log}: $!";
                    $plog->autoflush(1);
                    my $r = MemoConsistency::checked_read($h, $spec, 'split', undef, $plog);
                    $h->close;
                    $r;
                };
                $outcome = MemoConsistency::is_fault($@) ? 'fault ' . $@->kind : "died $@" unless defined $outcome;
                if (open my $fh, '>', $file) { print $fh $outcome; close $fh }
                POSIX::_exit(0);
            }
            push @helpers, [$pid, $file];
        }
        return @helpers;
    };
    my $helpers_reap = sub {
        my $deadline = Time::HiRes::time() + 60;
        for my $h (@_) {
            my ($pid, $file) = @$h;
            Time::HiRes::sleep(0.02) until waitpid($pid, POSIX::WNOHANG()) == $pid || Time::HiRes::time() > $deadline;
            if (kill 0, $pid) {  # still running, a minute after the lock was released
                $n{'helpers_stuck'}++;
                $say->("HELPER STUCK: pid $pid (ours, killed)");
                kill 'KILL', $pid;
                waitpid($pid, 0);
                next;
            }
            open my $fh, '<', $file or do { $n{'helpers_died'}++; next };
            my $outcome = <$fh> // 'died';
            unlink $file;
            if ($outcome =~ /^fault (.*)$/) {
                MemoConsistency::count_read(\%n, 'helper', 'split', 'fault');
                $n{"fault_errors.helper.$1"}++;
            } elsif ($outcome =~ /^died/) {
                $n{'helpers_died'}++;
                $say->("HELPER DIED: $outcome");
            } else {
                MemoConsistency::count_read(\%n, 'helper', 'split', $outcome);
            }
        }
    };
    # Empties the cache and holds an ACCESS EXCLUSIVE lock on a table the
    # readers read while $code runs, after a pause in which calls that miss
    # wait for it inside their flights, three helpers' among them.
    # While the table is locked nothing invalidates its entries: calls
    # would hit. Without entries they miss, and lead or join a flight before
    # they lock anything (an invalidated entry of a table watched with
    # deltas is carried forward first, which locks outside any flight).
    # memo.reset() changes no data: reads are judged as ever. The lock's
    # transaction ends whatever happens, but for a kill -9 ($crash).
    my $with_lock = sub {
        my ($code, $crash) = @_;
        my ($table, $reads) = @{ MemoConsistency::rand_of(@LOCKABLE) };
        $db->ok('SELECT memo.reset()');
        $db->ok('BEGIN');
        $db->ok("SET LOCAL lock_timeout = '2s'");
        my (undef, $error) = $db->query("LOCK TABLE $table IN ACCESS EXCLUSIVE MODE");
        if (defined $error) {  # a lock timeout: nothing held
            $db->ok('ROLLBACK');
            return 'lock_failed';
        }
        my @helpers = $helpers_start->(3, $reads);
        Time::HiRes::sleep(0.4 + rand 0.4);
        my $outcome;
        my $ok = eval {
            $outcome = $code->();
            unless ($crash && $outcome eq 'done') {
                Time::HiRes::sleep(0.1 + rand 0.2);  # the waiters take over, and wait for the lock too
                $db->ok('COMMIT');
            }
            1;
        };
        my $e = $@;
        $helpers_reap->(@helpers);
        die $e unless $ok;
        return $outcome;
    };
    my $leader = sub {  # (pid, waiters, application_name) of a running flight's live leader
        my ($row) = $db->query("SELECT f.leader_pid, f.waiters, a.application_name FROM memo.flights f"
                               . " JOIN pg_stat_activity a ON a.pid = f.leader_pid"
                               . " WHERE f.state = 'running' AND a.application_name LIKE 'chk\\_%'"
                               . ' ORDER BY f.waiters DESC, random() LIMIT 1');
        return @$row ? @$row : ();
    };
    my $signal = sub {  # pg_terminate_backend or pg_cancel_backend; whether it was sent
        my ($function, $pid) = @_;
        return $db->ok("SELECT $function($pid)") eq 't';
    };

    # Terminates a session of those $who matches, 7 times in 10 one that is $busy.
    my $terminate = sub {
        my ($who, $busy) = @_;
        my ($pid, $app) = $pick->(rand() < 0.7 ? "$who AND $busy" : $who);
        return 'no_target' unless $pid;
        return 'gone' unless $signal->('pg_terminate_backend', $pid);
        $say->('terminate', $pid, $app);
        return 'done';
    };
    my %fault;
    $fault{terminate_reader} = sub { $terminate->("application_name LIKE 'chk\\_reader\\_%'", "state = 'active'") };
    # Mostly in a transaction or a statement: commits in doubt.
    $fault{terminate_writer} = sub { $terminate->("application_name ~ '^chk_(writer|finisher)_'", "state <> 'idle'") };
    $fault{terminate_leader} = sub {
        return $with_lock->(sub {
            my ($pid, $waiters, $app) = $leader->();
            return 'no_target' unless $pid;
            return 'gone' unless $signal->('pg_terminate_backend', $pid);
            $n{'faults.terminate_leader.waiters'} += $waiters;
            $n{'faults.terminate_leader.with_waiters'}++ if $waiters > 0;
            $say->('terminate leader', $pid, $app, "waiters $waiters");
            return 'done';
        });
    };
    $fault{cancel} = sub {
        if (rand() < 0.5) {  # a leader or a waiter of a flight held up by the lock
            return $with_lock->(sub {
                my ($pid, $waiters, $app, $what);
                if (rand() < 0.5) {
                    ($pid, $waiters, $app) = $leader->();
                    $what = 'leader';
                }
                unless ($pid) {
                    ($pid, $app) = $pick->("wait_event_type = 'Extension'");
                    $what = 'waiter';
                }
                return 'no_target' unless $pid;
                return 'gone' unless $signal->('pg_cancel_backend', $pid);
                $n{"faults.cancel.$what"}++;
                $say->("cancel $what", $pid, $app, defined $waiters ? "waiters $waiters" : ());
                return 'done';
            });
        }
        my ($pid, $app) = $pick->("state = 'active' AND query ~ '(memo\\.(count|list|list_as)|cached_list_employees)\\('");
        return 'no_target' unless $pid;
        return 'gone' unless $signal->('pg_cancel_backend', $pid);
        $n{'faults.cancel.memo_call'}++;
        $say->('cancel memo call', $pid, $app);
        return 'done';
    };
    my @kinds = qw(terminate_reader terminate_writer terminate_leader terminate_leader cancel cancel);

    # memo.stats start again at every crash restart: summed before each.
    my $save_stats = sub {
        my ($row) = $db->query('SELECT sum(calls), sum(hits), sum(computations), sum(shared), sum(waits),'
                               . ' sum(takeovers), sum(wait_timeouts) FROM memo.stats');
        my @names = qw(calls hits computations shared waits takeovers wait_timeouts);
        $n{"stats_before_resets.$names[$_]"} += $row->[$_] // 0 for 0 .. $#names;
    };
    my $kill9 = sub {
        $save_stats->();
        my ($pid, $app, $what);
        my $find = sub {
            my ($prefer_leader) = @_;
            if ($prefer_leader) {
                my ($p, $waiters, $a) = $leader->();
                ($pid, $app, $what) = ($p, $a, "leader, waiters $waiters") if $p;
            }
            unless ($pid) {
                ($pid, $app) = $pick->('true');
                $what = 'backend';
            }
        };
        my $resets_before = count_lines($o{server_log}, qr/all server processes terminated; reinitializing/);
        my $t0;
        my $kill = sub {
            my ($locked) = @_;
            $find->($locked);
            return 'no_target' unless $pid;
            return 'not_ours' unless backend_of_cluster($pid, $o{data});
            $t0 = Time::HiRes::time();
            kill 'KILL', $pid or return 'gone';
            $say->('kill -9', $pid, $app, $what);
            print $log "KILL9 $pid\n";
            return 'done';
        };
        # Half of the time a leader held up by the lock (a helper's, most
        # likely; the kill ends the lock's transaction with everything
        # else), else any client backend of ours.
        my $outcome = rand() < 0.5 ? $with_lock->(sub { $kill->(1) }, 1) : $kill->(0);
        return $outcome unless $outcome eq 'done';
        # The postmaster ends every session, our own too, and resets shared
        # memory; then crash recovery runs before connections are accepted.
        my $deadline = Time::HiRes::time() + 60;
        Time::HiRes::sleep(0.05)
          until count_lines($o{server_log}, qr/all server processes terminated; reinitializing/) > $resets_before
             || Time::HiRes::time() > $deadline;
        $db->close;
        $db->{dead} = 1;
        $db = MemoConsistency::reconnect($o{conn});
        my $ms = int(1000 * (Time::HiRes::time() - $t0) + 0.5);
        $n{'kill9.recovery_ms_total'} += $ms;
        $n{'max.kill9_recovery_ms'} = $ms if $ms > ($n{'max.kill9_recovery_ms'} // 0);
        $n{'faults.kill9.of_a_leader'}++ if $what =~ /^leader/;
        $say->("accepting connections again $ms ms after the kill");
        return 'done';
    };

    # A writer's commit waiting for the synchronous standby that never
    # comes (committed locally, not visible yet): its wait ends by a
    # termination (the client hears nothing: a commit in doubt that did
    # commit) or a cancel (the COMMIT succeeds with a warning). Done till
    # the injector stops; a wait it misses ends at its statement_timeout
    # (3 s), as a cancel does.
    my $end_commit_waits = sub {
        my ($row) = $db->query("SELECT string_agg(pid || '/' || application_name, ' ') FROM pg_stat_activity"
                               . " WHERE wait_event = 'SyncRep' AND clock_timestamp() - query_start > interval '0.2 s'");
        for my $w (split ' ', $row->[0] // '') {
            my ($pid, $app) = split m{/}, $w;
            my $terminate = rand() < 0.6;
            next unless $signal->($terminate ? 'pg_terminate_backend' : 'pg_cancel_backend', $pid);
            my $kind = $terminate ? 'terminate_commit_wait' : 'cancel_commit_wait';
            $n{"faults.$kind"}++;
            $say->($kind, $pid, $app);
        }
    };
    until (-e $o{stop_file}) {
        my $now = Time::HiRes::time();
        $guard->($end_commit_waits);
        if ($now >= $from && $now < $until) {
            if (@kill_at && $now >= $kill_at[0]) {
                shift @kill_at;
                my $outcome = 'failed';
                # A kill that found no backend is tried again at once.
                for (1 .. 20) {
                    $guard->(sub { $outcome = $kill9->() }) or next;
                    last if $outcome eq 'done';
                }
                $n{'faults.kill9' . ($outcome eq 'done' ? '' : ".$outcome")}++;
            } elsif ($now >= $next_fault) {
                my $kind = MemoConsistency::rand_of(@kinds);
                my $outcome = 'failed';
                $guard->(sub { $outcome = $fault{$kind}->() });
                $n{"faults.$kind" . ($outcome eq 'done' ? '' : ".$outcome")}++;
                $next_fault = Time::HiRes::time() + $o{every_ms} / 1000 * (0.5 + rand);
            }
        }
        Time::HiRes::sleep(0.2);
    }
    $n{'faults.kill9.not_reached'} = @kill_at if @kill_at;  # the run ended first
    $guard->(sub { $db->close });
    return \%n;
}

# The monitor: samples pg_stat_activity and memo.flights every ~200 ms until
# $stop_file exists (see the top of this file), in a process of its own so
# that it samples while the injector holds its lock. Options: conn (a
# tolerant connection), log, wait_timeout_ms, commit_wait_timeout_ms,
# started, stop_file.
sub run_monitor {
    my (%o) = @_;
    my %n;
    my ($log, $say, $db) = process_start(%o);
    my $wait_timeout = $o{wait_timeout_ms} / 1000;
    my $per_call = $wait_timeout + 4 * $o{commit_wait_timeout_ms} / 1000;
    my $stuck_after = $wait_timeout + MARGIN_SECONDS;
    # (summed over the workers: the monitor is the only one with them)
    $n{'bound.wait_per_call_ms'} = int(1000 * $per_call);
    $n{'bound.stuck_flight_ms'} = int(1000 * $stuck_after);
    my %waits;    # "pid/backend_start/query_start" -> [first seen, last seen, tick]
    my %flights;  # "leader/started" -> [first seen leaderless, last seen, tick]
    my $tick = 0;
    my $sample = sub {
        my ($row) = $db->query(q{SELECT extract(epoch FROM clock_timestamp()),
            coalesce((SELECT string_agg(format('%s/%s/%s/%s', pid, extract(epoch FROM backend_start),
                                               extract(epoch FROM query_start),
                                               (length(query) - length(replace(query, 'memo.', ''))) / 5
                                               + 2 * (length(query) - length(replace(query, 'cached_list_employees', '')))
                                                 / 21), ' ')
                        FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND pid <> pg_backend_pid()), ''),
            coalesce((SELECT string_agg(format('%s/%s/%s/%s/%s/%s', f.leader_pid, extract(epoch FROM f.started),
                                               round(extract(epoch FROM clock_timestamp() - f.started)::numeric, 3),
                                               f.waiters, f.state, a.pid IS NOT NULL), ' ')
                        FROM memo.flights f LEFT JOIN pg_stat_activity a ON a.pid = f.leader_pid), '')});
        # (no row while the server restarts after a kill -9: nothing to sample)
        return unless $row && defined $row->[0];
        my ($now, $waiting, $flying) = @$row;
        $tick++;
        $n{'samples'}++;
        for my $sampled (split ' ', $waiting) {
            my ($key, $calls) = $sampled =~ m{^(.*)/(\d+)$};
            # The memo calls its text makes (cached_list_employees: 2), at
            # least 1 (a wait in pg_memo is one).
            $calls = 1 if $calls < 1;
            my $w = $waits{$key};
            $w = $waits{$key} = [$now, $now, $tick] unless $w && $w->[2] == $tick - 1;
            @$w[1, 2] = ($now, $tick);
            my $span = $w->[1] - $w->[0];
            my $k = $calls > 2 ? 'more' : $calls;
            $n{"max.sampled_wait_ms.calls_$k"} = int(1000 * $span)
              if 1000 * $span > ($n{"max.sampled_wait_ms.calls_$k"} // 0);
            my $bound = $calls * $per_call + MARGIN_SECONDS;
            if ($span > $bound && !$w->[3]) {
                $w->[3] = 1;
                $n{'waits_past_bound'}++;
                $say->("WAIT PAST ITS BOUND: $key ($calls memo calls) waited at least", sprintf('%.1f s', $span),
                       sprintf('(bound %.1f s)', $bound));
            }
        }
        delete $waits{$_} for grep { $waits{$_}[2] != $tick } keys %waits;
        $n{'flights_seen'} += () = split ' ', $flying;
        for my $f (split ' ', $flying) {
            my ($leader, $started, $age, $waiters, $state, $alive) = split m{/}, $f;
            $n{'max.flight_age_ms'} = int(1000 * $age) if 1000 * $age > ($n{'max.flight_age_ms'} // 0);
            next if $state eq 'running' && $alive eq 't';
            my $key = "$leader/$started";
            my $s = $flights{$key};
            $s = $flights{$key} = [$now, $now, $tick] unless $s && $s->[2] == $tick - 1;
            @$s[1, 2] = ($now, $tick);
            if ($s->[1] - $s->[0] > $stuck_after && !$s->[3]) {
                $s->[3] = 1;
                $n{'stuck_flights'}++;
                $say->("STUCK FLIGHT: leader $leader (alive $alive), state $state, $waiters waiters, age $age s");
            }
        }
        delete $flights{$_} for grep { $flights{$_}[2] != $tick } keys %flights;
    };

    until (-e $o{stop_file}) {
        # A crash restart ends this session too: a new one, once the server
        # accepts connections again (the sampled spans start again).
        unless (eval { $sample->(); 1 }) {
            my $e = $@;
            die $e unless MemoConsistency::is_fault($e);
            $n{'monitor.own_faults.' . $e->kind}++;
            $db = MemoConsistency::recover_session($db, $o{conn}, undef);
        }
        Time::HiRes::sleep(0.2);
    }
    $db->close;
    return \%n;
}

# What the server log says about the run's crash restarts. $killed: the pids
# the injector killed.
sub read_server_log {
    my ($file, $killed) = @_;
    my %ours = map { $_ => 1 } @$killed;
    my %r = (terminating => 0, reinitializing => 0, memo_empty => 0, ready => 0, killed_logged => 0, unexpected => []);
    open my $fh, '<', $file or return \%r;
    while (my $line = <$fh>) {
        $r{terminating}++ if $line =~ /terminating any other active server processes/;
        $r{reinitializing}++ if $line =~ /all server processes terminated; reinitializing/;
        $r{memo_empty}++ if $line =~ /pg_memo: starting with an empty cache: the server did not shut down cleanly/;
        $r{ready}++ if $line =~ /database system is ready to accept connections/;
        if ($line =~ /server process \(PID (\d+)\) was terminated by signal (\d+)/) {
            if ($2 == 9 && $ours{$1}) { $r{killed_logged}++ }
            else { push @{ $r{unexpected} }, $line }
        } elsif ($line =~ /PANIC:|terminated by exception|server process \(PID \d+\) exited with exit code|TRAP:|stuck spinlock/) {
            push @{ $r{unexpected} }, $line;
        }
    }
    return \%r;
}

1;
