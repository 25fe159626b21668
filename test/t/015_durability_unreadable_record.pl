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
plan skip_all => 'the register conventions below are x86-64 ones' unless `uname -m` =~ /x86_64/;

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

# The next pg_memo record this backend writes says version 2: gdb stops in
# PostgreSQL's XLogRegisterData (an exported symbol, so no debug information
# is needed) when its data is a 16-byte pg_memo record header of version 1,
# and changes the version (x86-64: the first argument in rdi, the length in
# rsi).
my $session = $primary->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
my ($in, $out, $err) = ('', '', '');
my $armed = PostgreSQL::Test::Utils::tempdir() . '/armed';  # the breakpoint is set
my $debugger = IPC::Run::start(
    [$gdb, '-q', '-nx', '-batch', '-p', $pid,
     '-ex', 'break XLogRegisterData if $rsi == 16 && *(unsigned int *) $rdi == 1', '-ex', "shell touch $armed",
     '-ex', 'continue',
     '-ex', 'set var *(unsigned int *) $rdi = 2', '-ex', 'detach'],
    \$in, \$out, \$err, IPC::Run::timeout(120));
# The breakpoint set, and the backend running again (gdb's output may be
# buffered: a file and /proc tell).
my $attached = 0;
for (1 .. 600) {
    open my $st, '<', "/proc/$pid/status" or last;
    my $status = do { local $/; <$st> };
    if (-e $armed && $status =~ /^TracerPid:\s+([1-9]\d*)/m && $status !~ /^State:\s+t/m) { $attached = 1; last }
    last unless $debugger->pumpable;
    $debugger->pump_nb;
    select(undef, undef, undef, 0.1);
}
if (!$attached) {
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
