# The adversarial probes of test/t/008 run through automatically admitted
# statements (issue 47): as in test/t/019, but nothing is registered; the
# server admits every shape after one execution (pg_memo.admission = auto,
# a minimum cost of 0 ms), so that each probe's statement, sent as a
# client sends it, is served through automatic admission. Each probe's
# query is compared with the same statement planned as without pg_memo
# (pg_memo.serve_statements = off), in the writer's transaction, in
# another session, after its rollback and after its commit, and the
# portal probes read cursors and prepared statements across commits
# (test/perl/MemoAdversarial.pm, ADV_ADMISSION). A query pg_memo cannot
# serve exactly is refused at its admission's check and runs as without
# pg_memo, so it agrees; every probe that a memo call would serve must
# have been served before its change, but the remembered errors' (a
# statement that raises at every execution is never measured, so never
# admitted).
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
$ENV{ADV_ADMISSION} = 1;
my ($node, @probes) = adv_top_level_node('admission_probes', 4244, "pg_memo.admission = auto\npg_memo.admission_min_cost = 0\npg_memo.admission_calls = 1\n");

my %verdicts = adv_run_top_level_probes($node, @probes);
is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.statements'), '0', 'nothing was registered');
cmp_ok($verdicts{'served from the cache before the change'} // 0, '>', 100,
       'most probes were served through automatic admission')
  unless length($ENV{ADV_ONLY} // '');
is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight left behind');

adv_drop_roles($node);
$node->stop;
done_testing();
