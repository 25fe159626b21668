#!/usr/bin/env perl
# Stand-alone randomized consistency checker for pg_memo: the long mode of
# test/t/003_consistency.pl (same code: test/perl/MemoConsistency.pm).
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
#
# Run as root it re-runs itself as the postgres OS user (initdb refuses
# root). Exits 1 if any mismatch was found, a worker failed, fewer than
# --reads reads were checked, a read raised an error or the directory's
# derived columns were found inconsistent.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Getopt::Long;
use File::Temp ();
use MemoConsistency;

my %opt = (reads => 100_000, writers => 2, readers => 4, 'seed-rows' => 2000, 'pause-ms' => 20,
           'max-seconds' => 4 * 3600, port => 55600 + int rand 100, keep => 0, rng => undef,
           'cache-size' => '64MB', bindir => undef, 'no-deltas' => 0, standby => 0);
GetOptions(\%opt, 'reads=i', 'writers=i', 'readers=i', 'seed-rows=i', 'pause-ms=f', 'max-seconds=i',
           'port=i', 'keep!', 'rng=i', 'cache-size=s', 'bindir=s', 'no-deltas!', 'standby!')
  or die "usage: $0 [--reads N] [--writers N] [--readers N] [--seed-rows N] [--pause-ms MS]"
       . " [--max-seconds S] [--port P] [--cache-size SIZE] [--rng SEED] [--bindir DIR] [--keep] [--no-deltas]"
       . " [--standby]\n";
die "--port must be in 55600-55698\n" unless $opt{port} >= 55600 && $opt{port} <= 55698;

if ($> == 0) {
    my %flag = map { $_ => 1 } qw(keep no-deltas standby);
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
close $conf;
if ($opt{standby}) {
    open my $hba, '>>', "$data/pg_hba.conf" or die $!;
    print $hba "local replication all trust\n";
    close $hba;
}

my (@started, $standby_data);
END {
    # Stops exactly these clusters: pg_ctl signals the postmaster whose pid
    # its data directory's postmaster.pid holds.
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
my $n = MemoConsistency::run(conn => $conn, reader_conn => $reader_conn, writers => $opt{writers},
    readers => $opt{readers}, reads => $opt{reads}, seed_rows => $opt{'seed-rows'}, pause_ms => $opt{'pause-ms'},
    max_seconds => $opt{'max-seconds'}, dir => $dir, rng => $opt{rng});
my $stats = MemoConsistency::cache_stats($reader_conn);

print "\n", MemoConsistency::report($n, $stats);
print "directory.check_consistency() rows: $stats->{directory_inconsistencies}\n";
if (-s "$dir/problems.log") {
    print "problems log: $dir/problems.log\n" if $opt{keep};
    open my $p, '<', "$dir/problems.log" or die $!;
    my @lines = <$p>;
    print "first lines of the problems log:\n", @lines[0 .. ($#lines < 40 ? $#lines : 40)];
}
print "cluster kept in $dir\n" if $opt{keep};
# Fails on every error test/t/003_consistency.pl fails on (003 also checks
# how much was covered).
exit($n->{mismatches} || $n->{worker_failures} || $n->{checked} < $opt{reads}
     || $n->{'reads.error'} || $n->{'repeatable_read.error'}
     || $stats->{directory_inconsistencies} ? 1 : 0);
