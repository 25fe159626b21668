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
           'cache-size' => '64MB', bindir => undef, 'no-deltas' => 0);
GetOptions(\%opt, 'reads=i', 'writers=i', 'readers=i', 'seed-rows=i', 'pause-ms=f', 'max-seconds=i',
           'port=i', 'keep!', 'rng=i', 'cache-size=s', 'bindir=s', 'no-deltas!')
  or die "usage: $0 [--reads N] [--writers N] [--readers N] [--seed-rows N] [--pause-ms MS]"
       . " [--max-seconds S] [--port P] [--cache-size SIZE] [--rng SEED] [--bindir DIR] [--keep] [--no-deltas]\n";
die "--port must be in 55600-55699\n" unless $opt{port} >= 55600 && $opt{port} <= 55699;

if ($> == 0) {
    my @args = map { ("--$_", $opt{$_}) } grep { $_ ne 'keep' && $_ ne 'no-deltas' && defined $opt{$_} } sort keys %opt;
    push @args, '--keep' if $opt{keep};
    push @args, '--no-deltas' if $opt{'no-deltas'};
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
deadlock_timeout = '100ms'
fsync = off
CONF
close $conf;

my $started;
END {
    # Stops exactly this cluster: pg_ctl signals the postmaster whose pid
    # its data directory's postmaster.pid holds.
    system("$bindir/pg_ctl", '-D', $data, '-m', 'fast', '-w', 'stop') if $started && $data;
}
$SIG{INT} = $SIG{TERM} = sub { exit 2 };

run_cmd("$bindir/pg_ctl", '-D', $data, '-l', "$dir/server.log", '-w', 'start');
$started = 1;

my $conn = { psql => "$bindir/psql", host => $dir, port => $opt{port}, dbname => 'postgres' };
MemoConsistency::setup($conn, seed_rows => $opt{'seed-rows'}, no_deltas => $opt{'no-deltas'});
my $n = MemoConsistency::run(conn => $conn, writers => $opt{writers}, readers => $opt{readers},
    reads => $opt{reads}, seed_rows => $opt{'seed-rows'}, pause_ms => $opt{'pause-ms'},
    max_seconds => $opt{'max-seconds'}, dir => $dir, rng => $opt{rng});
my $stats = MemoConsistency::cache_stats($conn);

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
