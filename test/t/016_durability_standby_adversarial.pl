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

my $primary = memo_node('primary', init => [allows_streaming => 1],
    conf => "pg_memo.standby_records = on\nmax_prepared_transactions = 4\n");
adv_install($primary);
adversarial_setup($primary);
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
# Queries on the standbys delay replay rather than being cancelled by it.
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = -1\nhot_standby_feedback = on\n");
$standby->start;
$standby->backup('c');
my $cascade = PostgreSQL::Test::Cluster->new('cascade');
$cascade->init_from_backup($standby, 'c', has_streaming => 1);
$cascade->append_conf('postgresql.conf', "max_standby_streaming_delay = -1\nhot_standby_feedback = on\n");
$cascade->start;

# Waits until the readers have replayed everything the writer wrote: a
# commit that wrote a row is flushed at once, and with it what an open
# transaction wrote before (its lock records, say). (A transaction that
# only took an id commits asynchronously: the WAL writer would flush it up
# to 200 ms later.) Polled through sessions kept open: hundreds of waits
# per run.
sub replay_waiter {
    my ($writer, @readers) = @_;
    $writer->safe_psql('postgres', 'CREATE TABLE IF NOT EXISTS adv_flush (n int)');
    my @sessions = map { $_->background_psql('postgres') } $writer, @readers;
    $_->set_query_timer_restart() for @sessions;  # the timeout is per query, not per session
    my ($w, @r) = @sessions;
    return sub {
        $w->query_safe('INSERT INTO adv_flush VALUES (1)');
        my $lsn = $w->query_safe('SELECT pg_current_wal_insert_lsn()');
        for my $s (@r) {
            for (my $i = 0;; $i++) {
                last if $s->query_safe("SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn") eq 't';
                die "a standby did not replay $lsn\n" if $i > 60000;
                select(undef, undef, undef, 0.002);
            }
        }
    };
}
my $sync = replay_waiter($primary, $standby, $cascade);
$sync->();
# Serving starts at the primary's first record: a miss writes one.
$primary->safe_psql('postgres', q{SELECT memo.count('adv.start', 'SELECT * FROM adv_tl')});
$sync->();

my @probes = adversarial_probes($primary);
my ($failed, $run, $skipped) = (0, 0, 0);
for my $p (@probes) {
    my @checks = adv_run_probe_on_standbys($primary, [$standby, $cascade], $sync, $p);
    $skipped++ if grep { $_->{verdict} eq 'skipped' } @checks;
    $run++;
    $failed++ if adv_report($p, @checks);
}
note("standbys: probes with a failure: $failed of $run ($skipped not applicable on a standby)");
my $standby_hits = q{SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE datname = 'postgres' AND cache_name LIKE 'adv.%'};
# (ADV_ONLY=<regex>, by hand: a subset of the probes, too few for these)
my $subset = length($ENV{ADV_ONLY} // '');
cmp_ok($standby->safe_psql('postgres', $standby_hits), '>', 100, 'the standby served hits (the probes were not all computed)')
  unless $subset;
cmp_ok($cascade->safe_psql('postgres', $standby_hits), '>', 100, 'so did the cascading standby') unless $subset;
is($standby->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight left behind on the standby');

# Promotion: the standby becomes the primary, the cascade follows its new
# timeline, and the probes run again (in a database of their own; the
# probes' roles from before are dropped first).
$primary->stop;
$standby->promote;
adv_drop_roles($standby);
$standby->safe_psql('postgres', 'CREATE DATABASE adv_promoted');
adv_install($standby, 'adv_promoted');
my $promoted_sync = replay_waiter($standby, $cascade);
adversarial_setup($standby, 'adv_promoted');
$promoted_sync->();
$standby->safe_psql('adv_promoted', q{SELECT memo.count('adv.start', 'SELECT * FROM adv_tl')});
$promoted_sync->();
($failed, $run, $skipped) = (0, 0, 0);
for my $p (@probes) {
    my @checks = adv_run_probe_on_standbys($standby, [$cascade], $promoted_sync, $p, db => 'adv_promoted');
    $skipped++ if grep { $_->{verdict} eq 'skipped' } @checks;
    $run++;
    $failed++ if adv_report({ %$p, name => "promoted: $p->{name}" }, @checks);
}
note("after promotion: probes with a failure: $failed of $run ($skipped not applicable on a standby)");
cmp_ok($cascade->safe_psql('adv_promoted',
        q{SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE datname = 'adv_promoted' AND cache_name LIKE 'adv.%'}),
       '>', 100, 'the cascade, following the promoted server, served hits')
  unless $subset;

$cascade->stop;
$standby->stop;
done_testing();
