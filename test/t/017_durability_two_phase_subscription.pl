# A two-phase logical subscription into a primary with hot standbys
# (pg_memo.standby_records = on). The apply worker runs each COMMIT PREPARED
# from the publisher inside a transaction of its own, with no transaction
# id, whose BUMP record reaches the standbys only when the WAL writer
# flushes it; the prepared transaction's rows are visible on a standby as
# soon as it replays the COMMIT PREPARED record. The apply worker's PREPARED
# record lets the standby announce the subscription's tables before that
# replay: once a direct read on the standby sees a row, the memo call there
# sees it too, in every round. (The subscriber primary's own short window is
# a documented limitation: docs/consistency.md, "The commit window".) One of
# the apply worker's prepared transactions committed by hand is seen too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use MemoTest;

my $publisher = PostgreSQL::Test::Cluster->new('publisher');
$publisher->init(allows_streaming => 'logical');
$publisher->append_conf('postgresql.conf', "max_prepared_transactions = 10\n");
$publisher->start;
$publisher->safe_psql('postgres', q{
  CREATE TABLE t (id int PRIMARY KEY, v int);
  CREATE PUBLICATION pub FOR TABLE t;});

my $subscriber = memo_node('subscriber', init => [allows_streaming => 1],
    conf => "pg_memo.standby_records = on\nmax_prepared_transactions = 10\n");
$subscriber->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY, v int);
  SELECT memo.watch('t');});
$subscriber->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($subscriber, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = -1\n");
$standby->start;

my $connstr = $publisher->connstr . ' dbname=postgres';
$subscriber->safe_psql('postgres',
    "CREATE SUBSCRIPTION sub CONNECTION '$connstr' PUBLICATION pub WITH (two_phase = true)");
$subscriber->poll_query_until('postgres', q{SELECT subtwophasestate = 'e' FROM pg_subscription WHERE subname = 'sub'})
  or die 'two-phase was not enabled';
$subscriber->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'})
  or die 'the table was not synchronized';

my $memo = q{SELECT memo.count('t.count', 'SELECT * FROM t')};
my $direct = q{SELECT count(*) FROM t};
my $s = $standby->background_psql('postgres');
$s->set_query_timer_restart();
# Serving starts at the first pg_memo record the standby replays.
$subscriber->safe_psql('postgres', $memo);
$subscriber->safe_psql('postgres', 'CREATE TABLE flush (n int); INSERT INTO flush VALUES (1)');
$subscriber->wait_for_catchup($standby, 'replay', $subscriber->lsn('insert'));
$s->query_safe($memo) for 1 .. 2;
my $hits_before = memo_stat($standby, 't.count', 'hits') || 0;

my ($rounds, $behind) = (100, 0);
for my $i (1 .. $rounds) {
    $s->query_safe($memo) for 1 .. 2;  # a current entry before the commit
    $publisher->safe_psql('postgres', "BEGIN; INSERT INTO t VALUES ($i, $i); PREPARE TRANSACTION 'g$i'");
    $publisher->safe_psql('postgres', "COMMIT PREPARED 'g$i'");
    # The first moment the standby's own query returns the row:
    for (my $n = 0;; $n++) {
        last if $s->query_safe($direct) == $i;
        die "the standby did not see round $i" if $n > 30000;
        Time::HiRes::sleep(0.001);
    }
    my ($m, $d) = ($s->query_safe($memo), $s->query_safe($direct));
    $behind++ if $m != $d;
}
is($behind, 0, "$rounds rounds of PREPARE and COMMIT PREPARED through a two-phase subscription: "
   . "the standby's memo call never behind its direct read once that sees the commit");
cmp_ok((memo_stat($standby, 't.count', 'hits') || 0) - $hits_before, '>=', $rounds,
       'the standby served its entries between the rounds (the cache was in use)');

# A prepared transaction of the apply worker resolved by hand on the
# subscriber (after ALTER SUBSCRIPTION ... DISABLE, the documented way):
# its COMMIT PREPARED bumps the subscription's tables, on the subscriber
# and on its standby.
$publisher->safe_psql('postgres', "BEGIN; INSERT INTO t VALUES (1000, 1000); PREPARE TRANSACTION 'by_hand'");
$subscriber->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid LIKE 'pg_gid_%'})
  or die 'the subscriber did not prepare it';
$subscriber->safe_psql('postgres', 'ALTER SUBSCRIPTION sub DISABLE');
$subscriber->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_subscription WHERE pid IS NOT NULL})
  or die 'the apply worker did not stop';
my $gid = $subscriber->safe_psql('postgres', q{SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pg_gid_%'});
$subscriber->safe_psql('postgres', $memo) for 1 .. 2;  # current, the row still prepared
$subscriber->wait_for_catchup($standby, 'replay', $subscriber->lsn('insert'));
$s->query_safe($memo) for 1 .. 2;
$subscriber->safe_psql('postgres', "COMMIT PREPARED '$gid'");
is($subscriber->safe_psql('postgres', $memo), $subscriber->safe_psql('postgres', $direct),
   "COMMIT PREPARED by hand of the apply worker's $gid: the subscriber sees it");
$subscriber->safe_psql('postgres', 'INSERT INTO flush VALUES (2)');
$subscriber->wait_for_catchup($standby, 'replay', $subscriber->lsn('insert'));
is($s->query_safe($memo), $s->query_safe($direct), 'and so does its standby');
$publisher->safe_psql('postgres', "ROLLBACK PREPARED 'by_hand'");
$s->quit;
$subscriber->safe_psql('postgres', 'DROP SUBSCRIPTION sub');
$standby->stop;
$subscriber->stop;
$publisher->stop;
done_testing();
