# The adversarial suite on hot standbys: every probe of
# test/t/008_adversarial_probes.pl (test/perl/MemoProbes.pm) with its setup and
# its change run on the primary (pg_memo.standby_records = on), and every
# comparison made on a streaming standby and on a cascading standby of it,
# once they have replayed what the primary wrote (MemoAdversarial.pm,
# adv_run_probe_on_standbys). Then the standby is promoted, the cascade
# follows it, and the probes run again with the promoted server as the
# primary. Every step waits for an observable state (replay positions);
# nothing depends on timing.
#
# The probes whose functions read tables (learns: func.*, and scope.* and
# delta.* whose functions or domain checks read the watched table itself)
# run here too: each reader learns those reads on its own (the standby's
# backends observe their own computations), so it compares as many more
# warm calls, and an entry stored after learning must not outlive a write
# on the primary that only the learned read covers. The portal probes
# (portal.*) are skipped: they run through registered statements
# (test/t/019), and the readers here compare memo calls.
# ADV_ONLY=<regex> (by hand) runs a subset (MemoAdversarial.pm).
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

adv_standby_suite();
done_testing();
