# Registered statements with real clients (issue 30): statements run by
# unchanged applications, each result compared with the same
# statement where pg_memo serves nothing (pg_memo.serve_statements = off),
# across writes by another client; and served (hits counted).
#
# 1. pgbench in its three modes (simple, extended, prepared);
# 2. Python with psycopg 3 (server-side prepared after five executions)
#    and SQL that SQLAlchemy Core generates, registered by the query
#    identifiers pg_stat_statements shows for them (a DBA's way: psycopg
#    binds its integers with types of its own choosing); and (2b) one
#    registration by text serving every way psycopg sends its statement
#    (integers of three sizes, values in the text), matched by shape;
# 3. Node.js with node-postgres, named and unnamed statements;
# 4. the same Python and Node.js clients through PgBouncer in transaction
#    pooling mode;
# 5. memo.candidates: the statements by total time, with why each is or is
#    not cacheable;
# 6. the application's role: a REVOKE shows at the next statement;
# 7. a hot standby: a registration made on the primary reaches it with the
#    commit's replay (a prepared statement there too), its executions are
#    served, a write on the primary shows at the first read after replay,
#    and an unregistration stops serving.
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
my $node = memo_node('clients', init => [allows_streaming => 1],
                     conf => "shared_preload_libraries = 'pg_memo, pg_stat_statements'\npg_memo.standby_records = on\n");
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE EXTENSION pg_stat_statements;
  CREATE TABLE cl_items (id serial PRIMARY KEY, team int NOT NULL, title text);
  INSERT INTO cl_items (team, title) SELECT g % 4, 'title ' || g FROM generate_series(1, 200) g;
  SELECT memo.watch('cl_items');
  CREATE ROLE cl_app LOGIN;
  GRANT SELECT ON cl_items TO cl_app;
  SELECT memo.cache_statement('SELECT id, title FROM cl_items WHERE team = $1 ORDER BY id LIMIT $2', 'cl.page');
  SELECT memo.cache_statement('SELECT id, title FROM cl_items WHERE team = $1 ORDER BY id LIMIT 5', 'cl.bench');
  SELECT memo.cache_statement('SELECT id, title FROM cl_items WHERE team = 1 ORDER BY id LIMIT 5', 'cl.bench');
});

sub hits { my ($cache) = @_; return memo_stat($node, $cache, 'coalesce(sum(hits), 0)') || 0 }
sub connstr { my ($user) = @_; return $node->connstr('postgres') . " user=$user" }
sub url {
    my ($user, $host, $port) = @_;
    return "postgresql://$user\@" . ($host =~ m{^/} ? "/postgres?host=$host&port=$port" : "$host:$port/postgres");
}

# ---- 1. pgbench, three modes -------------------------------------------------
my $script = "$PostgreSQL::Test::Utils::tmp_check/cl_bench.sql";
PostgreSQL::Test::Utils::append_to_file($script, "\\set team random(0, 3)\n"
    . "SELECT id, title FROM cl_items WHERE team = :team ORDER BY id LIMIT 5;\n");
for my $mode (qw(simple extended prepared)) {
    my $before = hits('cl.bench');
    $node->command_ok(['pgbench', '-n', '-M', $mode, '-c', '2', '-t', '100', '-f', $script, '-U', 'cl_app',
                       'postgres'], "pgbench -M $mode runs the registered statement");
    cmp_ok(hits('cl.bench'), '>', $before, "pgbench -M $mode is served from the cache");
}

# ---- 2. psycopg 3 and SQLAlchemy's SQL, directly ------------------------------
sub run_client {
    my ($what, @cmd) = @_;
    my ($out, $err) = run_command(\@cmd);
    like($out, qr/checked=[1-9]\d* mismatches=0\b/, "$what: every result is the statement's own")
      or diag("stdout: $out\nstderr: $err");
    like($out, qr/errors=0\b/, "$what: no errors") if $out =~ /errors=/;
}
my $app = connstr('cl_app');
my $writer = connstr($node->safe_psql('postgres', 'SELECT current_user'));
# First as the application runs before anything of it is registered, then
# registered by the identifiers pg_stat_statements shows for it.
run_client('psycopg, unregistered', $python, "$clients/psycopg_client.py", $app, $app, $writer, 'direct');
my $registered = $node->safe_psql('postgres', q{
  SELECT count(memo.cache_statement(queryid, 'cl.python'))
    FROM (SELECT DISTINCT queryid FROM pg_stat_statements
           WHERE query ~ '^SELECT .*cl_items.* = \$1 ORDER BY .*LIMIT \$2$'
             AND queryid NOT IN (SELECT query_id FROM memo.statements)) q});
cmp_ok($registered, '>=', 1, 'the Python statements are registered by query identifier');
my $before = hits('cl.python');
run_client('psycopg and SQLAlchemy, direct', $python, "$clients/psycopg_client.py", $app, $app, $writer, 'direct');
cmp_ok(hits('cl.python'), '>', $before, 'psycopg and SQLAlchemy statements are served from the cache');

# ---- 2b. one registration by text, every way psycopg sends its statement ------
# (issue 47: psycopg 3 types integers by their size, and a client-side
# binding cursor puts them in the text; each way has its own query
# identifier, and all have the registration's shape.)
$node->safe_psql('postgres', q{
  SELECT memo.cache_statement('SELECT id, title FROM cl_items WHERE team = $1 ORDER BY id DESC LIMIT 5', 'cl.shape')});
run_client('psycopg, integers of three sizes and literals', $python, "$clients/psycopg_shapes.py", $app, $app,
           $writer);
is(memo_stat($node, 'cl.shape', 'coalesce(sum(calls), 0)'), 40 * 3 * 2,
   'every execution, prepared with smallint, integer or bigint and with literals, is served by the registration');
cmp_ok(hits('cl.shape'), '>', 0, 'from the cache');
cmp_ok($node->safe_psql('postgres', q{
  SELECT count(DISTINCT queryid) FROM pg_stat_statements
   WHERE query LIKE 'SELECT id, title FROM cl_items WHERE team = % ORDER BY id DESC LIMIT %'}), '>=', 3,
   'pg_stat_statements counts them as several statements');
# memo.registered_statements shows the variants of its shape that clients
# sent, and a registration that serves nothing while they send its shape
# says so (here: its statements only ever ran with serving off).
cmp_ok($node->safe_psql('postgres', q{SELECT variants FROM memo.registered_statements WHERE cache_name = 'cl.shape'}),
       '>=', 3, 'memo.registered_statements counts the variants of its shape pg_stat_statements recorded');
is($node->safe_psql('postgres', q{SELECT state FROM memo.registered_statements WHERE cache_name = 'cl.shape'}),
   'serving', 'a registration serving its variants says so');
$node->safe_psql('postgres', q{
  SELECT memo.cache_statement('SELECT count(*) FROM cl_items WHERE team = $1 AND id > 0', 'cl.unserved');
  SET pg_memo.serve_statements = off;
  SELECT count(*) FROM cl_items WHERE team = 3 AND id > 0;
  SELECT count(*) FROM cl_items WHERE team = 4::bigint AND id > 0;});
is($node->safe_psql('postgres', q{SELECT state FROM memo.registered_statements WHERE cache_name = 'cl.unserved'}),
   'serves nothing, while pg_stat_statements has 2 calls of its shape',
   'a registration that serves nothing while clients send its shape says so');

# ---- 3. node-postgres ---------------------------------------------------------
my $have_node = -d "$clients/node_modules/pg";
SKIP: {
    skip 'node-postgres is not installed (scripts/install-deps.sh installs it)', 2 unless $have_node;
    my $url = url('cl_app', $node->host, $node->port);
    $before = hits('cl.page');
    run_client('node-postgres, direct', 'node', "$clients/node_client.js", $url, $url,
               url($node->safe_psql('postgres', 'SELECT current_user'), $node->host, $node->port));
    cmp_ok(hits('cl.page'), '>', $before, 'node-postgres statements are served from the cache');
}

# ---- 4. through PgBouncer, transaction pooling -------------------------------
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my ($pooled, $bouncer_dir, $bouncer_port) = start_pgbouncer($node, 'cl_app', $superuser);
$before = hits('cl.python');
run_client('psycopg and SQLAlchemy, through PgBouncer', $python, "$clients/psycopg_client.py", $pooled, $app,
           $writer, 'pooled');
cmp_ok(hits('cl.python'), '>', $before, 'through PgBouncer, psycopg statements are served from the cache');
SKIP: {
    skip 'node-postgres is not installed', 2 unless $have_node;
    $before = hits('cl.page');
    run_client('node-postgres, through PgBouncer', 'node', "$clients/node_client.js",
               url('cl_app', '127.0.0.1', $bouncer_port), url('cl_app', $node->host, $node->port),
               url($superuser, $node->host, $node->port));
    cmp_ok(hits('cl.page'), '>', $before, 'through PgBouncer, node-postgres statements are served from the cache');
}
stop_pgbouncer($bouncer_dir);

# ---- 5. finding what to cache: memo.candidates ---------------------------------
my $candidates = $node->safe_psql('postgres', q{
  SELECT count(*) FILTER (WHERE registered AND cacheable) || ' ' ||
         count(*) FILTER (WHERE NOT cacheable AND sqlstate IS NOT NULL)
    FROM memo.candidates(100) WHERE query LIKE '%cl_items%'});
like($candidates, qr/^[1-9]\d* /, 'memo.candidates lists the registered statements as cacheable');
like($node->safe_psql('postgres', q{
  SELECT sqlstate || ' ' || reason FROM memo.candidates(100) WHERE query LIKE '%pg_stat_statements%' LIMIT 1}),
  qr/^(0A000|55000) /, 'memo.candidates says why a statement is not cacheable');
# (1.3) An ORM's catalog lookup and an administrative call are no
# candidates; psycopg's statements sent as integers of three sizes are
# registered, by the registration of their shape.
$node->safe_psql('postgres', q{SELECT typname FROM pg_type WHERE oid = 23}) for 1 .. 3;
$node->safe_psql('postgres', q{SELECT pg_backend_pid()}) for 1 .. 3;
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM memo.candidates(1000) WHERE query LIKE '%pg_type%' OR query LIKE '%pg_backend_pid%'}), '0',
   'memo.candidates leaves out statements over system catalogs and those that read no relation');
$node->safe_psql('postgres', q{TABLE cl_items}) for 1 .. 3;
is($node->safe_psql('postgres', q{SELECT count(*) FROM memo.candidates(1000) WHERE query = 'TABLE cl_items'}), '1',
   'memo.candidates keeps a TABLE statement, which reads its table');
is($node->safe_psql('postgres', q{
  SELECT count(*) || ' ' || count(*) FILTER (WHERE registered) FROM memo.candidates(1000)
   WHERE query LIKE 'SELECT id, title FROM cl_items WHERE team = % ORDER BY id DESC LIMIT %'}) =~ /^(\d+) (\d+)$/
   && $1 >= 3 && $1 == $2 ? 'all' : 'not all', 'all',
   'memo.candidates counts the statements a registration serves by shape as registered');

# ---- 6. the application's role ------------------------------------------------
my $page = 'SELECT id, title FROM cl_items WHERE team = 1 ORDER BY id LIMIT 5';
my ($rc, $out, $err) = $node->psql('postgres', $page, extra_params => ['-U', 'cl_app']);
is($rc, 0, 'the application role reads the registered statement');
$node->safe_psql('postgres', 'REVOKE SELECT ON cl_items FROM cl_app');
($rc, $out, $err) = $node->psql('postgres', $page, extra_params => ['-U', 'cl_app']);
like($err, qr/permission denied for table cl_items/, 'after REVOKE, its next statement is refused, as without pg_memo');

# ---- 7. a hot standby ----------------------------------------------------------
$node->safe_psql('postgres', 'GRANT SELECT ON cl_items TO cl_app');
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('clients_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
sub replayed { $node->wait_for_catchup($standby, 'replay', $node->lsn('insert')) }
my $count = 'SELECT count(*) FROM cl_items WHERE team = 3';
my $bg = $standby->background_psql('postgres');
$bg->query_safe("PREPARE standby_count AS $count");
$bg->query_safe('EXECUTE standby_count');
$node->safe_psql('postgres', "SELECT memo.cache_statement('$count', 'cl.standby')");
$node->safe_psql('postgres', 'SELECT memo.count($$cl.warm$$, $$SELECT 1 FROM cl_items$$, $${}$$)');  # a STATE record
replayed();
like($bg->query_safe('EXPLAIN (COSTS OFF) EXECUTE standby_count'), qr/Custom Scan \(pg_memo\)/,
     'the registration reaches a statement prepared on the standby before it');
my $truth = $node->safe_psql('postgres', $count);
is($bg->query_safe('EXECUTE standby_count'), $truth, 'the standby serves the registered statement');
is($bg->query_safe('EXECUTE standby_count'), $truth, 'and again');
cmp_ok(memo_stat($standby, 'cl.standby', 'coalesce(sum(hits), 0)') || 0, '>', 0, 'from its cache');
$node->safe_psql('postgres', q{INSERT INTO cl_items (team, title) VALUES (3, 'replayed')});
replayed();
is($bg->query_safe('EXECUTE standby_count'), $truth + 1, 'a write on the primary shows at the first read after replay');
$node->safe_psql('postgres', "SELECT memo.uncache_statement('$count')");
replayed();
unlike($bg->query_safe('EXPLAIN (COSTS OFF) EXECUTE standby_count'), qr/pg_memo/,
       'an unregistration on the primary stops serving on the standby');
$bg->quit;

done_testing();
