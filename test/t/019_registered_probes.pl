# The adversarial probes of test/t/008 run through registered statements
# (issue 30): each probe's query registered with memo.cache_statement and
# run at the top level as a client runs it, compared with the same
# statement planned as without pg_memo (pg_memo.serve_statements = off), in
# the writer's transaction, in another session, after its rollback and
# after its commit (test/perl/MemoAdversarial.pm, ADV_REGISTERED). A query
# pg_memo cannot cache runs as without pg_memo, so it agrees; every probe
# that a memo call would serve must have been served before its change.
# The portal probes (portal.*) run here only: cursors and prepared
# statements opened before a change or a commit and read after it must
# return what their snapshot sees (MemoAdversarial.pm, "Portals").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;
use MemoAdversarial;
use MemoProbes;

$ENV{ADV_REGISTERED} = 1;
my ($node, @probes) = adv_top_level_node('registered_probes', 4243);

adv_run_top_level_probes($node, @probes);
# (ADV_ONLY=<regex>, by hand: a subset of the probes)
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM memo.statements WHERE cache_name LIKE 'adv.%'}),
       '>', 100, 'most probes were registered')
  unless length($ENV{ADV_ONLY} // '');
is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight left behind');

adv_drop_roles($node);
$node->stop;
done_testing();
