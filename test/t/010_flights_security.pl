# Who sees what of a flight in memo.flights (docs/security.md): its query
# text and parameters only its own role and members of pg_read_all_stats;
# its cache name also every role of its own database; roles of other
# databases see neither. The flight is held open by a table lock taken in
# another session, as in 002_flights_singleflight.pl.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('flight_security');

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE ROLE memo_fs_app;
  CREATE ROLE memo_fs_other;
  CREATE ROLE memo_fs_monitor IN ROLE pg_read_all_stats;
  CREATE DATABASE fs_app;
});
$node->safe_psql('fs_app', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE emp (id int, scope text);
  INSERT INTO emp VALUES (1, 's1');
  SELECT memo.watch('emp');
  GRANT SELECT ON emp TO memo_fs_app;
});

my $blocker = $node->background_psql('fs_app');
$blocker->query_safe('BEGIN');
$blocker->query_safe('LOCK TABLE emp IN ACCESS EXCLUSIVE MODE');

my $leader = $node->background_psql('fs_app', on_error_stop => 0);
my $leader_pid = $leader->query_safe('SELECT pg_backend_pid()');
$leader->query_safe('SET ROLE memo_fs_app');
$leader->query_until(qr/started/, q{\echo started
SELECT memo.count('fs.label', 'SELECT * FROM emp WHERE scope = $1', '{s1}');
});
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM memo.flights WHERE leader_pid = $leader_pid")
  or die 'the leader did not start its flight';

# "cache name | query | params" of the flight, as $role connected to $db
sub flight_as {
    my ($db, $role) = @_;
    return $node->safe_psql($db, qq{SET ROLE $role;
        SELECT concat_ws(' | ', coalesce(cache_name, '<hidden>'), coalesce(query, '<hidden>'),
                         coalesce(params::text, '<hidden>'))
          FROM memo.flights WHERE leader_pid = $leader_pid});
}

my $all = 'fs.label | SELECT * FROM emp WHERE scope = $1 | {s1}';
is(flight_as('fs_app', 'memo_fs_other'), 'fs.label | <hidden> | <hidden>',
   'another role of the same database sees the cache name only');
is(flight_as('postgres', 'memo_fs_other'), '<hidden> | <hidden> | <hidden>',
   'a role of another database sees neither cache name nor query');
is(flight_as('postgres', 'memo_fs_app'), $all, "the flight's own role sees everything, from any database");
is(flight_as('postgres', 'memo_fs_monitor'), $all, 'a member of pg_read_all_stats sees everything');
is($node->safe_psql('postgres', q{SET ROLE memo_fs_other;
       SELECT count(*) FROM memo.stats WHERE cache_name = 'fs.label'}),
   '0', 'memo.stats hides the name from a role of another database too');
is($node->safe_psql('postgres', q{SET ROLE memo_fs_monitor;
       SELECT count(*) FROM memo.stats WHERE cache_name = 'fs.label'}),
   '1', 'and shows it to a member of pg_read_all_stats');

$blocker->query_safe('COMMIT');
$blocker->quit;
# The flight's own result (count 1), then this query's.
is($leader->query_safe('SELECT 1 AS finished'), "1\n1", 'the leader finished its flight with the count 1');
$leader->quit;
is($node->safe_psql('fs_app', q{SELECT memo.count('fs.label', 'SELECT * FROM emp WHERE scope = $1', '{s1}')}),
   '1', 'a later call returns the right count');

$node->stop;
done_testing();
