# pg_memo's WAL records (pg_memo.standby_records): a streaming standby that
# preloads pg_memo replays them, so its own generation counters move with
# the primary's commits (writes, DDL, memo.invalidate), and no counter stays
# announced as committing once replay has caught up. Memo calls on the
# standby still bypass the cache (issue 17 builds the serving on this).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $primary = memo_node('primary', init => [allows_streaming => 1], conf => "pg_memo.standby_records = on\n");
$primary->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY, v int);
  INSERT INTO t SELECT g, g FROM generate_series(1, 10) g;
  SELECT memo.watch('t');
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

my $gen = q{SELECT memo.generation('t')};
# The END record of the last commit is flushed by the WAL writer, after the
# commit: wait for replay up to the insert position.
sub caught_up { $primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert')); }
my $g0 = $standby->safe_psql('postgres', $gen);

# Each committed write: one bump on the standby.
$primary->safe_psql('postgres', "UPDATE t SET v = v + 1 WHERE id = $_") for 1 .. 3;
caught_up();
is($standby->safe_psql('postgres', $gen), $g0 + 3, 'three committed writes: three bumps replayed');

# An aborted write: none.
$primary->safe_psql('postgres', 'BEGIN; UPDATE t SET v = 0; ROLLBACK');
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 4');
caught_up();
is($standby->safe_psql('postgres', $gen), $g0 + 4, 'a rolled-back write bumps nothing');

# DDL and memo.invalidate reach the standby too.
my $g1 = $standby->safe_psql('postgres', $gen);
$primary->safe_psql('postgres', 'ALTER TABLE t ADD COLUMN note text');
$primary->safe_psql('postgres', q{SELECT memo.invalidate('t')});
caught_up();
cmp_ok($standby->safe_psql('postgres', $gen), '>=', $g1 + 2, 'DDL and memo.invalidate are replayed');

# Calls on the standby still bypass, and see the replayed rows.
is($standby->safe_psql('postgres', q{SELECT memo.count('c', 'SELECT * FROM t WHERE v > 3')}),
   $primary->safe_psql('postgres', q{SELECT count(*) FROM t WHERE v > 3}), 'the standby computes the current result');

# A standby restarted in the middle of replay starts from a checkpoint with
# a fresh arena and fresh counters: nothing stays announced.
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 5');
$standby->restart;
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 6');
caught_up();
is($standby->safe_psql('postgres', q{SELECT memo.count('c2', 'SELECT * FROM t')}), '10', 'after a standby restart');

# Promotion: the former standby goes on as a primary.
$standby->promote;
$standby->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 7');
is($standby->safe_psql('postgres', q{SELECT memo.count('p', 'SELECT * FROM t WHERE v > 7')}),
   $standby->safe_psql('postgres', q{SELECT count(*) FROM t WHERE v > 7}), 'promoted: computes and caches');
$standby->safe_psql('postgres', 'UPDATE t SET v = v + 100 WHERE id = 1');
is($standby->safe_psql('postgres', q{SELECT memo.count('p', 'SELECT * FROM t WHERE v > 7')}),
   $standby->safe_psql('postgres', q{SELECT count(*) FROM t WHERE v > 7}), 'promoted: its own writes invalidate');

$standby->stop;
$primary->stop;
done_testing();
