# Real clients, unchanged, served through statement shapes and through
# automatic admission (issue 47): each client's results compared with the
# same statement where pg_memo serves nothing
# (pg_memo.serve_statements = off), across writes the client itself makes
# on the rows it reads, and its served calls counted in memo.stats.
#
# 1. Shapes: each client's statements registered once, in the form a DBA
#    writes ($1, $2... for the values), and served however the client
#    sends them:
#    a. Django's ORM (3.2, psycopg2) with its Paginator: values in the
#       text, a first page without OFFSET and the others with it;
#    b. ActiveRecord (6.1, ruby-pg) with prepared statements on (its
#       default: named statements whose types the server infers) and off
#       (values in the text);
#    c. sysbench's point select (pgsql driver), which prepares it with its
#       id a bigint where the column and the registration's $1 are
#       integers, and puts it in the text with --db-ps-mode=disable:
#       sysbench's own oltp_point_select, then the same statement through
#       sysbench's driver compared with the truth across updates
#       (test/clients/sysbench_point_select.lua), and a few by hand.
# 2. Automatic admission (pg_memo.admission = auto, a shape admitted after
#    two executions, pg_memo.admission_min_cost = 0): nothing registered,
#    the same clients, each one's page and count shapes admitted in
#    memo.admission and served under their auto: cache names. Whether a
#    window of served executions saved time is measured, so a shape may be
#    demoted now and then (a window right after a write recomputes; a hit
#    the scheduler interrupts costs more than the statement): a demoted
#    shape is observed again at once (pg_memo.admission_retry = 0), so that
#    the clients' statements keep being served; what is asserted is that
#    every page and count shape was admitted and served, and exact.
# 3. Django and ActiveRecord (prepared statements off, as behind any
#    transaction pooler) through PgBouncer in transaction pooling mode,
#    under automatic admission from scratch.
#
# Why: shapes are what let one registration, or one admission, serve what
# an ORM or a benchmark actually sends (its values as literals, parameters
# of the types it picks); these are the clients issue 47 names, run as
# their users run them. The clients are Debian's (scripts/install-deps.sh):
# without one, its part is skipped, except under CI (CI=true), where a
# missing client is a failure.
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
my $ruby = '/usr/bin/ruby';
my $sysbench = '/usr/bin/sysbench';
my $requests = 300;  # per client run: a count and a page each, a write every 20
my $under_ci = ($ENV{CI} // '') =~ /^(?:true|1|yes)$/i;

# ---- which clients are here ---------------------------------------------------------
sub missing {
    my ($what, @probe) = @_;
    return "$what: $probe[0] is not installed" unless -x $probe[0];
    my ($out, $err) = run_command(\@probe);
    return $out =~ /^ok$/m ? undef : "$what: $err";
}
my %missing = (
    django => missing('Django with psycopg2 (python3-django, python3-psycopg2)', $python, '-c',
                      'import django, psycopg2; print("ok")'),
    activerecord => missing('ActiveRecord with ruby-pg (ruby-activerecord, ruby-pg)', $ruby, '-e',
                            'require "active_record"; require "pg"; puts "ok"'),
    sysbench => -x $sysbench ? undef : "sysbench: $sysbench is not installed",
    pgbouncer => -x '/usr/sbin/pgbouncer' ? undef : 'PgBouncer: /usr/sbin/pgbouncer is not installed',
);

# Runs BLOCK, which makes TESTS tests, unless a client it NEEDS is missing:
# then skips them (under CI, one failure and the rest skipped).
sub part {
    my ($tests, $needs, $block) = @_;
    my @why = grep { defined } @missing{@$needs};
    SKIP: {
        if (@why) {
            my $why = join('; ', @why);
            fail("$why; under CI (CI=$ENV{CI}) that is a failure, not a skip") if $under_ci;
            skip $why, $under_ci ? $tests - 1 : $tests;
        }
        $block->();
    }
}

# ---- the server and the application's tables -------------------------------------------
# On PostgreSQL 15 only (scripts/test.sh): the Debian roots of
# scripts/test-all-versions.sh carry other major versions of these clients
# (Django 4 and 5, ActiveRecord 7), which this test does not claim to know;
# what pg_memo does for them does not depend on the server's version.
my ($server_major) = (run_command(['pg_config', '--version']))[0] =~ /PostgreSQL (\d+)/;
plan skip_all => "the real clients run against PostgreSQL 15 only (this is $server_major)"
  if ($server_major // 0) != 15;
my $node = memo_node('admission_clients', conf => "pg_memo.admission_min_cost = 0\npg_memo.admission_calls = 2\n");
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE ROLE app LOGIN;
  -- 30 teams of 100 employees; the clients page through teams 0 to 3.
  CREATE TABLE dj_employees (id bigint PRIMARY KEY, team_id bigint NOT NULL, name text NOT NULL,
                             salary integer NOT NULL);
  INSERT INTO dj_employees SELECT g, g % 30, 'employee ' || g, 1000 + g % 97 FROM generate_series(1, 3000) g;
  CREATE TABLE ar_employees (id bigint PRIMARY KEY, team_id integer NOT NULL, name text NOT NULL,
                             salary integer NOT NULL);
  INSERT INTO ar_employees SELECT * FROM dj_employees;
  SELECT memo.watch('dj_employees');
  SELECT memo.watch('ar_employees');
  GRANT SELECT, UPDATE ON dj_employees, ar_employees TO app;
});
my $app = $node->connstr('postgres') . ' user=app';

sub sql { my ($query) = @_; return $node->safe_psql('postgres', $query) }
sub stat_of { my ($cache, $column) = @_; return memo_stat($node, $cache, "coalesce(sum($column), 0)") || 0 }
sub reload_until {
    my ($settings, $check) = @_;
    sql("ALTER SYSTEM SET $_") for @$settings;
    sql('SELECT pg_reload_conf()');
    wait_until($node, $check, 'the reloaded settings');
}

# Runs a client script; checks its "checked=N mismatches=0" line (and
# errors=0 where it prints errors), logs it, and returns its output.
sub run_client {
    my ($what, @cmd) = @_;
    my ($out, $err) = run_command(\@cmd);
    like($out, qr/checked=[1-9]\d* mismatches=0\b/, "$what: every result is the statement's own, as with serving off")
      or diag("stdout: $out\nstderr: $err");
    if ($out =~ /errors=/) {
        like($out, qr/errors=0\b/, "$what: no errors") or diag("stderr: $err");
    }
    note("$what: " . ($out =~ /^(.*checked=.*)$/m ? $1 : 'no result line'));
    return $out;
}

# The SELECTs a client sends for a first and a second page, from its
# "statement<TAB>$n form<TAB>text as sent" lines: ([$n form, text], ...).
sub statements_of {
    my (@cmd) = @_;
    my ($out, $err) = run_command(\@cmd);
    my @statements = map { [(split /\t/)[1, 2]] } grep { /^statement\t/ } split /\n/, $out;
    diag("stdout: $out\nstderr: $err") unless @statements;
    return @statements;
}

sub quoted { my ($text) = @_; return '$memo_q$' . $text . '$memo_q$' }

# How many of the texts as sent have the shape of the registration of
# their $n form.
sub same_shapes {
    my (@statements) = @_;
    return scalar grep {
        sql('SELECT memo.statement_shape(' . quoted($_->[0]) . ') = memo.statement_shape(' . quoted($_->[1]) . ')')
          eq 't' } @statements;
}

# Automatic admission: the hits of every auto: cache now, by cache name;
# and what the shapes over TABLE have hit since BEFORE (such a snapshot:
# memo.admission_reset() forgets shapes, not their caches' counters).
sub auto_hits {
    return { map { split /\|/ } split /\n/, sql(q{
      SELECT cache_name || '|' || hits FROM memo.stats
       WHERE datname = current_database() AND cache_name LIKE 'auto:%'}) };
}
sub auto_hits_since {
    my ($before, $table) = @_;
    my $sum = 0;
    for (split /\n/, sql(qq{
      SELECT s.cache_name || '|' || s.hits FROM memo.stats s
        JOIN memo.admission a ON s.cache_name = 'auto:' || lpad(to_hex(a.shape_id), 16, '0')
       WHERE s.datname = current_database() AND a.query LIKE '%$table%' AND a.query NOT LIKE '%memo.%'})) {
        my ($cache, $hits) = split /\|/;
        $sum += $hits - ($before->{$cache} // 0);
    }
    return $sum;
}
# The page and count shapes over TABLE (those filtering on team_id; not
# the lookup by primary key that a move makes): "N of M admitted and
# served", N those that served calls and are neither refused nor retired.
sub page_shapes_served {
    my ($table) = @_;
    return sql(qq{
      SELECT count(*) FILTER (WHERE served_calls > 0 AND state NOT IN ('refused', 'retired')) || ' of ' || count(*)
             || ' admitted and served'
        FROM memo.admission
       WHERE query LIKE '%$table%' AND query LIKE '%"team_id" = %' AND query NOT LIKE '%memo.%'});
}
sub shapes_report {
    my ($table) = @_;
    note(sql(qq{
      SELECT string_agg(state || ' served=' || served_calls || ' recomputed=' || recomputed || ' demotions='
                        || demotions || ': ' || left(query, 90) || ' (' || reason || ')', E'\n')
        FROM memo.admission WHERE query LIKE '%$table%' AND query NOT LIKE '%memo.%'}));
}

my @django = ($python, "$clients/django_pages.py", $app, $app, 'dj_employees');
sub activerecord { my ($values, $conninfo) = @_;
                   return ($ruby, "$clients/activerecord_pages.rb", $conninfo // $app, $app, 'ar_employees', $values) }
my @sb_conn = ('--db-driver=pgsql', '--pgsql-host=' . $node->host, '--pgsql-port=' . $node->port, '--pgsql-db=postgres',
               '--table-size=1000', '--threads=1', '--time=0', '--rand-seed=25');
sub sysbench_run {
    my ($what, $events, @args) = @_;
    my ($out, $err) = run_command([$sysbench, 'oltp_point_select', @sb_conn, '--pgsql-user=app', "--events=$events",
                                   @args, 'run']);
    like($out, qr/total number of events:\s+$events\b/, "$what runs") or diag("stdout: $out\nstderr: $err");
}
sub sysbench_compare {
    my ($what, @args) = @_;
    return run_client($what, $sysbench, "$clients/sysbench_point_select.lua", @sb_conn, '--pgsql-user=app',
                      '--events=1000', @args, 'run');
}

# ======== 1. Shapes: one registration each, in $n form ====================================

# ---- 1a. Django's Paginator ------------------------------------------------------------
part(8, ['django'], sub {
    my @statements = statements_of(@django, 'statements');
    cmp_ok(scalar(@statements), '>=', 3, 'Django sends a count, a first page and a page with OFFSET')
      or diag(explain \@statements);
    ok(!grep({ $_->[1] =~ /\$\d/ } @statements), 'Django (psycopg2) puts every value in the text');
    sql('SELECT memo.cache_statement(' . quoted($_->[0]) . q{, cache_name => 'dj.shape')}) for @statements;
    cmp_ok(sql(q{SELECT count(*) FROM memo.statements WHERE cache_name = 'dj.shape'}), '>=', 3,
           'Django: its statements are registered in $n form');
    is(same_shapes(@statements), scalar(@statements), 'Django: each statement as sent has its registration\'s shape');
    my ($calls, $hits) = (stat_of('dj.shape', 'calls'), stat_of('dj.shape', 'hits'));
    run_client('Django, registered by shape', @django, $requests);
    is(stat_of('dj.shape', 'calls') - $calls, 2 * $requests,
       'Django: every count and page, sent with literals, is served by a registration of its shape');
    my $served = stat_of('dj.shape', 'hits') - $hits;
    cmp_ok($served, '>', 0, 'Django: from the cache');
    note("Django, registered by shape: hits=$served");
});

# ---- 1b. ActiveRecord, prepared statements on and off ------------------------------------
part(13, ['activerecord'], sub {
    my @prepared = statements_of(activerecord('prepared'), 'statements');
    my @literal = statements_of(activerecord('literal'), 'statements');
    cmp_ok(scalar(@prepared), '>=', 2, 'ActiveRecord sends a count and a page') or diag(explain \@prepared);
    ok(@prepared && !grep({ $_->[1] !~ /\$1/ } @prepared),
       'ActiveRecord with prepared statements binds its values as $n');
    ok(@literal && !grep({ $_->[1] =~ /\$\d/ } @literal),
       'ActiveRecord without prepared statements puts them in the text');
    sql('SELECT memo.cache_statement(' . quoted($_->[0]) . q{, cache_name => 'ar.shape')}) for @prepared;
    cmp_ok(sql(q{SELECT count(*) FROM memo.statements WHERE cache_name = 'ar.shape'}), '>=', 2,
           'ActiveRecord: its prepared statements are registered');
    is(same_shapes(@literal), scalar(@literal),
       'ActiveRecord: each statement with its values in the text has a registration\'s shape');
    for my $values (qw(prepared literal)) {
        my ($calls, $hits) = (stat_of('ar.shape', 'calls'), stat_of('ar.shape', 'hits'));
        run_client("ActiveRecord, $values, registered by shape", activerecord($values), $requests);
        is(stat_of('ar.shape', 'calls') - $calls, 2 * $requests,
           "ActiveRecord, $values: every count and page is served by the registration");
        my $served = stat_of('ar.shape', 'hits') - $hits;
        cmp_ok($served, '>', 0, "ActiveRecord, $values: from the cache");
        note("ActiveRecord, $values, registered by shape: hits=$served");
    }
});

# ---- 1c. sysbench's point select --------------------------------------------------------
# sysbench makes sbtest1 (an id serial primary key) as the superuser; the
# application reads and updates it.
part(13, ['sysbench'], sub {
    my ($out, $err) = run_command([$sysbench, 'oltp_point_select', @sb_conn, "--pgsql-user=$superuser", 'prepare']);
    ok(sql(q{SELECT to_regclass('sbtest1') IS NOT NULL}) eq 't', 'sysbench prepares sbtest1')
      or diag("stdout: $out\nstderr: $err");
    sql(q{SELECT memo.watch('sbtest1'); GRANT SELECT, UPDATE ON sbtest1 TO app;
          SELECT memo.cache_statement('SELECT c FROM sbtest1 WHERE id=$1', cache_name => 'sb.shape')});
    for my $mode (qw(auto disable)) {
        my ($calls, $hits) = (stat_of('sb.shape', 'calls'), stat_of('sb.shape', 'hits'));
        sysbench_run("sysbench oltp_point_select --db-ps-mode=$mode", 1000, "--db-ps-mode=$mode");
        is(stat_of('sb.shape', 'calls') - $calls, 1000,
           "sysbench --db-ps-mode=$mode: every point select is served by the registration of its shape");
        my $served = stat_of('sb.shape', 'hits') - $hits;
        cmp_ok($served, '>', 0, "sysbench --db-ps-mode=$mode: from the cache");
        note("sysbench oltp_point_select --db-ps-mode=$mode, registered by shape: hits=$served");
    }
    for my $mode (qw(auto disable)) {
        my $hits = stat_of('sb.shape', 'hits');
        sysbench_compare("sysbench's point select, --db-ps-mode=$mode, registered by shape", "--db-ps-mode=$mode");
        my $served = stat_of('sb.shape', 'hits') - $hits;
        cmp_ok($served, '>', 0, "sysbench's point select compared, --db-ps-mode=$mode: from the cache");
        note("sysbench's point select compared, --db-ps-mode=$mode: hits=$served");
    }
    # By hand: the statement as a bigint parameter and as a literal, twice
    # (the second a hit), against serving off.
    my $by_hand = join('', map { "EXECUTE sb_point($_); EXECUTE sb_point($_); SELECT c FROM sbtest1 WHERE id=$_;" }
                       1, 2, 500, 1000, 1001);
    my $setup = 'PREPARE sb_point(bigint) AS SELECT c FROM sbtest1 WHERE id=$1;';
    my $hits = stat_of('sb.shape', 'hits');
    my $served_side = $node->safe_psql('postgres', $setup . $by_hand, extra_params => ['-U', 'app']);
    is($served_side, $node->safe_psql('postgres', "SET pg_memo.serve_statements = off; $setup $by_hand"),
       'psql: the point select as a bigint parameter and as a literal, as with serving off');
    cmp_ok(stat_of('sb.shape', 'hits') - $hits, '>', 0, 'psql: from the cache');
});

# ======== 2. Automatic admission: nothing registered ======================================
sql('SELECT count(memo.uncache_statement(query_id)) FROM memo.statements');
is(sql('SELECT count(*) FROM memo.statements'), '0', 'no statement is registered from here on');
reload_until([q{pg_memo.admission = 'auto'}, 'pg_memo.admission_retry = 0', 'pg_memo.admission_max_demotions = 1000'],
             q{SELECT current_setting('pg_memo.admission') = 'auto'
                  AND current_setting('pg_memo.admission_retry') = '0'});
sql('SELECT memo.admission_reset()');

# ---- 2a. Django --------------------------------------------------------------------------
part(4, ['django'], sub {
    my $before = auto_hits();
    run_client('Django, admitted automatically', @django, $requests);
    like(page_shapes_served('"dj_employees"'), qr/^([3-9]) of \1 /,
         'Django: its count, first page and page with OFFSET are admitted and served');
    shapes_report('"dj_employees"');
    my $served = auto_hits_since($before, '"dj_employees"');
    cmp_ok($served, '>', 0, 'Django: served from the cache under their auto: cache names');
    note("Django, admitted automatically: hits=$served");
});

# ---- 2b. ActiveRecord --------------------------------------------------------------------
part(7, ['activerecord'], sub {
    for my $values (qw(prepared literal)) {
        my $before = auto_hits();
        run_client("ActiveRecord, $values, admitted automatically", activerecord($values), $requests);
        my $served = auto_hits_since($before, '"ar_employees"');
        cmp_ok($served, '>', 0, "ActiveRecord, $values: served from the cache under their auto: cache names");
        note("ActiveRecord, $values, admitted automatically: hits=$served");
    }
    like(page_shapes_served('"ar_employees"'), qr/^([2-9]) of \1 /,
         'ActiveRecord: its count and page are admitted and served, one shape each whether prepared or not');
    shapes_report('"ar_employees"');
});

# ---- 2c. sysbench's point select -----------------------------------------------------------
# A point select by primary key costs about what a hit costs: its shape is
# demoted more often than not across the comparison's updates, and
# admitted again (pg_memo.admission_retry = 0).
part(8, ['sysbench'], sub {
    # Three events: the first marks sbtest1 as read by a statement of at
    # least pg_memo.admission_min_cost, the next two are observed.
    sysbench_run('sysbench oltp_point_select, three events', 3);
    is(sql(q{SELECT state || ' ' || calls FROM memo.admission WHERE query LIKE 'SELECT c FROM sbtest1 WHERE id=%'}),
       'admitted 2', 'sysbench: its point select is admitted after two observed executions');
    my $before = auto_hits();
    sysbench_run('sysbench oltp_point_select, admitted', 2000);
    my $served = auto_hits_since($before, 'sbtest1');
    cmp_ok($served, '>', 0, 'sysbench: served from the cache under its auto: cache name');
    note("sysbench oltp_point_select, admitted automatically: hits=$served");
    shapes_report('sbtest1');
    for my $mode (qw(auto disable)) {
        $before = auto_hits();
        sysbench_compare("sysbench's point select, --db-ps-mode=$mode, admitted automatically",
                         "--db-ps-mode=$mode");
        $served = auto_hits_since($before, 'sbtest1');
        cmp_ok($served, '>', 0, "sysbench's point select compared, --db-ps-mode=$mode: from the cache");
        note("sysbench's point select compared, --db-ps-mode=$mode, admitted automatically: hits=$served");
    }
    shapes_report('sbtest1');
});

# ======== 3. Through PgBouncer, transaction pooling, admitted automatically ==================
part(9, ['pgbouncer'], sub {
    my ($pooled, $dir) = start_pgbouncer($node, 'app', $superuser);
    sql('SELECT memo.admission_reset()');

    part(4, ['django'], sub {
        my $before = auto_hits();
        run_client('Django through PgBouncer, admitted automatically', $python, "$clients/django_pages.py", $pooled,
                   $app, 'dj_employees', $requests);
        like(page_shapes_served('"dj_employees"'), qr/^([3-9]) of \1 /,
             'Django through PgBouncer: its count and pages are admitted and served');
        shapes_report('"dj_employees"');
        my $served = auto_hits_since($before, '"dj_employees"');
        cmp_ok($served, '>', 0, 'Django through PgBouncer: served from the cache');
        note("Django through PgBouncer, admitted automatically: hits=$served");
    });
    part(4, ['activerecord'], sub {
        my $before = auto_hits();
        run_client('ActiveRecord through PgBouncer, literal, admitted automatically', activerecord('literal', $pooled),
                   $requests);
        like(page_shapes_served('"ar_employees"'), qr/^([2-9]) of \1 /,
             'ActiveRecord through PgBouncer: its count and page are admitted and served');
        shapes_report('"ar_employees"');
        my $served = auto_hits_since($before, '"ar_employees"');
        cmp_ok($served, '>', 0, 'ActiveRecord through PgBouncer: served from the cache');
        note("ActiveRecord through PgBouncer, admitted automatically: hits=$served");
    });

    stop_pgbouncer($dir);
});

is(sql('SELECT count(*) FROM memo.statements'), '0', 'nothing was registered by admission');
is(sql(q{SELECT count(*) FROM memo.admission WHERE query LIKE '%memo.%'}), '0',
   'the statements over pg_memo\'s own views that this test ran were not observed');
$node->stop;
done_testing();
