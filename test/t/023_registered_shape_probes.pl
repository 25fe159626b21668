# The adversarial probes of test/t/008 run through registered statements
# matched by shape (issue 47): as in test/t/019 (every comparison and
# portal of that suite), but each probe with parameters is registered with
# them as $n, and the client sends its literals, so that every call is
# served through the registration's shape rather than its query identifier
# (MemoAdversarial.pm, ADV_SHAPES; a probe whose two forms have different
# shapes is registered as the client sends it).
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
$ENV{ADV_SHAPES} = 1;
my ($node, @probes) = adv_top_level_node('shape_probes', 4243);

adv_run_top_level_probes($node, @probes);
# (ADV_ONLY=<regex>, by hand: a subset of the probes)
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM memo.statements WHERE cache_name LIKE 'adv.%'}),
       '>', 100, 'most probes were registered')
  unless length($ENV{ADV_ONLY} // '');
is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight left behind');
note("probes registered with their parameters as \$n: $MemoAdversarial::registered_by_shape");
cmp_ok($MemoAdversarial::registered_by_shape, '>=', 45,
       'most probes with parameters were registered in their parameter form, served through its shape')
  unless length($ENV{ADV_ONLY} // '');

adv_drop_roles($node);
$node->stop;
done_testing();
