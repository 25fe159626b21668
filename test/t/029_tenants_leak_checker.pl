# Tenants behind row level security (issue 48), checked as an attacker
# would: readers log in as an authenticator role and take on each request's
# role and claims with SET LOCAL, through PgBouncer in transaction mode (so
# that one server connection serves tenant after tenant) and directly,
# over eight policy shapes (a setting, JSON claims through a SQL helper, a
# membership subquery, a SECURITY DEFINER helper, restrictive and
# permissive, forced for the owner, a security_invoker view, a role's
# membership), while a writer changes rows, memberships, a policy and a
# role's memberships. Each read goes through memo.list, memo.count or a
# registered statement and is compared with the same read where pg_memo
# serves nothing (test/clients/tenant_checker.py). The long run (1,000,000
# reads) is bench/tenant_leaks.sh.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $reads = 20000;
my $checker = "$FindBin::RealBin/../clients/tenant_checker.py";
my $python = '/usr/bin/python3';
my $node = memo_node('tenants', conf => "max_connections = 40\n");
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
my $admin = $node->connstr('postgres') . " user=$superuser";

my ($out, $err) = run_command([$python, $checker, 'setup', $admin]);
is($err, '', 'the tenants, their tables and policies are set up') or diag($out);

my ($pooled, $bouncer_dir) = start_pgbouncer($node, 'tk_authenticator');
my $direct = $node->connstr('postgres') . ' user=tk_authenticator';
($out, $err) = run_command([$python, $checker, 'run', $pooled, $direct, $admin, $reads, 240, 1]);
note($out);
my %r = $out =~ /(\w+)=(\d+)/g;
cmp_ok($r{reads} // 0, '>=', $reads, "$reads reads, interleaving tenants on shared connections") or diag($err);
is($r{leaks}, 0, 'no read returned a row of another tenant');
is($r{mismatches}, 0, 'no read differed from the same read uncached (stale or leaked)') or diag($out);
is($r{errors}, 0, 'no read failed') or diag($out);
cmp_ok($r{exact} // 0, '>=', $reads / 2, 'most reads had no change committed between them and the truth');
cmp_ok($r{served} // 0, '>', 0, 'reads were served from the cache');
stop_pgbouncer($bouncer_dir);

# Each way of serving served some of them.
for my $form (qw(list count registered)) {
    cmp_ok($node->safe_psql('postgres',
             "SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE cache_name LIKE 'tk.$form.%'"), '>', 0,
           "$form reads were served from the cache");
}
# A warm restart brings each tenant's entries back under its own key: after
# a clean restart each tenant is served its own count, from the cache.
sub tenant_count {
    my ($org) = @_;
    return $node->safe_psql('postgres', qq{
      BEGIN; SET LOCAL ROLE tk_web; SET LOCAL app.org_id = '$org';
      SELECT memo.count('tk.restart', 'SELECT id FROM tk_setting') || ' ' || (SELECT count(*) FROM tk_setting);
      COMMIT;});
}
my %before = map { $_ => tenant_count($_) } 1 .. 3;
$node->restart;
# The server's first miss of a statement reading settings computes it
# (docs/consistency.md, "Settings in the key"); every backend after it
# learns a statement's settings before computing.
$node->safe_psql('postgres', q{BEGIN; SET LOCAL ROLE tk_web; SET LOCAL app.org_id = '1';
  SELECT memo.count('tk.restart.first', 'SELECT id FROM tk_view_v'); COMMIT;});
my $hits = sub { $node->safe_psql('postgres', q{SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE cache_name = 'tk.restart'}) };
for my $org (1 .. 3) {
    my $was = $hits->();
    my ($memo, $truth) = split ' ', tenant_count($org);
    is($memo, $truth, "after a warm restart, tenant $org is served its own count");
    cmp_ok($hits->(), '>', $was, "and from the restored entry");
}

done_testing();
