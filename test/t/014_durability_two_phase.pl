# Two-phase commit with pg_memo loaded: PREPARE TRANSACTION is never
# refused; between PREPARE and COMMIT PREPARED entries stay current (the
# prepared writes are invisible); the first read after COMMIT PREPARED
# (from any session) sees it; ROLLBACK PREPARED invalidates nothing; DDL
# inside prepared transactions; prepared transactions pending across a
# clean restart (with warm restart) and a crash; a database without the
# extension is untouched; a gid reused since a base backup, committed on the
# promoted standby.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('tpc', init => [allows_streaming => 1], conf => "max_prepared_transactions = 10\n");
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY, v int);
  INSERT INTO t SELECT g, g FROM generate_series(1, 10) g;
  SELECT memo.watch('t');
  CREATE TABLE d (id int PRIMARY KEY, scope text);
  INSERT INTO d SELECT g, 's' || (g % 3) FROM generate_series(1, 30) g;
  SELECT memo.watch('d', deltas => true);
  CREATE FUNCTION big(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 3';
  CREATE VIEW cur AS SELECT id FROM t WHERE v > 0;
  CREATE DATABASE other;
});
$node->safe_psql('other', 'CREATE TABLE o (id int)');

my %q = (
    count => [q{SELECT memo.count('c', 'SELECT * FROM t WHERE v > 3')}, q{SELECT count(*) FROM t WHERE v > 3}],
    deltas => [q{SELECT memo.count('dl', 'SELECT * FROM d WHERE scope = $1', '{s1}')},
               q{SELECT count(*) FROM d WHERE scope = 's1'}],
    function => [q{SELECT memo.count('f', 'SELECT * FROM t WHERE big(v)')}, q{SELECT count(*) FROM t WHERE big(v)}],
    view => [q{SELECT memo.count('v', 'SELECT * FROM cur')}, q{SELECT count(*) FROM cur}],
);
sub hits { return memo_stat($node, $_[0], 'hits') || 0 }
sub check {  # the cached and the uncached read agree
    my ($what, $name) = @_;
    my ($memo, $plain) = @{ $q{$what} };
    is($node->safe_psql('postgres', $memo), $node->safe_psql('postgres', $plain), $name);
}
sub warm { my ($what) = @_; $node->safe_psql('postgres', $q{$what}[0]) for 1 .. 2; }

# 1. A watched write prepared, then committed from another session.
warm('count');
$node->safe_psql('postgres', q{BEGIN; UPDATE t SET v = 0 WHERE id = 9; PREPARE TRANSACTION 'w1'});
my $h = hits('c');
check('count', 'prepared: the entry is still current');
is(hits('c'), $h + 1, 'prepared: and still served');
my $commits = $node->safe_psql('postgres', 'SELECT writing_commits FROM memo.info');
$node->safe_psql('postgres', q{COMMIT PREPARED 'w1'});
check('count', 'COMMIT PREPARED: the first read after it sees the write');
is($node->safe_psql('postgres', 'SELECT writing_commits FROM memo.info'), $commits + 1,
   'COMMIT PREPARED: memo.info counts a writing commit');

# 2. ROLLBACK PREPARED invalidates nothing.
warm('count');
$node->safe_psql('postgres', q{BEGIN; DELETE FROM t; PREPARE TRANSACTION 'w2'});
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'w2'});
$h = hits('c');
check('count', 'ROLLBACK PREPARED: the entry is current');
is(hits('c'), $h + 1, 'ROLLBACK PREPARED: and still served');

# 3. A table watched with deltas: the prepared write is carried by no
# record, its commit invalidates.
warm('deltas');
$node->safe_psql('postgres', q{BEGIN; INSERT INTO d VALUES (100, 's1'); PREPARE TRANSACTION 'w3'});
check('deltas', 'deltas, prepared: current');
$node->safe_psql('postgres', q{COMMIT PREPARED 'w3'});
check('deltas', 'deltas, COMMIT PREPARED: seen');

# 4. DDL inside prepared transactions: a function replaced, a view
# swapped by renames, tables created, renamed and dropped, a function
# dropped.
warm('function');
$node->safe_psql('postgres', q{BEGIN; CREATE OR REPLACE FUNCTION big(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 5'; PREPARE TRANSACTION 'ddl1'});
check('function', 'a function replaced, prepared: the old body still answers');
$node->safe_psql('postgres', q{COMMIT PREPARED 'ddl1'});
check('function', 'a function replaced, COMMIT PREPARED: the new body answers');
warm('view');
$node->safe_psql('postgres', q{BEGIN; ALTER VIEW cur RENAME TO old_cur; CREATE VIEW cur AS SELECT id FROM t WHERE id < 3; PREPARE TRANSACTION 'ddl2'});
$node->safe_psql('postgres', q{COMMIT PREPARED 'ddl2'});
check('view', 'a view swapped by renames in a prepared transaction');
$node->safe_psql('postgres', q{BEGIN; CREATE TABLE n1 (id int); ALTER TABLE n1 RENAME TO n2; CREATE FUNCTION gone() RETURNS int LANGUAGE sql AS 'SELECT 1'; PREPARE TRANSACTION 'ddl3'});
$node->safe_psql('postgres', q{COMMIT PREPARED 'ddl3'});
$node->safe_psql('postgres', q{BEGIN; DROP FUNCTION gone(); DROP TABLE n2; PREPARE TRANSACTION 'ddl4'});
$node->safe_psql('postgres', q{COMMIT PREPARED 'ddl4'});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}), 0, 'DDL prepared and committed');
# A temporary object: PostgreSQL's own refusal, unchanged.
my ($rc, $out, $err) = $node->psql('postgres', q{BEGIN; CREATE TEMP TABLE tmp (id int); PREPARE TRANSACTION 'tmp'});
like($err, qr/cannot PREPARE a transaction that has operated on temporary objects/, 'temporary objects: PostgreSQL\'s own error');

# 5. A database without the extension: nothing of pg_memo's is written.
$node->safe_psql('other', q{BEGIN; INSERT INTO o VALUES (1); PREPARE TRANSACTION 'o1'});
$node->safe_psql('other', q{COMMIT PREPARED 'o1'});
my $dir = $node->data_dir . '/pg_memo_2pc';
my @files = grep { !/^\./ } (-d $dir ? do { opendir my $dh, $dir or die $!; readdir $dh } : ());
is(scalar @files, 0, 'no state file left behind');

# 6. XA loops: write, PREPARE, then COMMIT PREPARED or ROLLBACK PREPARED from
# another session, while other sessions keep calling; after each step a
# cached read agrees with an uncached one.
{
    my @readers = map { $node->background_psql('postgres') } 1 .. 2;
    my ($mismatches, $steps, $commits, $changed) = (0, 0, 0, 0);
    for my $i (1 .. 40) {
        my $commit = $i % 3 != 0;
        $_->query_until(qr/sent/, "\\echo sent\n$q{count}[0];\n") for @readers;
        my $before = $node->safe_psql('postgres', $q{count}[1]);
        # Each write moves a row across v > 3: a committed loop changes the count.
        $node->safe_psql('postgres', "BEGIN; UPDATE t SET v = CASE WHEN v > 3 THEN 0 ELSE 10 END WHERE id = "
                                     . (1 + $i % 10) . "; PREPARE TRANSACTION 'xa$i'");
        for my $when ('prepared', 'finished') {
            my $r = $node->safe_psql('postgres', "SELECT ($q{count}[0]) || '/' || ($q{count}[1])");
            my ($a, $b) = split m{/}, $r;
            $mismatches++ if $a != $b;
            $steps++;
            $node->safe_psql('postgres', ($commit ? 'COMMIT' : 'ROLLBACK') . " PREPARED 'xa$i'") if $when eq 'prepared';
            if ($when eq 'finished' && $commit) {
                $commits++;
                $changed++ if $b != $before;
            }
        }
    }
    $_->query('SELECT 1') for @readers;
    $_->quit for @readers;
    is($mismatches, 0, "XA loops: $steps reads, each cached read agrees with the uncached one");
    is($changed, $commits, "XA loops: each of the $commits committed loops changed the count");
}

# 7. Prepared transactions pending across a clean restart (the entries are
# restored by warm restart) and a crash; committed afterwards.
warm('count');
$node->safe_psql('postgres', q{BEGIN; UPDATE t SET v = 100 WHERE id = 1; PREPARE TRANSACTION 'r1'});
$node->restart;
$h = hits('c');
check('count', 'after a clean restart with a prepared transaction: current');
is(hits('c'), $h + 1, 'and served from the restored entry');
$node->safe_psql('postgres', q{COMMIT PREPARED 'r1'});
check('count', 'COMMIT PREPARED after the restart: seen');

warm('count');
$node->safe_psql('postgres', q{BEGIN; UPDATE t SET v = -5 WHERE id = 2; PREPARE TRANSACTION 'c1'});
$node->safe_psql('postgres', q{BEGIN; UPDATE t SET v = 50 WHERE id = 3; PREPARE TRANSACTION 'c2'});
$node->stop('immediate');
$node->start;
warm('count');
check('count', 'after a crash with prepared transactions: current');
$node->safe_psql('postgres', q{COMMIT PREPARED 'c1'});
check('count', 'COMMIT PREPARED after the crash: seen');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'c2'});
check('count', 'ROLLBACK PREPARED after the crash: current');
@files = grep { !/^\./ } do { opendir my $dh, $dir or die $!; readdir $dh };
is(scalar @files, 0, 'every state file removed once its transaction ended');

# 8. A transaction prepared on a primary, committed on its promoted standby
# (which never had the primary's state file): the next read there sees it.
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('tpc_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', q{BEGIN; INSERT INTO t VALUES (999, 1000); PREPARE TRANSACTION 'failover'});
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
$node->stop;
$standby->promote;
my @sq = @{ $q{count} };
$standby->safe_psql('postgres', $sq[0]) for 1 .. 2;  # an entry while still prepared
is($standby->safe_psql('postgres', $sq[0]), $standby->safe_psql('postgres', $sq[1]), 'promoted, still prepared: current');
$standby->safe_psql('postgres', q{COMMIT PREPARED 'failover'});
is($standby->safe_psql('postgres', $sq[0]), $standby->safe_psql('postgres', $sq[1]),
   'COMMIT PREPARED on the promoted standby of a transaction prepared on the primary: seen');

# 9. A gid reused since the base backup: the backup copied the state file of
# the gid's first transaction (long committed when the standby is promoted);
# the gid's second transaction, prepared after the backup, has its file only
# on the old primary. Its COMMIT PREPARED on the promoted standby must not
# take the leftover file for its own marks.
my $primary2 = $standby;  # the promoted server of section 8
$primary2->safe_psql('postgres', q{
  CREATE TABLE pz (id int); INSERT INTO pz SELECT generate_series(1, 3); SELECT memo.watch('pz');
  BEGIN; INSERT INTO pz VALUES (4); PREPARE TRANSACTION 'g';});
$primary2->backup('gid');
my $standby2 = PostgreSQL::Test::Cluster->new('tpc_standby2');
$standby2->init_from_backup($primary2, 'gid', has_streaming => 1);
$standby2->start;
$primary2->safe_psql('postgres', q{COMMIT PREPARED 'g'; BEGIN; INSERT INTO pz VALUES (5); PREPARE TRANSACTION 'g';});
$primary2->wait_for_catchup($standby2, 'replay', $primary2->lsn('insert'));
$primary2->stop;
$standby2->promote;
my @pz = (q{SELECT memo.count('pz', 'SELECT * FROM pz')}, q{SELECT count(*) FROM pz});
$standby2->safe_psql('postgres', $pz[0]) for 1 .. 2;  # an entry while 'g' is prepared
is($standby2->safe_psql('postgres', $pz[0]), '4', 'promoted, the gid\'s second transaction still prepared: 4 rows');
$standby2->safe_psql('postgres', q{COMMIT PREPARED 'g'});
is($standby2->safe_psql('postgres', $pz[0]), $standby2->safe_psql('postgres', $pz[1]),
   'COMMIT PREPARED of a gid reused since the base backup, on the promoted standby: seen (5 rows)');
$standby2->stop;
done_testing();
