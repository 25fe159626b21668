# A standby that replays a pg_memo record it cannot read (here: one that
# says it is of format version 2, as a newer pg_memo would write) logs a
# WARNING naming the version, computes every memo call from then on, and
# goes on replaying. The record is made by gdb, which changes the version
# in the primary's backend just before it is inserted; without gdb (or
# without the right to attach it) the test is skipped.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $gdb = `command -v gdb 2>/dev/null`;
chomp $gdb;
plan skip_all => 'gdb is not installed' unless $gdb;
my $source = "$FindBin::RealBin/../../src/pg/wal_records.cpp";
open my $fh, '<', $source or die "$source: $!";
my $line;
while (<$fh>) { if (/^\s+XLogBeginInsert\(\);/) { $line = $.; last } }
die "no XLogBeginInsert in $source" unless $line;

my $primary = memo_node('primary', init => [allows_streaming => 1], conf => "pg_memo.standby_records = on\n");
$primary->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY);
  INSERT INTO t SELECT generate_series(1, 5);
  SELECT memo.watch('t');
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
sub synced {
    $primary->safe_psql('postgres', 'SELECT pg_current_xact_id()');
    $primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
}
my $count = q{SELECT memo.count('c', 'SELECT * FROM t')};
$primary->safe_psql('postgres', 'INSERT INTO t VALUES (6)');
synced();

# The next record this backend writes says version 2.
my $session = $primary->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
my ($in, $out, $err) = ('', '', '');
my $debugger = IPC::Run::start(
    [$gdb, '-q', '-nx', '-batch', '-p', $pid, '-ex', "break wal_records.cpp:$line", '-ex', 'continue',
     '-ex', 'set var h.version = 2', '-ex', 'detach'],
    \$in, \$out, \$err, IPC::Run::timeout(120));
$debugger->pump until $out =~ /Continuing/ || $err =~ /ptrace|Operation not permitted|No symbol/ || !$debugger->pumpable;
if ($out !~ /Continuing/) {
    $debugger->kill_kill;
    $session->quit;
    $standby->stop;
    $primary->stop;
    plan skip_all => "gdb cannot attach to a backend here: $err";
}
$standby->safe_psql('postgres', $count) for 1 .. 2;
is(memo_stat($standby, 'c', 'hits'), 1, 'the standby serves before the unreadable record');
$session->query_safe(q{SELECT memo.invalidate('t')});  # a BUMP record
$debugger->finish;
$session->quit;
synced();

ok($standby->log_contains(qr/pg_memo cannot read a WAL record of the primary/), 'the standby logs a WARNING');
ok($standby->log_contains(qr/The record's format version is 2; this pg_memo reads version 1/), 'naming the versions');
ok($standby->log_contains(qr/pg_memo: this standby computes every memo call from here/), 'and that it computes every call');

# Replay goes on, and calls compute.
$primary->safe_psql('postgres', 'INSERT INTO t VALUES (7)');
synced();
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), '7', 'replay goes on after the record');
my $bypasses = memo_stat($standby, 'c', 'bypasses');
is($standby->safe_psql('postgres', $count), '7', 'a memo call on the standby returns the current count');
is(memo_stat($standby, 'c', 'bypasses'), $bypasses + 1, 'computed as a bypass');
# Later records do not make it serve again: only a restart does.
$primary->safe_psql('postgres', 'INSERT INTO t VALUES (8)');
synced();
$standby->safe_psql('postgres', $count) for 1 .. 2;
is(memo_stat($standby, 'c', 'bypasses'), $bypasses + 3, 'still computing after later records');

$standby->stop;
$primary->stop;
done_testing();
