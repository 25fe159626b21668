# The adversarial suite on hot standbys (test/t/016) through automatically
# admitted statements: nothing registered, pg_memo.admission = auto on
# every server (each admits what its own clients run, after one
# execution), every probe's statement compared on each standby with the
# same statement run with serving off, warm, during the primary's change,
# after its ROLLBACK and after its COMMIT, and again after promotion
# (MemoProbes.pm, adv_standby_suite).
# ADV_ONLY=<regex> (by hand) runs a subset (MemoAdversarial.pm).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Test::More;
use MemoProbes;

$ENV{ADV_REGISTERED} = 1;
$ENV{ADV_ADMISSION} = 1;
adv_standby_suite("pg_memo.admission = auto\npg_memo.admission_min_cost = 0\npg_memo.admission_calls = 1\n");
done_testing();
