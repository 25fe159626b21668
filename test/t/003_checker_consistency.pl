# Randomized consistency check, short CI mode: writers change the directory
# and two tables of the checker's own in random transaction shapes while
# readers compare every cached result with the uncached truth; a read counts
# as checked only if no write committed between its cached call and its
# truth (see test/perl/MemoConsistency.pm). The long mode is
# test/consistency/checker.pl.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;
use MemoConsistency;

my $reads = 3000;

my $node = memo_node('consistency', conf => qq{
deadlock_timeout = '100ms'
max_connections = 40
max_prepared_transactions = 20
});

my $conn = { psql => 'psql', host => $node->host, port => $node->port, dbname => 'postgres' };
MemoConsistency::setup($conn, seed_rows => 2000);

# 1. The judge itself can fail. A query that reads a large object through
#    a function falsely declared IMMUTABLE is invisible to pg_memo's
#    dependency tracking (no plan reads it: docs/reference.md, "Functions
#    inside a cached query"): after the object changes, the cache serves
#    the old result, and the check must say so. chk.hidden only counts the
#    writes for the judge (its trigger bumps chk.commits).
$node->safe_psql('postgres', q{
  CREATE TABLE chk.hidden (id int PRIMARY KEY, v int);
  INSERT INTO chk.hidden VALUES (1, 3);
  SELECT lo_from_bytea(4343, '3');
  CREATE FUNCTION chk.hidden_value(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS 'BEGIN RETURN convert_from(lo_get(4343), ''UTF8'')::int + 0 * $1; END';
  CREATE TRIGGER chk_count_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON chk.hidden
    FOR EACH STATEMENT EXECUTE FUNCTION chk.count_write();
});
{
    my $lie = MemoConsistency::generic_spec('count', 'chk.lie',
        'SELECT * FROM chk.groups WHERE grp <= chk.hidden_value($1::int)', [1]);
    my $reader = MemoConsistency::Psql->new($conn);
    my $writer = MemoConsistency::Psql->new($conn);
    $writer->ok(q{SET chk.writer = '1'});
    my $write = sub {
        my ($v, %o) = @_;
        $writer->ok("SELECT lo_put(4343, 0, '$v')");
        $writer->ok("UPDATE chk.hidden SET v = $v");
        $writer->ok('UPDATE chk.acks a SET n = c.n FROM chk.commits c WHERE c.writer = a.writer AND a.writer = 1')
          unless $o{unacknowledged};
    };
    my $check = sub { MemoConsistency::checked_read($reader, $lie, @_) };

    is($check->('split'), 'strict_ok', 'judge: a computed result matches the truth');
    is($check->('statement'), 'strict_ok', 'judge: so does the hit');
    $write->(5);
    is($check->('split'), 'strict_mismatch', 'judge: a stale hit is a strict mismatch (split statements)');
    is($check->('statement'), 'strict_mismatch', 'judge: and in one statement');
    is($check->('txn'), 'strict_mismatch', 'judge: and inside a transaction');
    $write->(7, unacknowledged => 1);
    is($check->('split'), 'window_mismatch',
        'judge: a commit not yet acknowledged puts the read in the window class');
    $write->(7);
    is($check->('split', undef, undef, sub { $write->(8) }), 'skipped',
        'judge: a commit between the cached call and the truth skips the read (split)');
    is($check->('statement', undef, undef, sub { $write->(9) }), 'skipped',
        'judge: and in one statement');
    $reader->close;
    $writer->close;
    $node->safe_psql('postgres', 'DROP TABLE chk.hidden CASCADE; DROP FUNCTION chk.hidden_value(int); SELECT lo_unlink(4343)');
    $node->safe_psql('postgres', 'SELECT memo.reset(); SELECT memo.reset_stats()');
}

# 2. The randomized run: 2 writers, 4 readers, until $reads reads were
#    checked. max_seconds only keeps a broken run from going on forever.
my $run_dir = PostgreSQL::Test::Utils::tempdir();
my $n = MemoConsistency::run(conn => $conn, writers => 2, readers => 4, reads => $reads, seed_rows => 2000,
    pause_ms => 20, max_seconds => 900, dir => $run_dir);
my $stats = MemoConsistency::cache_stats($conn);
note(MemoConsistency::report($n, $stats));

is($n->{worker_failures}, 0, 'every writer and reader ran to the end');
cmp_ok($n->{checked}, '>=', $reads, "at least $reads reads were checked");
# Under load more reads find a commit not yet acknowledged (window class).
cmp_ok($n->{'reads.strict_ok'}, '>=', $reads / 4, 'many of them with every commit acknowledged (strict)');
is($n->{'reads.strict_mismatch'}, 0, 'no strict mismatch: every cached result was the truth');
is($n->{'reads.window_mismatch'}, 0, 'no mismatch among reads made while a commit was unacknowledged');
is($n->{'repeatable_read.mismatch'}, 0, 'REPEATABLE READ reads (cache bypassed) match their snapshot');
cmp_ok($n->{'repeatable_read.ok'}, '>', 0, 'some REPEATABLE READ reads were made');
is($n->{'reads.error'}, 0, 'no read failed (deadlocks between writers reading inside their transactions aside)');
is($n->{'repeatable_read.error'}, 0, 'no REPEATABLE READ read failed');
cmp_ok($stats->{hits}, '>', 0, 'the cache served hits during the run');
cmp_ok($stats->{carried}, '>', 0, 'entries were carried forward by deltas during the run');
for my $role ('reader', 'writer_in_txn', 'writer_after_commit') {
    my $ok = 0;
    $ok += $n->{$_} // 0 for map { "reads.$role.$_" } qw(split.strict_ok split.window_ok);
    cmp_ok($ok, '>', 0, "checked reads by the role $role");
}
# A shape ran when one of its transactions ended as it was meant to end
# (committed, or rolled back by design); those that failed do not count.
for my $shape (qw(autocommit multi savepoint_rollback savepoint_release rollback reseed_directory
                  reseed_items reseed_rolled_back two_phase)) {
    my $ran = 0;
    $ran += $n->{$_} for grep { /^shape\.\Q$shape\E\.(committed|rolled_back)/ } keys %$n;
    cmp_ok($ran, '>', 0, "writers ran transactions of the shape $shape to their end");
}
cmp_ok($n->{'shape.two_phase.committed'} // 0, '>', 0, 'some prepared transactions were committed (COMMIT PREPARED)');
# Write errors of the expected kinds (deadlocks between writers, a random
# pick that another writer moved first) are counted; any other error of a
# writer or reader is written to problems.log.
note('write errors of the expected kinds: ' . ($n->{write_errors} // 0));
my $problems = -e "$run_dir/problems.log" ? PostgreSQL::Test::Utils::slurp_file("$run_dir/problems.log") : '';
is($problems, '', 'no unexpected error of a writer or reader (problems.log is empty)');
is($stats->{directory_inconsistencies}, 0, 'the directory stayed consistent (directory.check_consistency)');

done_testing();
