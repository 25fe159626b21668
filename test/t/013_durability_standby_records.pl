# Hot standbys serve memoized results (pg_memo.standby_records): the
# primary writes pg_memo's own WAL records, a standby that preloads pg_memo
# replays them into its own counters and serves its own entries. After each
# kind of change on the primary, the first read on the standby that sees the
# commit sees it through the cache too; concurrent misses on the standby
# share one flight; the standby computes every call while it cannot know
# that the primary writes the records (before the first one, after a
# primary restart without them); a standby restart, a cascading standby and
# a promotion keep it exact.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;
use Time::HiRes ();

my $primary = memo_node('primary', init => [allows_streaming => 1], conf => "pg_memo.standby_records = on\n");
$primary->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY, v int, scope text);
  INSERT INTO t SELECT g, g, 's' || (g % 2) FROM generate_series(1, 10) g;
  SELECT memo.watch('t');
  CREATE TABLE d (id int PRIMARY KEY, scope text);
  INSERT INTO d SELECT g, 's' || (g % 3) FROM generate_series(1, 30) g;
  SELECT memo.watch('d', deltas => true);
  CREATE ROLE reader LOGIN;
  GRANT USAGE ON SCHEMA memo TO reader;
  GRANT SELECT ON t TO reader;
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# A commit flushes whatever WAL is still unflushed (a LOCK TABLE's record,
# say); then the standby has replayed everything once it reaches the end.
sub synced {
    $primary->safe_psql('postgres', 'SELECT pg_current_xact_id()');
    $primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
}
sub stat_on { my ($node, $cache, $col) = @_; return memo_stat($node, $cache, $col) || 0; }

my $count_t = q{SELECT memo.count('ct', 'SELECT * FROM t WHERE v > 3')};
my $plain_t = q{SELECT count(*) FROM t WHERE v > 3};
my $list_d = q{SELECT string_agg(id::text, ',' ORDER BY id) FROM memo.list_as(NULL::d, 'ld', 'SELECT * FROM d WHERE scope = $1 ORDER BY id', '{s1}')};
my $plain_d = q{SELECT string_agg(id::text, ',' ORDER BY id) FROM d WHERE scope = 's1'};

# Until it replays a pg_memo record, the standby cannot know that the
# primary writes them: it computes every call.
synced();
$standby->safe_psql('postgres', $count_t) for 1 .. 2;
is(stat_on($standby, 'ct', 'hits'), 0, 'before any record: no hit on the standby');
is(stat_on($standby, 'ct', 'bypasses'), 2, 'before any record: every call computes');
ok($standby->log_contains('pg_memo: this standby computes every memo call until it replays a pg_memo record'),
   'the standby says so in its log');

# A miss on the primary writes a STATE record: the standby serves from it.
$primary->safe_psql('postgres', $count_t);
synced();
$standby->safe_psql('postgres', $count_t) for 1 .. 2;
is(stat_on($standby, 'ct', 'hits'), 1, 'after the STATE record the standby serves its own entries');
ok($standby->log_contains('this standby serves memoized results'), 'and says so in its log');

# Each kind of change on the primary: the standby's first read after the
# commit agrees with an uncached read there, and the one after is a hit.
sub after_change {
    my ($what, $change, $memo, $plain) = @_;
    $standby->safe_psql('postgres', $memo) for 1 .. 2;  # a current entry
    $primary->safe_psql('postgres', $change);
    synced();
    my $want = $standby->safe_psql('postgres', $plain);
    is($standby->safe_psql('postgres', $memo), $want, "$what: the first read after the commit sees it");
    is($primary->safe_psql('postgres', $plain), $want, "$what: as on the primary");
}
my $replayed = $standby->safe_psql('postgres', 'SELECT writing_commits FROM memo.info');
after_change('INSERT', 'INSERT INTO t VALUES (11, 11, \'s1\')', $count_t, $plain_t);
is($standby->safe_psql('postgres', 'SELECT writing_commits FROM memo.info'), $replayed + 1,
   'memo.info on the standby counts the replayed writing commit');
after_change('UPDATE', 'UPDATE t SET v = 0 WHERE id = 5', $count_t, $plain_t);
after_change('DELETE', 'DELETE FROM t WHERE id = 6', $count_t, $plain_t);
after_change('TRUNCATE', 'TRUNCATE t; INSERT INTO t SELECT g, g, \'s\' || (g % 2) FROM generate_series(1, 7) g',
             $count_t, $plain_t);
after_change('ALTER TABLE', 'ALTER TABLE t ADD COLUMN note text DEFAULT 'x'; DELETE FROM t WHERE id = 7',
             $count_t, $plain_t);
after_change('writes while the trigger is disabled',
             'ALTER TABLE t DISABLE TRIGGER pg_memo_invalidate; UPDATE t SET v = 1; ALTER TABLE t ENABLE ALWAYS TRIGGER pg_memo_invalidate',
             $count_t, $plain_t);
# memo.invalidate alone has no commit record: its own BUMP record.
{
    my $gen = q{SELECT memo.generation('t')};
    my $g = $standby->safe_psql('postgres', $gen);
    $standby->safe_psql('postgres', $count_t);
    my $computed = stat_on($standby, 'ct', 'computations');
    $primary->safe_psql('postgres', q{SELECT memo.invalidate('t')});
    synced();
    cmp_ok($standby->safe_psql('postgres', $gen), '>', $g, 'memo.invalidate moves the standby\'s counter');
    $standby->safe_psql('postgres', $count_t);
    is(stat_on($standby, 'ct', 'computations'), $computed + 1, 'memo.invalidate: the standby computes again');
}
after_change('INSERT into a table watched with deltas', 'INSERT INTO d VALUES (31, \'s1\')', $list_d, $plain_d);
after_change('UPDATE of a table watched with deltas', 'UPDATE d SET scope = \'s2\' WHERE id = 1', $list_d, $plain_d);
my $before_rollback = stat_on($standby, 'ct', 'hits');
$primary->safe_psql('postgres', 'BEGIN; DELETE FROM t; ROLLBACK');
synced();
$standby->safe_psql('postgres', $count_t);
is(stat_on($standby, 'ct', 'hits'), $before_rollback + 1, 'a rolled-back write leaves the entry current');

# A view renamed and replaced (the schema swap of the adversarial suite).
$primary->safe_psql('postgres', q{CREATE VIEW cur AS SELECT id FROM t WHERE v > 0});
my $count_cur = q{SELECT memo.count('cv', 'SELECT * FROM cur')};
after_change('a view replaced by a rename',
             q{BEGIN; ALTER VIEW cur RENAME TO old_cur; CREATE VIEW cur AS SELECT id FROM t WHERE id < 3; COMMIT},
             $count_cur, 'SELECT count(*) FROM cur');

# A revoked privilege: the standby refuses the hit as the primary would.
my $as_reader = q{SET ROLE reader; } . $count_t;
$standby->safe_psql('postgres', $as_reader) for 1 .. 2;
$primary->safe_psql('postgres', 'REVOKE SELECT ON t FROM reader');
synced();
my ($rc, $out, $err) = $standby->psql('postgres', $as_reader);
like($err, qr/permission denied/, 'a privilege revoked on the primary: no hit for that role on the standby');

# memo.reset on the primary empties the standby's store too.
$standby->safe_psql('postgres', $count_t);
$primary->safe_psql('postgres', 'SELECT memo.reset()');
synced();
is($standby->safe_psql('postgres', 'SELECT entries FROM memo.info'), 0, 'memo.reset is replayed');

# Flights on the standby: the primary's ACCESS EXCLUSIVE lock, replayed,
# holds the leader back; the others wait on its flight, and one
# computation serves them all.
{
    $primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 1');
    synced();
    my $computations = stat_on($standby, 'ct', 'computations');
    my $locker = $primary->background_psql('postgres');
    $locker->query_safe('BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE');
    synced();  # the lock's record, flushed by another commit
    my ($leader, $leader_pid) = start_call($standby, $count_t);
    wait_until($standby, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $leader_pid",
               'the leader to wait on the replayed lock');
    my @waiters = map { [start_call($standby, $count_t)] } 1 .. 4;
    wait_until($standby, q{SELECT count(*) = 4 FROM pg_stat_activity WHERE wait_event_type = 'Extension'},
               'four waiters on the flight');
    $locker->query_safe('COMMIT');
    $locker->quit;
    my $want = $standby->safe_psql('postgres', $plain_t);
    my @got = map { (finish_call($_->[0]))[0] } [$leader], @waiters;
    is_deeply(\@got, [($want) x 5], 'the five concurrent calls on the standby return the current count');
    is(stat_on($standby, 'ct', 'computations'), $computations + 1, 'one computation for five misses on the standby');
}

# pg_memo.max_staleness on a serving standby: an older answer within the
# bound, which runs from the standby's replay of the commit it misses
# (docs/consistency.md, "Older answers (opting out of exactness)"); past it, the commit.
{
    my $relaxed = sub { "SET pg_memo.max_staleness = '$_[0]'; " . $count_t };
    $standby->safe_psql('postgres', $count_t) for 1 .. 2;
    my $old = $standby->safe_psql('postgres', $plain_t);
    my $stale = stat_on($standby, 'ct', 'stale_hits');
    $primary->safe_psql('postgres', q{INSERT INTO t VALUES (40, 40, 's0')});
    synced();
    my $replayed_at = Time::HiRes::time();
    isnt($standby->safe_psql('postgres', $plain_t), $old, 'the standby replayed the write');
    is($standby->safe_psql('postgres', $relaxed->('1h')), $old, 'max_staleness on a standby: the older answer, within the bound');
    is(stat_on($standby, 'ct', 'stale_hits'), $stale + 1, 'counted as a stale hit on the standby');
    # Once a 2 s bound has passed since the replay, the write.
    Time::HiRes::sleep(2.2 - (Time::HiRes::time() - $replayed_at)) if Time::HiRes::time() - $replayed_at < 2.2;
    is($standby->safe_psql('postgres', $relaxed->('2s')), $standby->safe_psql('postgres', $plain_t),
       'max_staleness on a standby: past the bound since the replay, the current result');
    # stale_on_error: the query now fails on the standby's data; within the
    # bound the older answer, with a warning.
    my $fails = q{SELECT memo.count('cf', 'SELECT * FROM t WHERE 10 / (v - 77) <> 0')};
    $standby->safe_psql('postgres', $fails) for 1 .. 2;
    my $before = $standby->safe_psql('postgres', $fails);
    $primary->safe_psql('postgres', q{INSERT INTO t VALUES (77, 77, 's0')});
    synced();
    my ($rc, $out, $err) = $standby->psql('postgres', "SET pg_memo.stale_on_error = '1h'; $fails");
    is($out, $before, 'stale_on_error on a standby: the older answer for a query that now fails');
    like($err, qr/served an older result/, 'with its warning');
    ($rc, $out, $err) = $standby->psql('postgres', $fails);
    like($err, qr/division by zero/, 'without it, the error the direct query raises');
    $primary->safe_psql('postgres', 'DELETE FROM t WHERE id IN (40, 77)');
    synced();
}

# DROP DATABASE on the primary frees the database's entries and statistics
# rows on the standby too.
{
    $primary->safe_psql('postgres', 'CREATE DATABASE gone');
    $primary->safe_psql('gone', q{CREATE EXTENSION pg_memo; CREATE TABLE g (id int); INSERT INTO g VALUES (1); SELECT memo.watch('g');});
    synced();
    $standby->safe_psql('gone', q{SELECT memo.count('gone.c', 'SELECT * FROM g')}) for 1 .. 2;
    is($standby->safe_psql('postgres', q{SELECT count(*) FROM memo.stats WHERE datname = 'gone'}), '1',
       'the standby keeps a stats row of the database');
    my $entries = $standby->safe_psql('postgres', 'SELECT entries FROM memo.info');
    $primary->safe_psql('postgres', 'DROP DATABASE gone');
    synced();
    is($standby->safe_psql('postgres', q{SELECT count(*) FROM memo.stats WHERE datname IS NULL OR datname NOT IN (SELECT datname FROM pg_database)}),
       '0', 'DROP DATABASE replayed: no stats row of it left on the standby');
    is($standby->safe_psql('postgres', 'SELECT entries FROM memo.info'), $entries - 1,
       'and its entry is freed');
    ok($standby->log_contains('freed 1 cached entries and 1 statistics rows of dropped database'),
       'the standby logs it');
    # ALTER DATABASE ... SET TABLESPACE replays a drop of the old directory:
    # the database lives on, and so do its entries.
    $primary->safe_psql('postgres', q{CREATE DATABASE moved; SET allow_in_place_tablespaces = on;
                                       CREATE TABLESPACE elsewhere LOCATION ''});
    $primary->safe_psql('moved', q{CREATE EXTENSION pg_memo; CREATE TABLE m (id int); SELECT memo.watch('m');});
    synced();
    $standby->safe_psql('moved', q{SELECT memo.count('moved.c', 'SELECT * FROM m')}) for 1 .. 2;
    $primary->safe_psql('postgres', 'ALTER DATABASE moved SET TABLESPACE elsewhere');
    synced();
    is($standby->safe_psql('postgres', q{SELECT entries FROM memo.stats WHERE datname = 'moved'}), '1',
       'a database moved to another tablespace keeps its entries and statistics on the standby');
    $primary->safe_psql('postgres', 'DROP DATABASE moved');
    $primary->safe_psql('postgres', 'DROP TABLESPACE elsewhere');
}

# A primary restarted without the records: the standby stops serving at
# its shutdown checkpoint, and its calls compute (they see the unrecorded
# writes); restarted with them, it serves again, and no entry computed
# before the gap is served after it.
$standby->safe_psql('postgres', $count_t) for 1 .. 2;
$primary->append_conf('postgresql.conf', "pg_memo.standby_records = off\n");
$primary->restart;
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1000 WHERE id = 2');
synced();
ok($standby->log_contains('The primary shut down or finished crash recovery'), 'the standby logs the gap');
my $bypasses = stat_on($standby, 'ct', 'bypasses');
is($standby->safe_psql('postgres', $count_t), $standby->safe_psql('postgres', $plain_t),
   'records off on the primary: the standby computes the current result');
is(stat_on($standby, 'ct', 'bypasses'), $bypasses + 1, 'without records: a bypass');
$primary->append_conf('postgresql.conf', "pg_memo.standby_records = on\n");
$primary->restart;
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 3');
synced();
is($standby->safe_psql('postgres', $count_t), $standby->safe_psql('postgres', $plain_t),
   'records on again: the standby serves the current result');
my $hits = stat_on($standby, 'ct', 'hits');
$standby->safe_psql('postgres', $count_t);
is(stat_on($standby, 'ct', 'hits'), $hits + 1, 'and hits again');

# On $node (a standby), with an entry that was just a hit, a write on the
# primary that changes the count ($change, after $sync): the first read
# after it sees it.
sub hit_then_change {
    my ($node, $what, $change, $sync) = @_;
    $node->safe_psql('postgres', $count_t);
    my $hits = stat_on($node, 'ct', 'hits');
    my $before = $node->safe_psql('postgres', $count_t);
    is(stat_on($node, 'ct', 'hits'), $hits + 1, "$what: the entry is a hit before the write");
    $primary->safe_psql('postgres', $change);
    $sync->();
    my $want = $node->safe_psql('postgres', $plain_t);
    isnt($want, $before, "$what: the write changes the count");
    is($node->safe_psql('postgres', $count_t), $want, "$what: the first read after the write sees it");
}

# A standby restart: it computes until it replays a record (the first may
# come from WAL it replays again), then serves, exactly.
$standby->restart;
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 4');
synced();
hit_then_change($standby, 'a restarted standby', 'INSERT INTO t VALUES (50, 50, \'s0\')', \&synced);

# A cascading standby replays the same records.
$standby->backup('c');
my $cascade = PostgreSQL::Test::Cluster->new('cascade');
$cascade->init_from_backup($standby, 'c', has_streaming => 1);
$cascade->start;
my $cascade_synced = sub { synced(); $standby->wait_for_catchup($cascade, 'replay', $standby->lsn('replay')); };
$primary->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id = 5');
$cascade_synced->();
hit_then_change($cascade, 'a cascading standby', 'INSERT INTO t VALUES (51, 51, \'s0\')', $cascade_synced);

# Promotion: the former standby goes on as a primary with its entries,
# and its own writes invalidate them.
$cascade->stop;
$standby->safe_psql('postgres', $count_t) for 1 .. 2;
$standby->promote;
$hits = stat_on($standby, 'ct', 'hits');
is($standby->safe_psql('postgres', $count_t), $standby->safe_psql('postgres', $plain_t), 'promoted: the entry is current');
is(stat_on($standby, 'ct', 'hits'), $hits + 1, 'promoted: served from the cache');
$standby->safe_psql('postgres', 'UPDATE t SET v = v + 100 WHERE id = 1');
is($standby->safe_psql('postgres', $count_t), $standby->safe_psql('postgres', $plain_t),
   'promoted: its own writes invalidate');

$standby->stop;
$primary->stop;
done_testing();
