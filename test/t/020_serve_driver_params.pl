# The memo functions called by real drivers with their default parameter
# binding (issue 32): psycopg 3 sends a list of ints as smallint[],
# Decimals as numeric[], floats as double precision[], bools as boolean[];
# node-postgres sends every value untyped, an array as an array literal, as
# unnamed and named statements. Each result is compared with the direct
# query across writes by another client, and served from the cache; the
# same values bound as int, text and numeric make one key; a per-call
# option overrides the session's setting.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $clients = "$FindBin::RealBin/../clients";
my $python = '/usr/bin/python3';
my $node = memo_node('driver_params');
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE dp_items (id serial PRIMARY KEY, team int NOT NULL, title text, weight numeric, done boolean);
  INSERT INTO dp_items (team, title, weight, done)
  SELECT g % 4, 'title ' || g, (g % 10) / 4.0, g % 3 = 0 FROM generate_series(1, 200) g;
  SELECT memo.watch('dp_items');
  CREATE ROLE dp_app LOGIN;
  GRANT SELECT ON dp_items TO dp_app;
});
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
sub hits { my ($cache) = @_; return memo_stat($node, $cache, 'coalesce(sum(hits), 0)') || 0 }
sub connstr { my ($user) = @_; return $node->connstr('postgres') . " user=$user" }
sub url { my ($user) = @_; return "postgresql://$user\@/postgres?host=" . $node->host . '&port=' . $node->port }
sub run_client {
    my ($what, @cmd) = @_;
    my ($out, $err) = run_command(\@cmd);
    like($out, qr/checked=[1-9]\d* mismatches=0 errors=0\b/, "$what: every result is the direct query's, no errors")
      or diag("stdout: $out\nstderr: $err");
}

# ---- psycopg 3 -------------------------------------------------------------------
run_client('psycopg', $python, "$clients/psycopg_memo_calls.py", connstr('dp_app'), connstr($superuser));
for my $what (qw(int numeric float bool two fresh page)) {
    cmp_ok(hits("dp.$what"), '>', 0, "psycopg's $what parameters are served from the cache");
}
is($node->safe_psql('postgres', q{SELECT calls || ' ' || hits FROM memo.stats WHERE cache_name = 'dp.same_key'}),
   '3 2', '7 bound as smallint, as text and as numeric make one key');

# ---- node-postgres ------------------------------------------------------------
# Unnamed (the default) and named statements have a cache name each, so that
# each is seen served from the cache. Without Node.js or node-postgres the
# block is skipped, except under CI (CI=true), where they are installed
# (scripts/install-deps.sh runs npm ci in test/clients) and missing is a failure.
my $under_ci = ($ENV{CI} // '') =~ /^(?:true|1|yes)$/i;
my ($node_bin) = grep { -f $_ && -x _ } map { "$_/node" } grep { length } split /:/, $ENV{PATH} // '';
my $no_node = !$node_bin ? 'Node.js is not installed (no node in PATH)'
  : !-d "$clients/node_modules/pg" ? 'node-postgres is not installed in test/clients/node_modules'
      . ' (scripts/install-deps.sh runs npm ci there)'
  : undef;
SKIP: {
    if ($no_node) {
        fail("node-postgres: $no_node; under CI (CI=$ENV{CI}) that is a failure, not a skip") if $under_ci;
        skip $no_node, $under_ci ? 3 : 4;
    }
    run_client('node-postgres', $node_bin, "$clients/node_memo_calls.js", url('dp_app'), url($superuser));
    cmp_ok(hits('dp.node_unnamed'), '>', 0, 'node-postgres unnamed statements are served from the cache');
    cmp_ok(hits('dp.node_named'), '>', 0, 'node-postgres named (prepared) statements are served from the cache');
    cmp_ok(hits('dp.node_fresh'), '>', 0, 'with a per-call option too');
}

# ---- a per-call option over the session's setting --------------------------------
my $count = q{memo.count('dp.option', 'SELECT * FROM dp_items WHERE team = $1', ARRAY[2]};
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{SET pg_memo.max_staleness = '1h'});
my $before = $bg->query_safe("SELECT $count)");
$node->safe_psql('postgres', q{INSERT INTO dp_items (team, title) VALUES (2, 'new')});
is($bg->query_safe("SELECT $count)"), $before, "the session's max_staleness serves the older answer");
is($bg->query_safe("SELECT $count, max_staleness => '0')"), $before + 1,
   'max_staleness => 0 in the call gives the write at once');
$bg->query_safe(q{SET pg_memo.max_staleness = 0});
$node->safe_psql('postgres', q{INSERT INTO dp_items (team, title) VALUES (2, 'newer')});
is($bg->query_safe("SELECT $count, max_staleness => '1h')"), $before + 1,
   "max_staleness => '1h' in the call serves the older answer");
is($bg->query_safe("SELECT $count)"), $before + 2, "the session's setting is back for the next call");
$bg->quit;

done_testing();
