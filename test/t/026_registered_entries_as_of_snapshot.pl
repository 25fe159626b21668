# Registered statements: an entry answers a statement whose snapshot is
# older than the present when it was computed as of the state that snapshot
# sees (docs/consistency.md, "Entries as of their snapshot"), and no other.
# Cursors are the portals that keep their snapshot (a simple Query's answers
# as of the call); each FETCH is compared with what PostgreSQL returns.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('as_of');
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE t (id int PRIMARY KEY, g int);
  INSERT INTO t SELECT i, i % 2 FROM generate_series(1, 10) i;
  SELECT memo.watch('t');
  SELECT memo.cache_statement('SELECT count(*) FROM t WHERE g = 1', cache_name => 'as_of');
});
my $statement = 'SELECT count(*) FROM t WHERE g = 1';
sub stat_of { return memo_stat($node, 'as_of', $_[0]); }

# A cursor fetched in a transaction of its own: the entry it leaves (or
# uses) is as of its snapshot.
sub cursor_count {
    return $node->safe_psql('postgres', "BEGIN; DECLARE c CURSOR FOR $statement; FETCH ALL c; COMMIT;");
}

# A: a cursor declared before anything is computed (its snapshot S0).
my $a = $node->background_psql('postgres');
$a->query_safe("BEGIN; DECLARE a CURSOR FOR $statement");

# Another cursor with a snapshot that sees what S0 sees computes and stores.
is(cursor_count(), '5', 'a cursor computes the count');
is(stat_of('computations'), '1', 'one computation, stored as of its snapshot');

# A write: the entry is stale for the present.
$node->safe_psql('postgres', 'INSERT INTO t VALUES (11, 1)');

# D: a cursor declared after that write (its snapshot S1), then a second write.
my $d = $node->background_psql('postgres');
$d->query_safe("BEGIN; DECLARE d CURSOR FOR $statement");
$node->safe_psql('postgres', 'INSERT INTO t VALUES (13, 1)');

# A's snapshot sees what the stale entry was computed as of: served it.
my $hits = stat_of('hits');
is($a->query_safe('FETCH ALL a'), '5', 'A returns what its snapshot sees (PostgreSQL: 5)');
is(stat_of('hits'), $hits + 1, 'A was served the stale entry computed as of its snapshot');
is(stat_of('computations'), '1', 'A computed nothing');
$a->query_safe('COMMIT');

# D's snapshot sees another state: the entry is not its answer.
is($d->query_safe('FETCH ALL d'), '6', 'D returns what its snapshot sees (PostgreSQL: 6), not the entry');
is(stat_of('computations'), '2', 'D computed its own answer');
$d->query_safe('COMMIT');

# The present: neither older answer.
is($node->safe_psql('postgres', $statement), '7', 'a statement now counts both writes');

# A transaction that wrote a dependency sees its own write, which no entry
# holds, even where its snapshot saw an entry's state.
$hits = stat_of('hits');
is(cursor_count(), '7', 'a cursor now returns the present');
is(stat_of('hits'), $hits + 1, 'it was served the entry of the present');
my $own = $node->background_psql('postgres');
$own->query_safe("BEGIN; DECLARE o CURSOR FOR $statement; INSERT INTO t VALUES (15, 1)");
is($own->query_safe('FETCH ALL o'), '7', 'the cursor predates its own write (PostgreSQL: 7)');
is($own->query_safe($statement), '8', 'a later statement sees the own write');
$own->query_safe('ROLLBACK');
is($node->safe_psql('postgres', $statement), '7', 'the rolled-back write is seen by no one');

$a->quit;
$d->quit;
$own->quit;
done_testing();
