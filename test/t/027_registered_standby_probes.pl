# The adversarial suite on hot standbys (test/t/016) through registered
# statements: each probe's statement registered on the primary (replayed
# by the standbys), then sent as a plain statement on each standby and
# compared there with the same statement run with serving off, warm,
# during the primary's change, after its ROLLBACK and after its COMMIT,
# and again after the standby is promoted (MemoProbes.pm,
# adv_standby_suite). The portal probes run on a primary only (019).
# ADV_ONLY=<regex> (by hand) runs a subset (MemoAdversarial.pm).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Test::More;
use MemoProbes;

$ENV{ADV_REGISTERED} = 1;
adv_standby_suite();
done_testing();
