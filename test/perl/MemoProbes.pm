# The adversarial probes of test/t/008_adversarial_probes.pl, shared with its
# standby mode (test/t/016_durability_standby_adversarial.pl) and its
# registered statements (test/t/019_registered_probes.pl, where the
# portal probes run, and test/t/023_registered_shape_probes.pl, matched
# by shape): each a minimal reproduction of a way pg_memo could
# serve a result the direct query could not return. The probe's fields and
# the choreography that runs it are in MemoAdversarial.pm; ADV_ONLY=<regex>
# selects probes by name.
package MemoProbes;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;
use MemoTest;
use MemoAdversarial;

our @EXPORT = qw(adversarial_probes adversarial_setup adv_top_level_node adv_standby_suite tab dtab);

# The node the probes run on at the top level (test/t/019, 023, 024): a
# cluster named NAME with CONF appended, pg_memo and the probes' objects
# installed, and the harness shown able to fail there too (the canary's
# stale count, MemoAdversarial.pm, adv_check_canary, its large object
# CANARY). Returns the node and the probes.
sub adv_top_level_node {
    my ($name, $canary, $conf) = @_;
    my $node = memo_node($name, conf => "max_prepared_transactions = 4\n" . ($conf // ''));
    adv_install($node);
    my @probes = adversarial_probes($node);
    adversarial_setup($node);
    adv_check_canary($node, $canary);
    return ($node, @probes);
}

# The adversarial suite on hot standbys (test/t/016, and through registered
# or automatically admitted statements, 027 and 028: ADV_REGISTERED,
# ADV_ADMISSION): the probes' setup and change on a primary, every compare
# on a streaming standby and on a cascading one (adv_run_probe_on_standbys),
# then again after the standby is promoted. CONF is appended to the
# primary's configuration (the standbys inherit it).
sub adv_standby_suite {
    my ($conf) = @_;
    my $primary = memo_node('primary', init => [allows_streaming => 1],
        conf => "pg_memo.standby_records = on\nmax_prepared_transactions = 4\n" . ($conf // ''));
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
    # The probes' cache names: their registrations', or automatic admission's.
    my $names = $ENV{ADV_ADMISSION} ? 'auto:%' : 'adv.%';
    my $standby_hits = "SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE datname = 'postgres' AND cache_name LIKE '$names'";
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
            "SELECT coalesce(sum(hits), 0) FROM memo.stats WHERE datname = 'adv_promoted' AND cache_name LIKE '$names'"),
           '>', 100, 'the cascade, following the promoted server, served hits')
      unless $subset;

    $cascade->stop;
    $standby->stop;
}

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

# The objects the probes share, created once on $node before them.
sub adversarial_setup {
    my ($node, $db) = @_;
    $node->safe_psql($db // 'postgres', q{
      CREATE TABLE adv_tl (ts timestamp, d date);
      INSERT INTO adv_tl VALUES (now()::timestamp - interval '2 days', current_date - 2),
                                (now()::timestamp + interval '2 days', current_date + 2),
                                ('2019-06-01', '2019-06-01');
      SELECT memo.watch('adv_tl');
      CREATE DOMAIN adv_tsdom AS timestamp;
      CREATE TYPE adv_tsrow AS (t timestamp);
    });
}

sub tab {
    my ($name, $n, %o) = @_;
    my $sql = "CREATE TABLE $name (x int); INSERT INTO $name SELECT generate_series(1, $n);";
    $sql .= " SELECT memo.watch('$name');" unless $o{unwatched};
    return $sql;
}

# A table watched with deltas: (x, g), x 1..n, g = x % 3, a primary key on x.
sub dtab {
    my ($name, $n) = @_;
    return "CREATE TABLE $name (x int PRIMARY KEY, g int, note text); "
      . "INSERT INTO $name SELECT i, i % 3, 'n' || i FROM generate_series(1, $n) i; "
      . "SELECT memo.watch('$name', deltas => true);";
}

# A table watched with deltas and scope columns g and tags (1.2,
# docs/consistency.md "Scopes"): an entry pinning them depends on its
# values' counters only.
sub stab {
    my ($name, $n) = @_;
    return "CREATE TABLE $name (x int PRIMARY KEY, g int, tags int[], note text); "
      . "INSERT INTO $name SELECT i, i % 3, ARRAY[i % 4, 4 + i % 3], 'n' || i FROM generate_series(1, $n) i; "
      . "SELECT memo.watch('$name', true, '{g, tags}');";
}

# The portal probes' table: (id, g, s), id 1..6, g = id % 2, s 'old', watched.
sub portal_table {
    my ($name) = @_;
    return "CREATE TABLE $name (id int PRIMARY KEY, g int, s text); "
      . "INSERT INTO $name SELECT i, i % 2, 'old' FROM generate_series(1, 6) i; "
      . "SELECT memo.watch('$name');";
}

# The opclass probes: a composite type whose new default btree operator
# class orders (and compares) by x, reversed.
sub reversed_pair {
    my ($t) = @_;
    return qq{
      CREATE TYPE $t AS (x int, y int);
      CREATE FUNCTION ${t}_cmp($t, $t) RETURNS int IMMUTABLE LANGUAGE sql
        AS 'SELECT CASE WHEN (\$1).x > (\$2).x THEN -1 WHEN (\$1).x < (\$2).x THEN 1 ELSE 0 END';
      CREATE FUNCTION ${t}_lt($t, $t) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT (\$1).x > (\$2).x';
      CREATE FUNCTION ${t}_le($t, $t) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT (\$1).x >= (\$2).x';
      CREATE FUNCTION ${t}_eq($t, $t) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT (\$1).x = (\$2).x';
      CREATE FUNCTION ${t}_ge($t, $t) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT (\$1).x <= (\$2).x';
      CREATE FUNCTION ${t}_gt($t, $t) RETURNS bool IMMUTABLE LANGUAGE sql AS 'SELECT (\$1).x < (\$2).x';
      CREATE OPERATOR #< (LEFTARG = $t, RIGHTARG = $t, FUNCTION = ${t}_lt);
      CREATE OPERATOR #<= (LEFTARG = $t, RIGHTARG = $t, FUNCTION = ${t}_le);
      CREATE OPERATOR #= (LEFTARG = $t, RIGHTARG = $t, FUNCTION = ${t}_eq);
      CREATE OPERATOR #>= (LEFTARG = $t, RIGHTARG = $t, FUNCTION = ${t}_ge);
      CREATE OPERATOR #> (LEFTARG = $t, RIGHTARG = $t, FUNCTION = ${t}_gt);
    };
}
sub reversed_pair_opclass {
    my ($t) = @_;
    return qq{CREATE OPERATOR CLASS ${t}_ops DEFAULT FOR TYPE $t USING btree AS
      OPERATOR 1 #<, OPERATOR 2 #<=, OPERATOR 3 #=, OPERATOR 4 #>=, OPERATOR 5 #>,
      FUNCTION 1 ${t}_cmp($t, $t);};
}

our $watch_trigger = 'CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
  . 'FOR EACH STATEMENT EXECUTE FUNCTION memo.invalidation_trigger(); '
  . 'ALTER TABLE %s ENABLE ALWAYS TRIGGER pg_memo_invalidate;';

# Every probe, for $node's PostgreSQL version and collations.
# The tenants' roles, helpers and membership tables (idempotent: each
# rls.tenant probe's setup starts with it).
my $rls_tenant_roles = q{
  DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'adv_rt_web') THEN
      CREATE ROLE adv_rt_web; CREATE ROLE adv_rt_admin;
    END IF;
  END $$;
  REVOKE adv_rt_admin FROM adv_rt_web;
  CREATE OR REPLACE FUNCTION adv_rt_uid() RETURNS int LANGUAGE sql STABLE
    AS $f$ SELECT (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::int $f$;
  CREATE OR REPLACE FUNCTION adv_rt_org() RETURNS int LANGUAGE sql IMMUTABLE
    AS $f$ SELECT current_setting('app.org_id')::int $f$;
  CREATE TABLE IF NOT EXISTS adv_rt_members (org int, member int);
  CREATE TABLE IF NOT EXISTS adv_rt_private (org int, member int);
  SELECT memo.watch('adv_rt_members'), memo.watch('adv_rt_private');
  GRANT SELECT ON adv_rt_members TO adv_rt_web;
  CREATE OR REPLACE FUNCTION adv_rt_orgs() RETURNS SETOF int LANGUAGE sql STABLE SECURITY DEFINER
    AS $f$ SELECT org FROM adv_rt_private WHERE member = adv_rt_uid() $f$;
  DELETE FROM adv_rt_members; INSERT INTO adv_rt_members VALUES (1, 1);
  DELETE FROM adv_rt_private; INSERT INTO adv_rt_private VALUES (1, 1);
};

sub adversarial_probes {
    my ($node) = @_;
    my $has_icu = $node->safe_psql('postgres',
        q{SELECT count(*) > 0 FROM pg_collation WHERE collprovider = 'i'}) eq 't';

    # A table of n rows 1..n, watched.
    # From PostgreSQL 18 on, a session keeps the plan of a SQL function's body
    # (the plan cache): a function inlined into it, whose EXECUTE privilege the
    # planner checked once, then runs without a new check in that session, so
    # the direct run of a probe would not see a revoked membership. Not inlined
    # (SET), its EXECUTE privilege is checked on each run, as on 15.
    my $inner_not_inlined = $node->pg_version >= 18 ? 'SET search_path = public' : '';

    my @probes = (
        # ---------------------------------------------------------------- 1. DDL in the writer's transaction
        {   name   => 'ddl.disable_trigger_write',
            setup  => tab('adv_dt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_dt',
            change => 'ALTER TABLE adv_dt DISABLE TRIGGER pg_memo_invalidate; INSERT INTO adv_dt VALUES (6); '
              . 'ALTER TABLE adv_dt ENABLE ALWAYS TRIGGER pg_memo_invalidate;' },
        {   name   => 'ddl.drop_recreate_trigger_write',
            setup  => tab('adv_dct', 5),
            kind   => 'count', query => 'SELECT * FROM adv_dct',
            change => 'DROP TRIGGER pg_memo_invalidate ON adv_dct; INSERT INTO adv_dct VALUES (6); '
              . sprintf($watch_trigger, 'adv_dct', 'adv_dct') },
        {   name   => 'ddl.attach_partition',
            setup  => q{
              CREATE TABLE adv_ap (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_ap1 PARTITION OF adv_ap FOR VALUES FROM (0) TO (100);
              INSERT INTO adv_ap SELECT generate_series(1, 5);
              CREATE TABLE adv_ap2 (k int);
              INSERT INTO adv_ap2 SELECT generate_series(101, 103);
              SELECT memo.watch('adv_ap'); SELECT memo.watch('adv_ap2');},
            kind   => 'count', query => 'SELECT * FROM adv_ap',
            change => 'ALTER TABLE adv_ap ATTACH PARTITION adv_ap2 FOR VALUES FROM (100) TO (200);',
            after  => 'INSERT INTO adv_ap2 VALUES (150);' },
        {   name   => 'ddl.detach_partition',
            setup  => q{
              CREATE TABLE adv_dp (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_dp1 PARTITION OF adv_dp FOR VALUES FROM (0) TO (100);
              CREATE TABLE adv_dp2 PARTITION OF adv_dp FOR VALUES FROM (100) TO (200);
              INSERT INTO adv_dp SELECT generate_series(1, 5) UNION ALL SELECT generate_series(101, 103);
              SELECT memo.watch('adv_dp');},
            kind   => 'count', query => 'SELECT * FROM adv_dp',
            change => 'ALTER TABLE adv_dp DETACH PARTITION adv_dp2;',
            after  => 'INSERT INTO adv_dp VALUES (7);' },
        {   name   => 'ddl.inherit',
            setup  => tab('adv_ip', 3) . q{
              CREATE TABLE adv_ic (x int); INSERT INTO adv_ic VALUES (10), (11), (12);
              SELECT memo.watch('adv_ic');},
            kind   => 'count', query => 'SELECT * FROM adv_ip',
            change => 'ALTER TABLE adv_ic INHERIT adv_ip;',
            after  => 'INSERT INTO adv_ic VALUES (13);' },
        {   name   => 'ddl.no_inherit',
            setup  => q{
              CREATE TABLE adv_np (x int); INSERT INTO adv_np VALUES (1), (2), (3);
              CREATE TABLE adv_nc () INHERITS (adv_np); INSERT INTO adv_nc VALUES (10), (11);
              SELECT memo.watch('adv_np');},
            kind   => 'count', query => 'SELECT * FROM adv_np',
            change => 'ALTER TABLE adv_nc NO INHERIT adv_np;' },
        {   name   => 'ddl.drop_partition_off_path',
            setup  => q{
              CREATE SCHEMA adv_off;
              CREATE TABLE adv_dpo (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_off.dpo1 PARTITION OF adv_dpo FOR VALUES FROM (0) TO (100);
              CREATE TABLE adv_dpo2 PARTITION OF adv_dpo FOR VALUES FROM (100) TO (200);
              INSERT INTO adv_dpo SELECT generate_series(1, 5) UNION ALL SELECT generate_series(101, 102);
              SELECT memo.watch('adv_dpo');},
            kind   => 'count', query => 'SELECT * FROM adv_dpo',
            change => 'DROP TABLE adv_off.dpo1;' },
        {   name   => 'ddl.truncate_off_path_partition_qualified',
            setup  => q{
              CREATE SCHEMA adv_off2;
              CREATE TABLE adv_tpo (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_off2.tpo1 PARTITION OF adv_tpo FOR VALUES FROM (0) TO (100);
              INSERT INTO adv_tpo SELECT generate_series(1, 5);
              SELECT memo.watch('adv_tpo');},
            kind   => 'count', query => 'SELECT * FROM adv_off2.tpo1',
            change => 'ALTER TABLE adv_off2.tpo1 DISABLE TRIGGER pg_memo_invalidate; TRUNCATE adv_off2.tpo1; '
              . 'ALTER TABLE adv_off2.tpo1 ENABLE ALWAYS TRIGGER pg_memo_invalidate;' },

        {   name   => 'ddl.disable_trigger_all_write',
            setup  => tab('adv_dta', 5),
            kind   => 'count', query => 'SELECT * FROM adv_dta',
            change => 'ALTER TABLE adv_dta DISABLE TRIGGER ALL; INSERT INTO adv_dta VALUES (6); '
              . 'ALTER TABLE adv_dta ENABLE ALWAYS TRIGGER pg_memo_invalidate;' },
        {   name   => 'ddl.replica_trigger_write',
            setup  => tab('adv_rtw', 5),
            kind   => 'count', query => 'SELECT * FROM adv_rtw',
            change => 'ALTER TABLE adv_rtw ENABLE REPLICA TRIGGER pg_memo_invalidate; INSERT INTO adv_rtw VALUES (6); '
              . 'ALTER TABLE adv_rtw ENABLE ALWAYS TRIGGER pg_memo_invalidate;' },
        {   name   => 'ddl.detach_partition_concurrently',
            setup  => q{
              CREATE TABLE adv_dpc (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_dpc1 PARTITION OF adv_dpc FOR VALUES FROM (0) TO (100);
              CREATE TABLE adv_dpc2 PARTITION OF adv_dpc FOR VALUES FROM (100) TO (200);
              INSERT INTO adv_dpc SELECT generate_series(1, 5) UNION ALL SELECT generate_series(101, 103);
              SELECT memo.watch('adv_dpc');},
            kind   => 'count', query => 'SELECT * FROM adv_dpc',
            change => 'ALTER TABLE adv_dpc DETACH PARTITION adv_dpc2 CONCURRENTLY;', outside => 1,
            after  => 'INSERT INTO adv_dpc2 VALUES (150);' },
        # No ORDER BY: the rows come in heap order, which CLUSTER changes.
        {   name   => 'ddl.cluster_reorders_unordered_limit',
            setup  => tab('adv_cl', 5) . ' CREATE INDEX adv_cl_desc ON adv_cl (x DESC);',
            kind   => 'list', query => 'SELECT x FROM adv_cl LIMIT 2', cols => 'x int',
            change => 'CLUSTER adv_cl USING adv_cl_desc;' },

        # A table rewritten by a column type change that keeps the type and
        # changes every value: through a registered statement, a plan kept
        # for the text (the reader sessions' simple protocol) must not outlive it.
        {   name   => 'ddl.column_rewritten_by_type_change',
            setup  => tab('adv_rw', 5),
            kind   => 'list', query => 'SELECT x FROM adv_rw ORDER BY x', cols => 'x int',
            change => 'ALTER TABLE adv_rw ALTER COLUMN x TYPE int USING x * 2;' },

        {   name   => 'ddl.attach_two_level_partition',
            setup  => q{
              CREATE TABLE adv_ml (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_ml1 PARTITION OF adv_ml FOR VALUES FROM (0) TO (100);
              INSERT INTO adv_ml SELECT generate_series(1, 3);
              CREATE TABLE adv_ml_mid (k int) PARTITION BY RANGE (k);
              CREATE TABLE adv_ml_leaf PARTITION OF adv_ml_mid FOR VALUES FROM (100) TO (200);
              INSERT INTO adv_ml_mid VALUES (101), (102);
              SELECT memo.watch('adv_ml'); SELECT memo.watch('adv_ml_mid');},
            kind   => 'count', query => 'SELECT * FROM adv_ml',
            change => 'ALTER TABLE adv_ml ATTACH PARTITION adv_ml_mid FOR VALUES FROM (100) TO (200);',
            after  => 'INSERT INTO adv_ml_leaf VALUES (150);' },
        {   name   => 'ddl.trigger_disabled_across_commits',
            setup  => tab('adv_dac', 5),
            kind   => 'count', query => 'SELECT * FROM adv_dac',
            change => 'ALTER TABLE adv_dac DISABLE TRIGGER pg_memo_invalidate;',
            after  => 'INSERT INTO adv_dac VALUES (6); ALTER TABLE adv_dac ENABLE ALWAYS TRIGGER pg_memo_invalidate; '
              . 'INSERT INTO adv_dac VALUES (7);', inert => 1 },

        # ---------------------------------------------------------------- 2. catalog objects
        {   name   => 'cat.cast_replaced',
            setup  => q{
              CREATE TYPE adv_pair AS (x int, y int);
              CREATE FUNCTION adv_pair_x(adv_pair) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT ($1).x';
              CREATE FUNCTION adv_pair_y(adv_pair) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT ($1).y';
              CREATE CAST (adv_pair AS int) WITH FUNCTION adv_pair_x(adv_pair);
              CREATE TABLE adv_pairs (p adv_pair);
              INSERT INTO adv_pairs VALUES (ROW(1, 30)), (ROW(2, 20)), (ROW(3, 10));
              SELECT memo.watch('adv_pairs');},
            kind   => 'list', query => 'SELECT p::int AS v FROM adv_pairs ORDER BY 1', cols => 'v int',
            change => 'DROP CAST (adv_pair AS int); CREATE CAST (adv_pair AS int) WITH FUNCTION adv_pair_y(adv_pair);' },
        {   name   => 'cat.opclass_order_by',
            setup  => reversed_pair('adv_pr') . q{
              CREATE TABLE adv_prs (p adv_pr);
              INSERT INTO adv_prs VALUES (ROW(1, 1)), (ROW(2, 2)), (ROW(3, 3));
              SELECT memo.watch('adv_prs');},
            kind   => 'list', query => 'SELECT p FROM adv_prs ORDER BY p', cols => 'p adv_pr',
            change => reversed_pair_opclass('adv_pr') },
        {   name   => 'cat.opclass_distinct',
            setup  => reversed_pair('adv_pq') . q{
              CREATE TABLE adv_pqs (p adv_pq);
              INSERT INTO adv_pqs VALUES (ROW(1, 1)), (ROW(1, 2)), (ROW(2, 3));
              SELECT memo.watch('adv_pqs');},
            kind   => 'count', query => 'SELECT DISTINCT p FROM adv_pqs',
            change => reversed_pair_opclass('adv_pq') },
        {   name   => 'cat.opclass_dropped',
            setup  => reversed_pair('adv_po') . reversed_pair_opclass('adv_po') . q{
              CREATE TABLE adv_pos (p adv_po);
              INSERT INTO adv_pos VALUES (ROW(1, 1)), (ROW(2, 2)), (ROW(3, 3));
              SELECT memo.watch('adv_pos');},
            kind   => 'list', query => 'SELECT p FROM adv_pos ORDER BY p', cols => 'p adv_po',
            change => 'DROP OPERATOR CLASS adv_po_ops USING btree;' },
        {   name   => 'cat.implicit_cast_dropped',
            setup  => q{
              CREATE TYPE adv_ic3 AS (x int, y int);
              CREATE FUNCTION adv_ic3_x(adv_ic3) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT ($1).x';
              CREATE CAST (adv_ic3 AS int) WITH FUNCTION adv_ic3_x(adv_ic3) AS IMPLICIT;
              CREATE FUNCTION adv_h(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
              CREATE TABLE adv_ic3t (p adv_ic3);
              INSERT INTO adv_ic3t VALUES (ROW(1, 0)), (ROW(2, 0)), (ROW(3, 0));
              SELECT memo.watch('adv_ic3t');},
            kind   => 'count', query => 'SELECT * FROM adv_ic3t WHERE adv_h(p) > 15',
            change => 'DROP CAST (adv_ic3 AS int);' },
        {   name   => 'cat.domain_names_swapped',
            setup  => 'CREATE DOMAIN adv_dn1 AS int CHECK (VALUE > 0); CREATE DOMAIN adv_dn2 AS int CHECK (VALUE > 3);'
              . tab('adv_dnt', 5),
            kind   => 'list', query => 'SELECT x::adv_dn1::int AS v FROM adv_dnt ORDER BY x', cols => 'v int',
            change => 'ALTER DOMAIN adv_dn1 RENAME TO adv_dn_tmp; ALTER DOMAIN adv_dn2 RENAME TO adv_dn1; '
              . 'ALTER DOMAIN adv_dn_tmp RENAME TO adv_dn2;' },
        {   name   => 'cat.domain_constraint_not_valid',
            setup  => 'CREATE DOMAIN adv_dpos AS int; ' . tab('adv_dom', 5),
            kind   => 'list', query => 'SELECT x::adv_dpos AS v FROM adv_dom ORDER BY x', cols => 'v adv_dpos',
            change => 'ALTER DOMAIN adv_dpos ADD CONSTRAINT adv_dpos_c CHECK (VALUE > 3) NOT VALID;' },
        {   name   => 'cat.enum_values_swapped',
            setup  => q{
              CREATE TYPE adv_mood AS ENUM ('sad', 'ok', 'happy');
              CREATE TABLE adv_en (m adv_mood);
              INSERT INTO adv_en VALUES ('sad'), ('ok'), ('ok'), ('happy');
              SELECT memo.watch('adv_en');},
            kind   => 'count', query => q{SELECT * FROM adv_en WHERE m = 'ok'},
            change => q{ALTER TYPE adv_mood RENAME VALUE 'ok' TO 'tmp'; ALTER TYPE adv_mood RENAME VALUE 'sad' TO 'ok'; }
              . q{ALTER TYPE adv_mood RENAME VALUE 'tmp' TO 'sad';} },
        {   name   => 'cat.enum_value_param_renamed',
            setup  => q{
              CREATE TYPE adv_mood2 AS ENUM ('sad', 'ok');
              CREATE TABLE adv_en2 (m adv_mood2);
              INSERT INTO adv_en2 VALUES ('sad'), ('ok'), ('ok');
              SELECT memo.watch('adv_en2');},
            kind   => 'count', query => 'SELECT * FROM adv_en2 WHERE m = $1', params => ['ok'],
            change => q{ALTER TYPE adv_mood2 RENAME VALUE 'ok' TO 'fine';} },
        {   name   => 'cat.composite_attributes_swapped',   # a documented known limitation
            setup  => 'CREATE TYPE adv_cp AS (a int, b int); ' . tab('adv_cpt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_cpt WHERE (ROW(x, 10 * x)::adv_cp).a > 3',
            change => 'ALTER TYPE adv_cp RENAME ATTRIBUTE a TO tmp; ALTER TYPE adv_cp RENAME ATTRIBUTE b TO a; '
              . 'ALTER TYPE adv_cp RENAME ATTRIBUTE tmp TO b;' },
        {   name   => 'cat.table_rowtype_columns_swapped',   # a documented known limitation
            setup  => 'CREATE TABLE adv_rowt (a int, b int);' . tab('adv_rtq', 5),
            kind   => 'count', query => 'SELECT * FROM adv_rtq WHERE (ROW(x, 10 * x)::adv_rowt).a > 3',
            change => 'ALTER TABLE adv_rowt RENAME COLUMN a TO tmp; ALTER TABLE adv_rowt RENAME COLUMN b TO a; '
              . 'ALTER TABLE adv_rowt RENAME COLUMN tmp TO b;' },
        # Found by review: a column whose type is a composite type or another
        # table's row type depends on that type's attributes.
        {   name   => 'cat.composite_column_attribute_added',
            setup  => q{CREATE TYPE adv_cc AS (a int, b int); CREATE TABLE adv_cct (c adv_cc);
              INSERT INTO adv_cct VALUES (ROW(1, 2)), (ROW(3, 4)); SELECT memo.watch('adv_cct');},
            kind   => 'count', query => 'SELECT * FROM adv_cct WHERE c IS NOT NULL',
            change => 'ALTER TYPE adv_cc ADD ATTRIBUTE z int;' },
        {   name   => 'cat.table_rowtype_column_added',
            setup  => q{CREATE TABLE adv_rta (x int); CREATE TABLE adv_rtb (r adv_rta);
              INSERT INTO adv_rtb VALUES (ROW(1)), (ROW(2)); SELECT memo.watch('adv_rtb');},
            kind   => 'count', query => 'SELECT * FROM adv_rtb WHERE r IS NOT NULL',
            change => 'ALTER TABLE adv_rta ADD COLUMN y int;' },
        {   name   => 'cat.composite_array_column_attribute_added',
            setup  => q{CREATE TYPE adv_ca AS (a int, b int); CREATE TABLE adv_cat (c adv_ca[]);
              INSERT INTO adv_cat VALUES (ARRAY[ROW(1, 2)::adv_ca]); SELECT memo.watch('adv_cat');},
            kind   => 'count', query => 'SELECT * FROM adv_cat WHERE c[1] IS NOT NULL',
            change => 'ALTER TYPE adv_ca ADD ATTRIBUTE z int;' },
        {   name   => 'fn.volatile_default_argument',   # found by review
            setup  => q{CREATE FUNCTION adv_stamp(a int, t float8 DEFAULT random()) RETURNS float8 IMMUTABLE
              LANGUAGE sql AS 'SELECT t';} . tab('adv_vd', 3),
            kind   => 'count', query => 'SELECT * FROM adv_vd WHERE adv_stamp(x) >= 0', refuse => '0A000' },
        {   name   => 'cat.text_search_dictionary_stopwords',
            setup  => q{
              CREATE TEXT SEARCH DICTIONARY adv_sd (TEMPLATE = simple);
              CREATE TEXT SEARCH CONFIGURATION adv_ts2 (PARSER = default);
              ALTER TEXT SEARCH CONFIGURATION adv_ts2 ADD MAPPING FOR asciiword WITH adv_sd;
              CREATE TABLE adv_ts2t (body text);
              INSERT INTO adv_ts2t VALUES ('the cat'), ('a dog'), ('the end');
              SELECT memo.watch('adv_ts2t');},
            kind   => 'count', query => q{SELECT * FROM adv_ts2t WHERE to_tsvector('adv_ts2', body) @@ 'the'::tsquery},
            change => 'ALTER TEXT SEARCH DICTIONARY adv_sd (StopWords = english);' },
        {   name   => 'cat.text_search_mapping',
            setup  => q{
              CREATE TEXT SEARCH CONFIGURATION adv_ts (COPY = english);
              CREATE TABLE adv_tst (body text);
              INSERT INTO adv_tst VALUES ('cat'), ('cats'), ('dog');
              SELECT memo.watch('adv_tst');},
            kind   => 'count',
            query  => q{SELECT * FROM adv_tst WHERE to_tsvector('adv_ts', body) @@ to_tsquery('adv_ts', 'cats')},
            change => 'ALTER TEXT SEARCH CONFIGURATION adv_ts ALTER MAPPING FOR asciiword WITH simple;' },
        {   name   => 'cat.operator_replaced',
            setup  => q{
              CREATE FUNCTION adv_op_add(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + $2';
              CREATE FUNCTION adv_op_sub(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 - $2';
              CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = adv_op_add);} . tab('adv_opt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_opt WHERE x ### 1 > 3',
            change => 'DROP OPERATOR ### (int, int); CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = adv_op_sub);' },
        {   name   => 'cat.operator_moved_off_path',
            setup  => q{
              CREATE SCHEMA adv_opoff;
              CREATE FUNCTION adv_op_mul(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * $2';
              CREATE OPERATOR #### (LEFTARG = int, RIGHTARG = int, FUNCTION = adv_op_mul);} . tab('adv_opm', 5),
            kind   => 'count', query => 'SELECT * FROM adv_opm WHERE x #### 2 > 5',
            change => 'ALTER OPERATOR #### (int, int) SET SCHEMA adv_opoff;' },
        (!$has_icu ? () : (
        {   name   => 'cat.collation_takes_name_over',
            path   => 'adv_cfront, public',
            setup  => q{
              CREATE SCHEMA adv_cfront;
              CREATE COLLATION public.adv_coll (provider = icu, locale = 'und-u-kf-upper');
              CREATE TABLE adv_colt (v text); INSERT INTO adv_colt VALUES ('a'), ('A'), ('b'), ('B');
              SELECT memo.watch('adv_colt');},
            kind   => 'list', query => 'SELECT v FROM adv_colt ORDER BY v COLLATE adv_coll', cols => 'v text',
            change => q{CREATE COLLATION adv_cfront.adv_coll (provider = icu, locale = 'und-u-kf-lower');} },
        {   name   => 'cat.column_collation_changed',
            setup  => q{
              CREATE COLLATION adv_coll_lower (provider = icu, locale = 'und-u-kf-lower');
              CREATE TABLE adv_colc (v text COLLATE "C"); INSERT INTO adv_colc VALUES ('a'), ('A'), ('b'), ('B');
              SELECT memo.watch('adv_colc');},
            kind   => 'list', query => 'SELECT v FROM adv_colc ORDER BY v', cols => 'v text',
            change => 'ALTER TABLE adv_colc ALTER COLUMN v TYPE text COLLATE adv_coll_lower;' },
        )),

        # ---------------------------------------------------------------- 3. reg* constants and parameters
        {   name   => 'reg.regrole_literal',
            setup  => q{
              CREATE ROLE adv_rr1;
              CREATE TABLE adv_rr1t (r regrole);
              INSERT INTO adv_rr1t VALUES ('adv_rr1'), ('adv_rr1'), ('pg_monitor');
              SELECT memo.watch('adv_rr1t');},
            kind   => 'count', query => q{SELECT * FROM adv_rr1t WHERE r = 'adv_rr1'::regrole},
            change => 'DROP ROLE adv_rr1; CREATE ROLE adv_rr1;' },
        {   name   => 'reg.regrole_param',
            setup  => q{
              CREATE ROLE adv_rr2;
              CREATE TABLE adv_rr2t (r regrole);
              INSERT INTO adv_rr2t VALUES ('adv_rr2'), ('adv_rr2'), ('pg_monitor');
              SELECT memo.watch('adv_rr2t');},
            kind   => 'count', query => 'SELECT * FROM adv_rr2t WHERE r = $1::regrole', params => ['adv_rr2'],
            change => 'DROP ROLE adv_rr2; CREATE ROLE adv_rr2;' },
        {   name   => 'reg.regrole_renamed',
            setup  => q{
              CREATE ROLE adv_rr3; CREATE ROLE adv_rr3b;
              CREATE TABLE adv_rr3t (r regrole);
              INSERT INTO adv_rr3t VALUES ('adv_rr3'), ('adv_rr3'), ('adv_rr3b');
              SELECT memo.watch('adv_rr3t');},
            kind   => 'count', query => q{SELECT * FROM adv_rr3t WHERE r = 'adv_rr3'::regrole},
            change => 'ALTER ROLE adv_rr3 RENAME TO adv_rr3_old; ALTER ROLE adv_rr3b RENAME TO adv_rr3;' },
        {   name   => 'reg.regclass_off_path',
            setup  => q{
              CREATE SCHEMA adv_rc; CREATE TABLE adv_rc.tgt (x int);
              CREATE TABLE adv_rct (c regclass);
              INSERT INTO adv_rct VALUES ('adv_rc.tgt'), ('adv_rc.tgt'), ('pg_class');
              SELECT memo.watch('adv_rct');},
            kind   => 'count', query => q{SELECT * FROM adv_rct WHERE c = 'adv_rc.tgt'::regclass},
            change => 'DROP TABLE adv_rc.tgt; CREATE TABLE adv_rc.tgt (x int);' },
        {   name   => 'reg.regclass_param_off_path',
            setup  => q{
              CREATE SCHEMA adv_rc2; CREATE TABLE adv_rc2.tgt (x int);
              CREATE TABLE adv_rc2t (c regclass);
              INSERT INTO adv_rc2t VALUES ('adv_rc2.tgt'), ('adv_rc2.tgt'), ('pg_class');
              SELECT memo.watch('adv_rc2t');},
            kind   => 'count', query => 'SELECT * FROM adv_rc2t WHERE c = $1::regclass', params => ['adv_rc2.tgt'],
            change => 'DROP TABLE adv_rc2.tgt; CREATE TABLE adv_rc2.tgt (x int);' },
        {   name   => 'reg.regnamespace',
            setup  => q{
              CREATE SCHEMA adv_rn;
              CREATE TABLE adv_rnt (n regnamespace);
              INSERT INTO adv_rnt VALUES ('adv_rn'), ('adv_rn'), ('pg_catalog');
              SELECT memo.watch('adv_rnt');},
            kind   => 'count', query => q{SELECT * FROM adv_rnt WHERE n = 'adv_rn'::regnamespace},
            change => 'DROP SCHEMA adv_rn; CREATE SCHEMA adv_rn;' },
        {   name   => 'reg.regtype_composite_off_path',
            setup  => q{
              CREATE SCHEMA adv_rt; CREATE TYPE adv_rt.ct AS (a int);
              CREATE TABLE adv_rtt (t regtype);
              INSERT INTO adv_rtt VALUES ('adv_rt.ct'), ('adv_rt.ct'), ('int4');
              SELECT memo.watch('adv_rtt');},
            kind   => 'count', query => q{SELECT * FROM adv_rtt WHERE t = 'adv_rt.ct'::regtype},
            change => 'DROP TYPE adv_rt.ct; CREATE TYPE adv_rt.ct AS (a int);' },
        {   name   => 'reg.regproc_recreated',
            setup  => q{
              CREATE FUNCTION adv_rpf(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
              CREATE TABLE adv_rpt (f regproc);
              INSERT INTO adv_rpt VALUES ('adv_rpf'), ('adv_rpf'), ('int4in');
              SELECT memo.watch('adv_rpt');},
            kind   => 'count', query => q{SELECT * FROM adv_rpt WHERE f = 'adv_rpf'::regproc},
            change => q{DROP FUNCTION adv_rpf(int); CREATE FUNCTION adv_rpf(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';} },

        # ---------------------------------------------------------------- reg* values in the result
        {   name   => 'out.regclass_column_table_renamed',
            setup  => q{
              CREATE SCHEMA adv_ros; CREATE TABLE adv_ros.tgt (x int);
              CREATE TABLE adv_ro (c regclass); INSERT INTO adv_ro VALUES ('adv_ros.tgt'), ('pg_class');
              SELECT memo.watch('adv_ro');},
            kind   => 'list', query => 'SELECT c FROM adv_ro ORDER BY c', cols => 'c regclass',
            change => 'ALTER TABLE adv_ros.tgt RENAME TO tgt_renamed;' },
        {   name   => 'out.regclass_as_text_table_renamed',
            setup  => q{
              CREATE SCHEMA adv_ros2; CREATE TABLE adv_ros2.tgt (x int);
              CREATE TABLE adv_ro2 (c regclass); INSERT INTO adv_ro2 VALUES ('adv_ros2.tgt'), ('pg_class');
              SELECT memo.watch('adv_ro2');},
            kind   => 'count', query => q{SELECT * FROM adv_ro2 WHERE c::text = 'adv_ros2.tgt'},
            uncached => 'regclassout depends on the search path: refused',
            change => 'ALTER TABLE adv_ros2.tgt RENAME TO tgt_renamed;' },
        {   name   => 'out.regrole_column_role_renamed',
            setup  => q{
              CREATE ROLE adv_rro1;
              CREATE TABLE adv_rro (r regrole); INSERT INTO adv_rro VALUES ('adv_rro1');
              SELECT memo.watch('adv_rro');},
            kind   => 'list', query => 'SELECT r FROM adv_rro', cols => 'r regrole',
            change => 'ALTER ROLE adv_rro1 RENAME TO adv_rro1_renamed;' },
        {   name   => 'out.regnamespace_column_schema_renamed',
            setup  => q{
              CREATE SCHEMA adv_rno;
              CREATE TABLE adv_rnot (n regnamespace); INSERT INTO adv_rnot VALUES ('adv_rno');
              SELECT memo.watch('adv_rnot');},
            kind   => 'list', query => 'SELECT n FROM adv_rnot', cols => 'n regnamespace',
            change => 'ALTER SCHEMA adv_rno RENAME TO adv_rno_renamed;' },
        {   name   => 'out.regtype_column_type_renamed',
            setup  => q{
              CREATE SCHEMA adv_rto; CREATE TYPE adv_rto.ct AS (a int);
              CREATE TABLE adv_rtot (t regtype); INSERT INTO adv_rtot VALUES ('adv_rto.ct');
              SELECT memo.watch('adv_rtot');},
            kind   => 'list', query => 'SELECT t FROM adv_rtot', cols => 't regtype',
            change => 'ALTER TYPE adv_rto.ct RENAME TO ct_renamed;' },
        {   name   => 'out.enum_label_renamed',
            setup  => q{
              CREATE TYPE adv_mood3 AS ENUM ('sad', 'ok');
              CREATE TABLE adv_en3 (m adv_mood3); INSERT INTO adv_en3 VALUES ('sad'), ('ok');
              SELECT memo.watch('adv_en3');},
            kind   => 'list', query => 'SELECT m FROM adv_en3 ORDER BY m', cols => 'm adv_mood3',
            change => q{ALTER TYPE adv_mood3 RENAME VALUE 'ok' TO 'fine';} },

        # ---------------------------------------------------------------- 4. schemas renamed
        {   name   => 'schema.swap_tables',
            setup  => q{
              CREATE SCHEMA adv_live; CREATE SCHEMA adv_staging;
              CREATE TABLE adv_live.items (x int); INSERT INTO adv_live.items VALUES (1), (2), (3);
              CREATE TABLE adv_staging.items (x int); INSERT INTO adv_staging.items SELECT generate_series(10, 14);
              SELECT memo.watch('adv_live.items'); SELECT memo.watch('adv_staging.items');},
            kind   => 'list', query => 'SELECT x FROM adv_live.items ORDER BY x', cols => 'x int',
            change => 'ALTER SCHEMA adv_live RENAME TO adv_old; ALTER SCHEMA adv_staging RENAME TO adv_live;' },
        {   name   => 'schema.swap_functions',
            setup  => q{
              CREATE SCHEMA adv_fa; CREATE SCHEMA adv_fb;
              CREATE FUNCTION adv_fa.f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
              CREATE FUNCTION adv_fb.f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT -$1';} . tab('adv_sft', 5),
            kind   => 'count', query => 'SELECT * FROM adv_sft WHERE adv_fa.f(x) > 2',
            change => 'ALTER SCHEMA adv_fa RENAME TO adv_fa_old; ALTER SCHEMA adv_fb RENAME TO adv_fa;' },
        {   name   => 'schema.swap_types',
            setup  => q{
              CREATE SCHEMA adv_ta1; CREATE SCHEMA adv_ta2;
              CREATE DOMAIN adv_ta1.d AS int CHECK (VALUE > 0);
              CREATE DOMAIN adv_ta2.d AS int CHECK (VALUE > 3);} . tab('adv_stt', 5),
            kind   => 'list', query => 'SELECT x::adv_ta1.d::int AS v FROM adv_stt ORDER BY x', cols => 'v int',
            change => 'ALTER SCHEMA adv_ta1 RENAME TO adv_ta1_old; ALTER SCHEMA adv_ta2 RENAME TO adv_ta1;' },

        # ---------------------------------------------------------------- 6. privileges revoked
        {   name   => 'priv.schema_usage_revoked',
            role   => 'adv_p1',
            setup  => q{
              CREATE ROLE adv_p1; CREATE SCHEMA adv_s1;
              CREATE TABLE adv_s1.t (x int); INSERT INTO adv_s1.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_s1.t');
              GRANT USAGE ON SCHEMA adv_s1 TO adv_p1; GRANT SELECT ON adv_s1.t TO adv_p1;},
            kind   => 'count', query => 'SELECT * FROM adv_s1.t',
            change => 'REVOKE USAGE ON SCHEMA adv_s1 FROM adv_p1;' },
        {   name   => 'priv.schema_usage_revoked_session_authorization',
            role   => 'adv_p1s', auth => 'session',
            setup  => q{
              CREATE ROLE adv_p1s; CREATE SCHEMA adv_s1s;
              CREATE TABLE adv_s1s.t (x int); INSERT INTO adv_s1s.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_s1s.t');
              GRANT USAGE ON SCHEMA adv_s1s TO adv_p1s; GRANT SELECT ON adv_s1s.t TO adv_p1s;},
            kind   => 'list', query => 'SELECT x FROM adv_s1s.t ORDER BY x', cols => 'x int',
            change => 'REVOKE USAGE ON SCHEMA adv_s1s FROM adv_p1s;' },
        {   name   => 'priv.function_execute_revoked',
            role   => 'adv_p2',
            setup  => q{
              CREATE ROLE adv_p2;
              CREATE FUNCTION adv_p2f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
              REVOKE EXECUTE ON FUNCTION adv_p2f(int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_p2f(int) TO adv_p2;} . tab('adv_p2t', 5) . q{
              GRANT SELECT ON adv_p2t TO adv_p2;},
            kind   => 'count', query => 'SELECT * FROM adv_p2t WHERE adv_p2f(x) > 4',
            change => 'REVOKE EXECUTE ON FUNCTION adv_p2f(int) FROM adv_p2;' },
        {   name   => 'priv.function_execute_revoked_from_public',
            role   => 'adv_p3',
            setup  => q{
              CREATE ROLE adv_p3;
              CREATE FUNCTION adv_p3f(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS 'BEGIN RETURN $1 * 2; END';}
              . tab('adv_p3t', 5) . q{ GRANT SELECT ON adv_p3t TO adv_p3;},
            kind   => 'list', query => 'SELECT adv_p3f(x) AS y FROM adv_p3t ORDER BY x', cols => 'y int',
            change => 'REVOKE EXECUTE ON FUNCTION adv_p3f(int) FROM PUBLIC;' },
        {   name   => 'priv.group_membership_holding_usage_revoked',
            role   => 'adv_p4',
            setup  => q{
              CREATE ROLE adv_g4; CREATE ROLE adv_p4 IN ROLE adv_g4; CREATE SCHEMA adv_s4;
              CREATE TABLE adv_s4.t (x int); INSERT INTO adv_s4.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_s4.t');
              GRANT USAGE ON SCHEMA adv_s4 TO adv_g4; GRANT SELECT ON adv_s4.t TO adv_p4;},
            kind   => 'count', query => 'SELECT * FROM adv_s4.t',
            change => 'REVOKE adv_g4 FROM adv_p4;' },
        {   name   => 'priv.group_membership_holding_select_revoked',
            role   => 'adv_p5',
            setup  => q{
              CREATE ROLE adv_g5; CREATE ROLE adv_p5 IN ROLE adv_g5;} . tab('adv_p5t', 3) . q{
              GRANT SELECT ON adv_p5t TO adv_g5;},
            kind   => 'count', query => 'SELECT * FROM adv_p5t',
            change => 'REVOKE adv_g5 FROM adv_p5;' },
        {   name   => 'priv.group_membership_holding_execute_revoked',
            role   => 'adv_p5f',
            setup  => q{
              CREATE ROLE adv_g5f; CREATE ROLE adv_p5f IN ROLE adv_g5f;
              CREATE FUNCTION adv_p5ff(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
              REVOKE EXECUTE ON FUNCTION adv_p5ff(int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_p5ff(int) TO adv_g5f;} . tab('adv_p5ft', 3) . q{
              GRANT SELECT ON adv_p5ft TO adv_p5f;},
            kind   => 'count', query => 'SELECT * FROM adv_p5ft WHERE adv_p5ff(x) > 2',
            change => 'REVOKE adv_g5f FROM adv_p5f;' },
        # Found by review: privileges PostgreSQL checks inside a function body,
        # and a reg* parameter's schema, held through a membership.
        {   name   => 'priv.member_execute_in_body_revoked',
            role   => 'adv_pb',
            setup  => q{
              CREATE ROLE adv_gb; CREATE ROLE adv_pb IN ROLE adv_gb;
              CREATE FUNCTION adv_inner(int) RETURNS int IMMUTABLE LANGUAGE sql } . $inner_not_inlined . q{ AS 'SELECT $1 + 1';
              REVOKE EXECUTE ON FUNCTION adv_inner(int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_inner(int) TO adv_gb;
              CREATE FUNCTION adv_outer(int) RETURNS int IMMUTABLE LANGUAGE sql
                SET search_path = public AS 'SELECT adv_inner($1)';  -- SET: not inlined, run as the caller
              } . tab('adv_pbt', 3) . q{ GRANT SELECT ON adv_pbt TO adv_pb;},
            kind   => 'list', cols => 'v int', query => 'SELECT adv_outer(x) FROM adv_pbt ORDER BY 1',
            change => 'REVOKE adv_gb FROM adv_pb;' },
        {   name   => 'priv.member_usage_regclass_param_revoked',
            role   => 'adv_pr',
            setup  => q{
              CREATE ROLE adv_gr; CREATE ROLE adv_pr IN ROLE adv_gr; CREATE SCHEMA adv_sr;
              CREATE TABLE adv_sr.t (x int); GRANT USAGE ON SCHEMA adv_sr TO adv_gr;
              } . tab('adv_prr', 3) . q{ GRANT SELECT ON adv_prr TO adv_pr;},
            kind   => 'count', query => 'SELECT * FROM adv_prr WHERE $1::regclass IS NOT NULL', params => ['adv_sr.t'],
            change => 'REVOKE adv_gr FROM adv_pr;' },
        {   name   => 'priv.column_revoked',
            role   => 'adv_p6',
            setup  => q{
              CREATE ROLE adv_p6;
              CREATE TABLE adv_p6t (a int, b int); INSERT INTO adv_p6t VALUES (1, 10), (2, 20);
              SELECT memo.watch('adv_p6t');
              GRANT SELECT (a) ON adv_p6t TO adv_p6;},
            kind   => 'list', query => 'SELECT a FROM adv_p6t ORDER BY a', cols => 'a int',
            change => 'REVOKE SELECT (a) ON adv_p6t FROM adv_p6;' },
        {   name   => 'priv.drop_owned',
            role   => 'adv_p7',
            setup  => q{
              CREATE ROLE adv_p7;} . tab('adv_p7t', 3) . q{
              GRANT SELECT ON adv_p7t TO adv_p7;},
            kind   => 'count', query => 'SELECT * FROM adv_p7t',
            change => 'DROP OWNED BY adv_p7;' },
        {   name   => 'priv.nosuperuser',
            role   => 'adv_su',
            setup  => q{
              CREATE ROLE adv_su SUPERUSER; CREATE SCHEMA adv_sus;
              CREATE TABLE adv_sus.t (x int); INSERT INTO adv_sus.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_sus.t');},
            kind   => 'count', query => 'SELECT * FROM adv_sus.t',
            change => 'ALTER ROLE adv_su NOSUPERUSER;' },
        {   name   => 'priv.noinherit',
            role   => 'adv_ni',
            setup  => 'CREATE ROLE adv_nig; CREATE ROLE adv_ni IN ROLE adv_nig;' . tab('adv_nit', 3)
              . ' GRANT SELECT ON adv_nit TO adv_nig;',
            kind   => 'count', query => 'SELECT * FROM adv_nit',
            # From 16 on, inheritance is an option of each grant: NOINHERIT on
            # the role changes only the default of later grants.
            change => $node->pg_version >= 16 ? 'GRANT adv_nig TO adv_ni WITH INHERIT FALSE;'
                                              : 'ALTER ROLE adv_ni NOINHERIT;' },
        {   name   => 'priv.pg_read_all_data_revoked',
            role   => 'adv_rad',
            setup  => q{
              CREATE ROLE adv_rad IN ROLE pg_read_all_data; CREATE SCHEMA adv_rads;
              CREATE TABLE adv_rads.t (x int); INSERT INTO adv_rads.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_rads.t');},
            kind   => 'count', query => 'SELECT * FROM adv_rads.t',
            change => 'REVOKE pg_read_all_data FROM adv_rad;' },
        {   name   => 'priv.schema_owner_changed',
            role   => 'adv_sor',
            setup  => q{
              CREATE ROLE adv_sor; CREATE ROLE adv_soo;
              CREATE SCHEMA adv_sos AUTHORIZATION adv_sor;
              CREATE TABLE adv_sos.t (x int); INSERT INTO adv_sos.t VALUES (1), (2), (3);
              SELECT memo.watch('adv_sos.t');
              GRANT SELECT ON adv_sos.t TO adv_sor;},
            kind   => 'count', query => 'SELECT * FROM adv_sos.t',
            change => 'ALTER SCHEMA adv_sos OWNER TO adv_soo;' },
        {   name   => 'priv.table_owner_changed',
            role   => 'adv_tor',
            setup  => 'CREATE ROLE adv_tor; CREATE ROLE adv_too;' . tab('adv_tot', 3) . ' ALTER TABLE adv_tot OWNER TO adv_tor;',
            kind   => 'count', query => 'SELECT * FROM adv_tot',
            change => 'ALTER TABLE adv_tot OWNER TO adv_too;' },
        {   name   => 'priv.operator_function_execute_revoked',
            role   => 'adv_pxo',
            setup  => q{
              CREATE ROLE adv_pxo;
              CREATE FUNCTION adv_pxo_f(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * $2';
              REVOKE EXECUTE ON FUNCTION adv_pxo_f(int, int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_pxo_f(int, int) TO adv_pxo;
              CREATE OPERATOR #%# (LEFTARG = int, RIGHTARG = int, FUNCTION = adv_pxo_f);} . tab('adv_pxot', 5)
              . ' GRANT SELECT ON adv_pxot TO adv_pxo;',
            kind   => 'count', query => 'SELECT * FROM adv_pxot WHERE x #%# 2 > 5',
            change => 'REVOKE EXECUTE ON FUNCTION adv_pxo_f(int, int) FROM adv_pxo;' },
        {   name   => 'priv.cast_function_execute_revoked',
            role   => 'adv_pxc',
            setup  => q{
              CREATE ROLE adv_pxc;
              CREATE TYPE adv_pxc_t AS (x int, y int);
              CREATE FUNCTION adv_pxc_x(adv_pxc_t) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT ($1).x';
              REVOKE EXECUTE ON FUNCTION adv_pxc_x(adv_pxc_t) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_pxc_x(adv_pxc_t) TO adv_pxc;
              CREATE CAST (adv_pxc_t AS int) WITH FUNCTION adv_pxc_x(adv_pxc_t);
              CREATE TABLE adv_pxct (p adv_pxc_t); INSERT INTO adv_pxct VALUES (ROW(1, 0)), (ROW(2, 0)), (ROW(3, 0));
              SELECT memo.watch('adv_pxct'); GRANT SELECT ON adv_pxct TO adv_pxc;},
            kind   => 'count', query => 'SELECT * FROM adv_pxct WHERE p::int > 1',
            change => 'REVOKE EXECUTE ON FUNCTION adv_pxc_x(adv_pxc_t) FROM adv_pxc;' },
        {   name   => 'priv.function_in_view_execute_revoked',
            role   => 'adv_pxv',
            setup  => q{
              CREATE ROLE adv_pxv;
              CREATE FUNCTION adv_pxv_f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
              REVOKE EXECUTE ON FUNCTION adv_pxv_f(int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_pxv_f(int) TO adv_pxv;} . tab('adv_pxvt', 3) . q{
              CREATE VIEW adv_pxvv AS SELECT adv_pxv_f(x) AS y FROM adv_pxvt;
              GRANT SELECT ON adv_pxvv TO adv_pxv;},
            kind   => 'list', query => 'SELECT y FROM adv_pxvv ORDER BY y', cols => 'y int',
            change => 'REVOKE EXECUTE ON FUNCTION adv_pxv_f(int) FROM adv_pxv;' },
        {   name   => 'priv.aggregate_execute_revoked',
            role   => 'adv_pxa',
            setup  => q{
              CREATE ROLE adv_pxa;
              CREATE AGGREGATE adv_pxa_sum(int) (SFUNC = int4pl, STYPE = int, INITCOND = '0');
              REVOKE EXECUTE ON ROUTINE adv_pxa_sum(int) FROM PUBLIC;
              GRANT EXECUTE ON ROUTINE adv_pxa_sum(int) TO adv_pxa;} . tab('adv_pxat', 3) . q{
              GRANT SELECT ON adv_pxat TO adv_pxa;},
            kind   => 'list', query => 'SELECT adv_pxa_sum(x) AS s FROM adv_pxat', cols => 's int',
            change => 'REVOKE EXECUTE ON ROUTINE adv_pxa_sum(int) FROM adv_pxa;' },
        {   name   => 'priv.nested_function_execute_revoked',
            role   => 'adv_pxn',
            setup  => q{
              CREATE ROLE adv_pxn;
              CREATE FUNCTION adv_pxn_inner(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
              REVOKE EXECUTE ON FUNCTION adv_pxn_inner(int) FROM PUBLIC;
              GRANT EXECUTE ON FUNCTION adv_pxn_inner(int) TO adv_pxn;
              CREATE FUNCTION adv_pxn_outer(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
                AS 'BEGIN RETURN adv_pxn_inner($1); END';} . tab('adv_pxnt', 3) . q{
              GRANT SELECT ON adv_pxnt TO adv_pxn;},
            kind   => 'list', query => 'SELECT adv_pxn_outer(x) AS y FROM adv_pxnt ORDER BY x', cols => 'y int',
            change => 'REVOKE EXECUTE ON FUNCTION adv_pxn_inner(int) FROM adv_pxn;' },
        {   name   => 'priv.regclass_literal_schema_usage_revoked',
            role   => 'adv_pxr',
            setup  => q{
              CREATE ROLE adv_pxr; CREATE SCHEMA adv_pxrs; CREATE TABLE adv_pxrs.tgt (x int);
              GRANT USAGE ON SCHEMA adv_pxrs TO adv_pxr;
              CREATE TABLE adv_pxrt (c regclass); INSERT INTO adv_pxrt VALUES ('adv_pxrs.tgt'), ('pg_class');
              SELECT memo.watch('adv_pxrt'); GRANT SELECT ON adv_pxrt TO adv_pxr;},
            kind   => 'count', query => q{SELECT * FROM adv_pxrt WHERE c = 'adv_pxrs.tgt'::regclass},
            change => 'REVOKE USAGE ON SCHEMA adv_pxrs FROM adv_pxr;' },
        {   name   => 'priv.regclass_param_schema_usage_revoked',
            role   => 'adv_pxq',
            setup  => q{
              CREATE ROLE adv_pxq; CREATE SCHEMA adv_pxqs; CREATE TABLE adv_pxqs.tgt (x int);
              GRANT USAGE ON SCHEMA adv_pxqs TO adv_pxq;
              CREATE TABLE adv_pxqt (c regclass); INSERT INTO adv_pxqt VALUES ('adv_pxqs.tgt'), ('pg_class');
              SELECT memo.watch('adv_pxqt'); GRANT SELECT ON adv_pxqt TO adv_pxq;},
            kind   => 'count', query => 'SELECT * FROM adv_pxqt WHERE c = $1::regclass', params => ['adv_pxqs.tgt'],
            change => 'REVOKE USAGE ON SCHEMA adv_pxqs FROM adv_pxq;' },
        {   name   => 'priv.regproc_literal_schema_usage_revoked',
            role   => 'adv_pxp',
            setup  => q{
              CREATE ROLE adv_pxp; CREATE SCHEMA adv_pxps;
              CREATE FUNCTION adv_pxps.f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
              GRANT USAGE ON SCHEMA adv_pxps TO adv_pxp;
              CREATE TABLE adv_pxpt (f regproc); INSERT INTO adv_pxpt VALUES ('adv_pxps.f'), ('int4in');
              SELECT memo.watch('adv_pxpt'); GRANT SELECT ON adv_pxpt TO adv_pxp;},
            kind   => 'count', query => q{SELECT * FROM adv_pxpt WHERE f = 'adv_pxps.f'::regproc},
            change => 'REVOKE USAGE ON SCHEMA adv_pxps FROM adv_pxp;' },
        {   name   => 'priv.reassign_owned_view',
            role   => 'adv_rav',
            setup  => 'CREATE ROLE adv_rav; CREATE ROLE adv_ravo; CREATE ROLE adv_ravn;' . tab('adv_ravt', 3) . q{
              GRANT SELECT ON adv_ravt TO adv_ravo;
              CREATE VIEW adv_ravv AS SELECT * FROM adv_ravt;
              ALTER VIEW adv_ravv OWNER TO adv_ravo;
              GRANT SELECT ON adv_ravv TO adv_rav;},
            kind   => 'count', query => 'SELECT * FROM adv_ravv',
            change => 'REASSIGN OWNED BY adv_ravo TO adv_ravn;' },
        {   name   => 'priv.default_privileges_harmless',
            role   => 'adv_p8d',
            setup  => 'CREATE ROLE adv_p8d;' . tab('adv_p8dt', 3) . ' GRANT SELECT ON adv_p8dt TO adv_p8d;',
            kind   => 'count', query => 'SELECT * FROM adv_p8dt',
            change => 'ALTER DEFAULT PRIVILEGES FOR ROLE adv_p8d GRANT SELECT ON TABLES TO PUBLIC;', inert => 1 },

        # ---------------------------------------------------------------- row level security, views
        {   name   => 'rls.enabled_with_policy',
            role   => 'adv_p8',
            setup  => 'CREATE ROLE adv_p8;' . tab('adv_p8t', 5) . ' GRANT SELECT ON adv_p8t TO adv_p8;',
            kind   => 'count', query => 'SELECT * FROM adv_p8t',
            change => 'ALTER TABLE adv_p8t ENABLE ROW LEVEL SECURITY; '
              . 'CREATE POLICY adv_p8p ON adv_p8t FOR SELECT TO adv_p8 USING (x > 3);' },
        {   name   => 'rls.nobypassrls',
            role   => 'adv_p9',
            setup  => 'CREATE ROLE adv_p9 BYPASSRLS;' . tab('adv_p9t', 5) . q{
              GRANT SELECT ON adv_p9t TO adv_p9;
              ALTER TABLE adv_p9t ENABLE ROW LEVEL SECURITY;
              CREATE POLICY adv_p9p ON adv_p9t FOR SELECT USING (x > 3);},
            kind   => 'count', query => 'SELECT * FROM adv_p9t',
            change => 'ALTER ROLE adv_p9 NOBYPASSRLS;' },
        {   name   => 'rls.force_for_owner',
            role   => 'adv_p10',
            setup  => 'CREATE ROLE adv_p10;' . tab('adv_p10t', 5) . q{
              ALTER TABLE adv_p10t OWNER TO adv_p10;
              ALTER TABLE adv_p10t ENABLE ROW LEVEL SECURITY;
              CREATE POLICY adv_p10p ON adv_p10t FOR SELECT USING (x > 3);},
            kind   => 'count', query => 'SELECT * FROM adv_p10t',
            change => 'ALTER TABLE adv_p10t FORCE ROW LEVEL SECURITY;' },
        {   name   => 'rls.owner_changed',
            role   => 'adv_p11',
            setup  => 'CREATE ROLE adv_p11; CREATE ROLE adv_p11b;' . tab('adv_p11t', 5) . q{
              ALTER TABLE adv_p11t OWNER TO adv_p11;
              ALTER TABLE adv_p11t ENABLE ROW LEVEL SECURITY;
              CREATE POLICY adv_p11p ON adv_p11t FOR SELECT USING (x > 3);},
            kind   => 'count', query => 'SELECT * FROM adv_p11t',
            change => 'ALTER TABLE adv_p11t OWNER TO adv_p11b; GRANT SELECT ON adv_p11t TO adv_p11;' },
        {   name   => 'rls.view_owner_gets_policy',
            role   => 'adv_rlv',
            setup  => 'CREATE ROLE adv_rlv; CREATE ROLE adv_rlvo;' . tab('adv_rlvt', 5) . q{
              GRANT SELECT ON adv_rlvt TO adv_rlvo;
              CREATE VIEW adv_rlvv AS SELECT * FROM adv_rlvt;
              ALTER VIEW adv_rlvv OWNER TO adv_rlvo;
              GRANT SELECT ON adv_rlvv TO adv_rlv;},
            kind   => 'count', query => 'SELECT * FROM adv_rlvv',
            change => 'ALTER TABLE adv_rlvt ENABLE ROW LEVEL SECURITY; '
              . 'CREATE POLICY adv_rlvp ON adv_rlvt FOR SELECT TO adv_rlvo USING (x > 3);' },
        # ------------------------------------------- row level security per tenant (1.3)
        # The role and a setting of each probe's sessions make its tenant
        # (org 1, user 1); each change moves what that tenant may read, or
        # (inert) only another tenant's rows.
        (map {
            my ($n, $policy, $change, %o) = @$_;
            my $t = "adv_rt_$n";
            +{  name    => "rls.tenant.$n",
                role    => 'adv_rt_web',
                session => "SET app.org_id = '1'; SET request.jwt.claims = '{\"sub\": \"1\"}'",
                setup   => "$rls_tenant_roles CREATE TABLE $t (x int PRIMARY KEY, org int, owner int);"
                  . " INSERT INTO $t SELECT i, i % 3, i % 4 FROM generate_series(1, 25) i;"
                  . " SELECT memo.watch('$t', deltas => true, scope_columns => '{org}');"
                  . " GRANT SELECT ON $t TO adv_rt_web, adv_rt_admin; ALTER TABLE $t ENABLE ROW LEVEL SECURITY; "
                  . sprintf($policy, $t),
                kind    => 'count', query => "SELECT * FROM $t",
                change  => sprintf($change, $t), %o }
        } (
            ['setting_own_write', "CREATE POLICY p ON %s TO adv_rt_web USING (org = current_setting('app.org_id')::int);",
             'INSERT INTO %s VALUES (100, 1, 0);', rows_only => 1],
            ['setting_other_write', "CREATE POLICY p ON %s TO adv_rt_web USING (org = current_setting('app.org_id')::int);",
             'INSERT INTO %s VALUES (100, 2, 0);', rows_only => 1, inert => 1],
            ['claims_helper', 'CREATE POLICY p ON %s TO adv_rt_web USING (owner = adv_rt_uid());',
             'UPDATE %s SET owner = 1 WHERE x = 2;', rows_only => 1],
            ['helper_replaced', 'CREATE POLICY p ON %s TO adv_rt_web USING (owner = adv_rt_uid());',
             "CREATE OR REPLACE FUNCTION adv_rt_uid() RETURNS int LANGUAGE sql STABLE AS \$\$ SELECT 2 \$\$;"],
            ['immutable_helper_replaced', 'CREATE POLICY p ON %s TO adv_rt_web USING (org = adv_rt_org());',
             "CREATE OR REPLACE FUNCTION adv_rt_org() RETURNS int LANGUAGE sql IMMUTABLE AS \$\$ SELECT 2 \$\$;"],
            ['membership', 'CREATE POLICY p ON %s TO adv_rt_web USING (EXISTS (SELECT 1 FROM adv_rt_members m '
               . 'WHERE m.org = %1$s.org AND m.member = adv_rt_uid()));',
             'INSERT INTO adv_rt_members VALUES (2, 1);'],
            ['membership_revoked', 'CREATE POLICY p ON %s TO adv_rt_web USING (EXISTS (SELECT 1 FROM adv_rt_members m '
               . 'WHERE m.org = %1$s.org AND m.member = adv_rt_uid()));',
             'DELETE FROM adv_rt_members WHERE member = 1;'],
            ['definer_helper', 'CREATE POLICY p ON %s TO adv_rt_web USING (org IN (SELECT adv_rt_orgs()));',
             'INSERT INTO adv_rt_private VALUES (0, 1);'],
            ['restrictive_added', "CREATE POLICY p ON %s TO adv_rt_web USING (org = current_setting('app.org_id')::int);",
             'CREATE POLICY r ON %s AS RESTRICTIVE TO adv_rt_web USING (x > 10);'],
            ['policy_altered', "CREATE POLICY p ON %s TO adv_rt_web USING (org = current_setting('app.org_id')::int);",
             "ALTER POLICY p ON %s USING (org = current_setting('app.org_id')::int + 1);"],
            ['role_granted', "CREATE POLICY p ON %s TO adv_rt_web USING (org = 1); "
               . "CREATE POLICY a ON %1\$s TO adv_rt_admin USING (true);",
             'GRANT adv_rt_admin TO adv_rt_web;'],
            ['disabled', "CREATE POLICY p ON %s TO adv_rt_web USING (org = current_setting('app.org_id')::int);",
             'ALTER TABLE %s DISABLE ROW LEVEL SECURITY;'],
            ['session_user', "CREATE POLICY p ON %s TO adv_rt_web USING (org = 1 AND session_user = 'adv_rt_web');",
             'INSERT INTO %s VALUES (100, 1, 0);', rows_only => 1, auth => 'session'],
        )),
        {   name   => 'view.security_invoker',
            role   => 'adv_v1',
            setup  => 'CREATE ROLE adv_v1;' . tab('adv_v1t', 3) . q{
              CREATE VIEW adv_v1v AS SELECT * FROM adv_v1t;
              GRANT SELECT ON adv_v1v TO adv_v1;},
            kind   => 'count', query => 'SELECT * FROM adv_v1v',
            change => 'ALTER VIEW adv_v1v SET (security_invoker = true);' },
        {   name   => 'view.replaced',
            setup  => tab('adv_v2t', 5) . ' CREATE VIEW adv_v2v AS SELECT x FROM adv_v2t WHERE x > 1;',
            kind   => 'count', query => 'SELECT * FROM adv_v2v',
            change => 'CREATE OR REPLACE VIEW adv_v2v AS SELECT x FROM adv_v2t WHERE x > 4;' },
        {   name   => 'view.owner_changed',
            role   => 'adv_v3',
            setup  => 'CREATE ROLE adv_v3; CREATE ROLE adv_v3o; CREATE ROLE adv_v3o2;' . tab('adv_v3t', 3) . q{
              GRANT SELECT ON adv_v3t TO adv_v3o;
              CREATE VIEW adv_v3v AS SELECT * FROM adv_v3t;
              ALTER VIEW adv_v3v OWNER TO adv_v3o;
              GRANT SELECT ON adv_v3v TO adv_v3;},
            kind   => 'count', query => 'SELECT * FROM adv_v3v',
            change => 'ALTER VIEW adv_v3v OWNER TO adv_v3o2;' },
        {   name   => 'view.return_rule_replaced',
            setup  => tab('adv_rvt', 5) . ' CREATE VIEW adv_rv AS SELECT x FROM adv_rvt WHERE x > 1;',
            kind   => 'count', query => 'SELECT * FROM adv_rv',
            change => 'CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO adv_rv DO INSTEAD SELECT x FROM adv_rvt WHERE x > 4;' },
        {   name   => 'view.inner_view_replaced',
            setup  => tab('adv_ivt', 5) . q{
              CREATE VIEW adv_iv_inner AS SELECT x FROM adv_ivt WHERE x > 1;
              CREATE VIEW adv_iv_outer AS SELECT x FROM adv_iv_inner;},
            kind   => 'count', query => 'SELECT * FROM adv_iv_outer',
            change => 'CREATE OR REPLACE VIEW adv_iv_inner AS SELECT x FROM adv_ivt WHERE x > 4;' },
        {   name   => 'view.columns_swapped',
            setup  => tab('adv_v4t', 5) . ' CREATE VIEW adv_v4v AS SELECT x AS a, -x AS b FROM adv_v4t;',
            kind   => 'count', query => 'SELECT * FROM adv_v4v WHERE a > 2',
            change => 'ALTER VIEW adv_v4v RENAME COLUMN a TO tmp; ALTER VIEW adv_v4v RENAME COLUMN b TO a; '
              . 'ALTER VIEW adv_v4v RENAME COLUMN tmp TO b;' },
        {   name   => 'view.base_table_privilege_of_owner_revoked',
            role   => 'adv_v5',
            setup  => 'CREATE ROLE adv_v5; CREATE ROLE adv_v5o;' . tab('adv_v5t', 3) . q{
              GRANT SELECT ON adv_v5t TO adv_v5o;
              CREATE VIEW adv_v5v AS SELECT * FROM adv_v5t;
              ALTER VIEW adv_v5v OWNER TO adv_v5o;
              GRANT SELECT ON adv_v5v TO adv_v5;},
            kind   => 'count', query => 'SELECT * FROM adv_v5v',
            change => 'REVOKE SELECT ON adv_v5t FROM adv_v5o;' },

        # ---------------------------------------------------------------- functions
        # (1.3) A STABLE SQL function is read through: one whose body reads
        # only its arguments stays cacheable, one that reads the clock is
        # refused.
        {   name   => 'func.immutable_to_stable',
            setup  => q{CREATE FUNCTION adv_f1(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';} . tab('adv_f1t', 5),
            kind   => 'count', query => 'SELECT * FROM adv_f1t WHERE adv_f1(x) > 2',
            change => 'ALTER FUNCTION adv_f1(int) STABLE;', inert => 1 },
        {   name   => 'func.stable_body_reads_clock',
            setup  => q{CREATE FUNCTION adv_f1c(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';} . tab('adv_f1ct', 5),
            kind   => 'count', query => 'SELECT * FROM adv_f1ct WHERE adv_f1c(x) > 2',
            change => q{CREATE OR REPLACE FUNCTION adv_f1c(int) RETURNS int STABLE LANGUAGE sql
                          AS 'SELECT $1 + 0 * extract(day FROM now())::int';}, refuse_after => '0A000' },
        {   name   => 'func.body_replaced',
            setup  => q{CREATE FUNCTION adv_f2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';} . tab('adv_f2t', 5),
            kind   => 'count', query => 'SELECT * FROM adv_f2t WHERE adv_f2(x) > 2',
            change => q{CREATE OR REPLACE FUNCTION adv_f2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT -$1';} },
        {   name   => 'func.plpgsql_body_replaced',
            setup  => q{CREATE FUNCTION adv_f2p(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS 'BEGIN RETURN $1; END';}
              . tab('adv_f2pt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_f2pt WHERE adv_f2p(x) > 2',
            change => q{CREATE OR REPLACE FUNCTION adv_f2p(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS 'BEGIN RETURN -$1; END';} },
        {   name   => 'func.new_overload_takes_over',
            setup  => q{CREATE FUNCTION adv_f3(numeric) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1::int';} . tab('adv_f3t', 5),
            kind   => 'count', query => 'SELECT * FROM adv_f3t WHERE adv_f3(x) > 2',
            change => q{CREATE FUNCTION adv_f3(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT -$1';} },
        {   name   => 'func.qualified_renamed',
            setup  => q{
              CREATE SCHEMA adv_fq;
              CREATE FUNCTION adv_fq.f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
              CREATE FUNCTION adv_fq.g(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT -$1';} . tab('adv_fqt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_fqt WHERE adv_fq.f(x) > 2',
            change => 'ALTER FUNCTION adv_fq.f(int) RENAME TO f_old; ALTER FUNCTION adv_fq.g(int) RENAME TO f;' },
        {   name   => 'func.moved_onto_path',
            path   => 'adv_fs1, public',
            setup  => q{
              CREATE SCHEMA adv_fs1; CREATE SCHEMA adv_fs2;
              CREATE FUNCTION public.adv_fs(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1';
              CREATE FUNCTION adv_fs2.adv_fs(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT -$1';} . tab('public.adv_fst', 5),
            kind   => 'count', query => 'SELECT * FROM adv_fst WHERE adv_fs(x) > 2',
            change => 'ALTER FUNCTION adv_fs2.adv_fs(int) SET SCHEMA adv_fs1;' },
        {   name   => 'func.strict_toggled',
            setup  => q{CREATE FUNCTION adv_f4(int) RETURNS int IMMUTABLE CALLED ON NULL INPUT LANGUAGE plpgsql
                          AS 'BEGIN RETURN coalesce($1, 100); END';
                        CREATE TABLE adv_f4t (x int); INSERT INTO adv_f4t VALUES (1), (NULL), (NULL);
                        SELECT memo.watch('adv_f4t');},
            kind   => 'count', query => 'SELECT * FROM adv_f4t WHERE adv_f4(x) > 50',
            change => 'ALTER FUNCTION adv_f4(int) STRICT;' },

        # ---------------------------------------------------------------- tables and columns
        {   name   => 'table.column_type_changed',
            setup  => q{
              CREATE TABLE adv_act (v text); INSERT INTO adv_act VALUES ('10'), ('9'), ('100'), ('1');
              SELECT memo.watch('adv_act');},
            kind   => 'count', query => q{SELECT * FROM adv_act WHERE v < '2'},
            change => 'ALTER TABLE adv_act ALTER COLUMN v TYPE int USING v::int;' },
        {   name   => 'table.columns_swapped',
            setup  => q{
              CREATE TABLE adv_rs (a int, b int); INSERT INTO adv_rs VALUES (1, 10), (2, 20), (3, 30);
              SELECT memo.watch('adv_rs');},
            kind   => 'count', query => 'SELECT * FROM adv_rs WHERE a > 5',
            change => 'ALTER TABLE adv_rs RENAME COLUMN a TO tmp; ALTER TABLE adv_rs RENAME COLUMN b TO a; '
              . 'ALTER TABLE adv_rs RENAME COLUMN tmp TO b;' },
        {   name   => 'table.names_swapped',
            setup  => tab('adv_ta', 3) . tab('adv_tb', 5),
            kind   => 'count', query => 'SELECT * FROM adv_ta',
            change => 'ALTER TABLE adv_ta RENAME TO adv_tmp; ALTER TABLE adv_tb RENAME TO adv_ta; '
              . 'ALTER TABLE adv_tmp RENAME TO adv_tb;' },
        {   name   => 'table.set_schema_onto_path',
            path   => 'adv_front, public',
            setup  => 'CREATE SCHEMA adv_front; CREATE SCHEMA adv_back;' . tab('public.adv_mv', 3) . tab('adv_back.adv_mv', 5),
            kind   => 'count', query => 'SELECT * FROM adv_mv',
            change => 'ALTER TABLE adv_back.adv_mv SET SCHEMA adv_front;' },
        {   name   => 'table.set_schema_off_path',
            path   => 'adv_front2, public',
            setup  => 'CREATE SCHEMA adv_front2; CREATE SCHEMA adv_back2;' . tab('public.adv_mo', 3) . tab('adv_front2.adv_mo', 5),
            kind   => 'count', query => 'SELECT * FROM adv_mo',
            change => 'ALTER TABLE adv_front2.adv_mo SET SCHEMA adv_back2;' },
        {   name   => 'table.generated_column_expression_dropped_and_updated',
            setup  => q{
              CREATE TABLE adv_gen (x int, g int GENERATED ALWAYS AS (x * 2) STORED);
              INSERT INTO adv_gen (x) VALUES (1), (2), (3);
              SELECT memo.watch('adv_gen');},
            kind   => 'count', query => 'SELECT * FROM adv_gen WHERE g > 3',
            change => 'ALTER TABLE adv_gen ALTER COLUMN g DROP EXPRESSION; UPDATE adv_gen SET g = 0;' },

        # ---------------------------------------------------------------- the search path
        {   name   => 'path.usage_granted_uncovers_schema',
            registered_todo => 'registered as the superuser, whose search path finds the hidden schema: the role resolves another table, another identifier, never served (never wrong)',
            role   => 'adv_pu', path => 'adv_hid, public',
            setup  => 'CREATE ROLE adv_pu; CREATE SCHEMA adv_hid;' . tab('public.adv_pg', 3) . tab('adv_hid.adv_pg', 5)
              . ' GRANT SELECT ON public.adv_pg, adv_hid.adv_pg TO adv_pu;',
            kind   => 'count', query => 'SELECT * FROM adv_pg',
            change => 'GRANT USAGE ON SCHEMA adv_hid TO adv_pu;' },
        {   name   => 'path.usage_revoked_hides_schema',
            role   => 'adv_pv', path => 'adv_hid2, public',
            setup  => 'CREATE ROLE adv_pv; CREATE SCHEMA adv_hid2;' . tab('public.adv_pgv', 3) . tab('adv_hid2.adv_pgv', 5)
              . ' GRANT SELECT ON public.adv_pgv, adv_hid2.adv_pgv TO adv_pv; GRANT USAGE ON SCHEMA adv_hid2 TO adv_pv;',
            kind   => 'count', query => 'SELECT * FROM adv_pgv',
            change => 'REVOKE USAGE ON SCHEMA adv_hid2 FROM adv_pv;' },
        {   name   => 'path.schema_renamed_away',
            path   => 'adv_pr1, public',
            setup  => 'CREATE SCHEMA adv_pr1;' . tab('public.adv_prt', 3) . tab('adv_pr1.adv_prt', 5),
            kind   => 'count', query => 'SELECT * FROM adv_prt',
            change => 'ALTER SCHEMA adv_pr1 RENAME TO adv_pr1_old;' },
        {   name   => 'path.schema_renamed_into_place',
            path   => 'adv_pr2, public',
            setup  => 'CREATE SCHEMA adv_pr2x;' . tab('public.adv_prt2', 3) . tab('adv_pr2x.adv_prt2', 5),
            kind   => 'count', query => 'SELECT * FROM adv_prt2',
            change => 'ALTER SCHEMA adv_pr2x RENAME TO adv_pr2;' },
        {   name   => 'path.user_schema_created',
            role   => 'adv_us', path => '"$user", public',
            setup  => 'CREATE ROLE adv_us;' . tab('public.adv_ust', 3) . ' GRANT SELECT ON public.adv_ust TO adv_us;',
            kind   => 'count', query => 'SELECT * FROM adv_ust',
            change => 'CREATE SCHEMA adv_us AUTHORIZATION adv_us;' . tab('adv_us.adv_ust', 5)
              . ' GRANT SELECT ON adv_us.adv_ust TO adv_us;' },

        # ---------------------------------------------------------------- settings
        {   name   => 'setting.default_text_search_config',
            setup  => q{
              CREATE TABLE adv_tsc (body text); INSERT INTO adv_tsc VALUES ('cats'), ('dog');
              SELECT memo.watch('adv_tsc');},
            kind   => 'count', query => q{SELECT * FROM adv_tsc WHERE body @@ 'cat'::tsquery},
            uncached => 'the text search configuration is a setting the key does not hold: refused',
            change => q{SET default_text_search_config = 'pg_catalog.simple';},
            inert  => 1 },   # a session setting: only W sees the change
        {   name   => 'setting.timezone_date_comparison',  # timestamptz against a date: cached, TimeZone keyed
            setup  => q{
              CREATE TABLE adv_tzc (at timestamptz);
              INSERT INTO adv_tzc VALUES ('2026-03-28 12:00+00'), ('2026-03-29 06:00+00');
              SELECT memo.watch('adv_tzc');},
            kind   => 'count', query => q{SELECT * FROM adv_tzc WHERE at >= $1::date}, params => ['2026-03-29'],
            change => q{SET TimeZone = 'Pacific/Kiritimati';},
            after  => q{INSERT INTO adv_tzc VALUES ('2026-03-28 11:00+00');},
            inert  => 1 },   # a session setting: only W sees the change

        # ---------------------------------------------------------------- 5. the clock in literals and parameters
        (map { my ($n, $q, @p) = @$_;
               +{ name => "time.$n", kind => 'count', query => $q, params => [@p], refuse => '0A000' } }
            ['now_literal', q{SELECT * FROM adv_tl WHERE ts < 'now'::timestamp}],
            ['now_typed_literal', q{SELECT * FROM adv_tl WHERE ts < timestamp 'now'}],
            ['now_untyped_literal', q{SELECT * FROM adv_tl WHERE ts < 'now'}],
            ['now_mixed_case', q{SELECT * FROM adv_tl WHERE ts < 'Now'::timestamp}],
            ['now_timestamptz', q{SELECT * FROM adv_tl WHERE 'now'::timestamptz > '2000-01-01 00:00:00+00'::timestamptz}],
            ['now_time', q{SELECT * FROM adv_tl WHERE 'now'::time > '00:00:00'::time}],
            ['now_in_array', q{SELECT * FROM adv_tl WHERE ts < ANY ('{now}'::timestamp[])}],
            ['now_in_range', q{SELECT * FROM adv_tl WHERE ts <@ '[now,infinity)'::tsrange}],
            ['now_param', q{SELECT * FROM adv_tl WHERE ts < $1::timestamp}, 'now'],
            ['now_param_untyped', q{SELECT * FROM adv_tl WHERE ts < $1}, 'now'],
            ['now_param_array', q{SELECT * FROM adv_tl WHERE ts < ANY ($1::timestamp[])}, '{now}'],
            ['today_literal', q{SELECT * FROM adv_tl WHERE d < 'today'::date}],
            ['tomorrow_literal', q{SELECT * FROM adv_tl WHERE d < 'tomorrow'::date}],
            ['yesterday_untyped_literal', q{SELECT * FROM adv_tl WHERE d > 'yesterday'}],
            ['today_param', q{SELECT * FROM adv_tl WHERE d < $1::date}, 'today'],
            ['tomorrow_param_untyped', q{SELECT * FROM adv_tl WHERE d < $1}, 'tomorrow'],
            ['yesterday_param', q{SELECT * FROM adv_tl WHERE d > $1::date}, 'yesterday'],
            ['now_through_text', q{SELECT * FROM adv_tl WHERE ts < 'now'::text::timestamp}],
            ['now_param_through_text', q{SELECT * FROM adv_tl WHERE ts < $1::text::timestamp}, 'now'],
            ['now_with_typmod', q{SELECT * FROM adv_tl WHERE ts < 'now'::timestamp(0)}],
            ['now_padded_upper', q{SELECT * FROM adv_tl WHERE ts < '  NOW  '::timestamp}],
            ['now_as_date', q{SELECT * FROM adv_tl WHERE d < 'now'::date}],
            ['today_as_timestamp', q{SELECT * FROM adv_tl WHERE ts < 'today'::timestamp}],
            ['tomorrow_with_time', q{SELECT * FROM adv_tl WHERE ts < 'tomorrow 10:00'::timestamp}],
            ['now_in_domain', q{SELECT * FROM adv_tl WHERE ts < 'now'::adv_tsdom}],
            ['now_in_composite', q{SELECT * FROM adv_tl WHERE ts < ('(now)'::adv_tsrow).t}],
            ['now_in_multirange', q{SELECT * FROM adv_tl WHERE ts <@ '{[now,infinity)}'::tsmultirange}],
            ['now_in_array_expr', q{SELECT * FROM adv_tl WHERE ts < ANY (ARRAY['now', 'epoch']::timestamp[])}],
        ),
        {   name   => 'time.explicit_literal_is_cached',
            kind   => 'count', query => q{SELECT * FROM adv_tl WHERE ts < '2020-01-01'::timestamp},
            change => q{INSERT INTO adv_tl VALUES ('2019-01-01', '2019-01-01');} },
        {   name   => 'time.explicit_param_is_cached',
            kind   => 'count', query => q{SELECT * FROM adv_tl WHERE d < $1::date}, params => ['2020-01-01'] },

        # ---------------------------------------------------------------- 7. look-alike triggers
        {   name   => 'trigger.when_false_lookalike_then_watch',
            setup  => 'CREATE ROLE adv_la1r;' . tab('adv_la1', 5, unwatched => 1) . q{
              GRANT TRIGGER ON adv_la1 TO adv_la1r;
              SET ROLE adv_la1r;
              CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON adv_la1
                FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION memo.invalidation_trigger();
              RESET ROLE;
              SELECT memo.watch('adv_la1');},
            kind   => 'count', query => 'SELECT * FROM adv_la1',
            change => 'INSERT INTO adv_la1 VALUES (6);' },
        {   name   => 'trigger.update_of_column_lookalike_then_watch',
            setup  => q{
              CREATE ROLE adv_la2r;
              CREATE TABLE adv_la2 (x int, y int); INSERT INTO adv_la2 SELECT g, g FROM generate_series(1, 5) g;
              GRANT TRIGGER ON adv_la2 TO adv_la2r;
              SET ROLE adv_la2r;
              CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OF y OR DELETE OR TRUNCATE ON adv_la2
                FOR EACH STATEMENT EXECUTE FUNCTION memo.invalidation_trigger();
              RESET ROLE;
              SELECT memo.watch('adv_la2');},
            kind   => 'count', query => 'SELECT * FROM adv_la2 WHERE x > 50',
            change => 'UPDATE adv_la2 SET x = x + 100 WHERE x = 1;' },
        {   name   => 'trigger.row_lookalike_then_watch',
            setup  => 'CREATE ROLE adv_la3r;' . tab('adv_la3', 5, unwatched => 1) . q{
              GRANT TRIGGER ON adv_la3 TO adv_la3r;
              SET ROLE adv_la3r;
              CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE ON adv_la3
                FOR EACH ROW EXECUTE FUNCTION memo.invalidation_trigger();
              RESET ROLE;
              SELECT memo.watch('adv_la3');},
            kind   => 'count', query => 'SELECT * FROM adv_la3',
            change => 'INSERT INTO adv_la3 VALUES (6);' },
        {   name   => 'trigger.replaced_by_grantee_with_when_false',
            allow  => '55000',
            setup  => 'CREATE ROLE adv_la6r;' . tab('adv_la6', 5) . ' GRANT TRIGGER ON adv_la6 TO adv_la6r;',
            kind   => 'count', query => 'SELECT * FROM adv_la6',
            change => q{SET ROLE adv_la6r;
              CREATE OR REPLACE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON adv_la6
                FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION memo.invalidation_trigger();
              RESET ROLE;
              INSERT INTO adv_la6 VALUES (6);} },
        {   name   => 'trigger.when_lookalike_by_owner_enabled_always_not_watched',
            setup  => tab('adv_la4', 5, unwatched => 1) . q{
              CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON adv_la4
                FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION memo.invalidation_trigger();
              ALTER TABLE adv_la4 ENABLE ALWAYS TRIGGER pg_memo_invalidate;},
            kind   => 'count', query => 'SELECT * FROM adv_la4', refuse => '55000',
            change => 'INSERT INTO adv_la4 VALUES (6);' },
        {   name   => 'trigger.when_lookalike_by_trigger_grantee_not_watched',
            setup  => 'CREATE ROLE adv_la5r;' . tab('adv_la5', 5, unwatched => 1) . q{
              GRANT TRIGGER ON adv_la5 TO adv_la5r;
              SET ROLE adv_la5r;
              CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON adv_la5
                FOR EACH STATEMENT WHEN (true) EXECUTE FUNCTION memo.invalidation_trigger();
              RESET ROLE;},
            kind   => 'count', query => 'SELECT * FROM adv_la5', refuse => '55000' },

        # ---------------------------------------------------------------- 8. system columns
        {   name   => 'syscol.xmax_row_lock',
            setup  => tab('adv_sx', 3),
            kind   => 'list', query => 'SELECT x, xmax FROM adv_sx ORDER BY x', cols => 'x int, xmax xid',
            refuse => '0A000', change => 'SELECT * FROM adv_sx FOR SHARE;' },
        {   name   => 'syscol.xmax_through_view',
            setup  => tab('adv_sxv', 3) . ' CREATE VIEW adv_sxvv AS SELECT x, xmax AS xm FROM adv_sxv;',
            kind   => 'list', query => 'SELECT x, xm FROM adv_sxvv ORDER BY x', cols => 'x int, xm xid',
            refuse => '0A000', change => 'SELECT * FROM adv_sxv FOR SHARE;' },
        {   name   => 'syscol.xmax_in_subquery',
            setup  => tab('adv_sxs', 3),
            kind   => 'count', query => q{SELECT * FROM (SELECT x, xmax AS m FROM adv_sxs) s WHERE m::text <> '0'},
            refuse => '0A000', change => 'SELECT * FROM adv_sxs FOR SHARE;' },
        {   name   => 'syscol.ctid_vacuum_full',
            setup  => tab('adv_sc', 10) . ' DELETE FROM adv_sc WHERE x <= 5;',
            kind   => 'list', query => 'SELECT x, ctid FROM adv_sc ORDER BY x', cols => 'x int, ctid tid',
            refuse => '0A000', change => 'VACUUM FULL adv_sc;', outside => 1 },
        {   name   => 'syscol.xmin_vacuum_freeze',
            setup  => tab('adv_sm', 3),
            kind   => 'list', query => 'SELECT x, xmin FROM adv_sm ORDER BY x', cols => 'x int, xmin xid',
            refuse => '0A000', change => 'VACUUM FREEZE adv_sm;', outside => 1 },
        {   name   => 'syscol.cmin',
            setup  => tab('adv_scm', 3),
            kind   => 'list', query => 'SELECT x, cmin FROM adv_scm ORDER BY x', cols => 'x int, cmin cid',
            refuse => '0A000' },
        {   name   => 'syscol.ctid_in_where',
            setup  => tab('adv_scw', 10) . ' DELETE FROM adv_scw WHERE x <= 5;',
            kind   => 'count', query => q{SELECT * FROM adv_scw WHERE ctid = '(0,1)'::tid},
            refuse => '0A000', change => 'VACUUM FULL adv_scw;', outside => 1 },
        {   name   => 'syscol.xmin_only_in_where',
            setup  => tab('adv_sxo', 3),
            kind   => 'list', query => q{SELECT x FROM adv_sxo WHERE xmin <> '1'::xid ORDER BY x}, cols => 'x int',
            refuse => '0A000', change => 'UPDATE adv_sxo SET x = x WHERE x = 1;' },
        {   name   => 'syscol.tableoid_is_cached',
            setup  => q{
              CREATE TABLE adv_so (x int) PARTITION BY RANGE (x);
              CREATE TABLE adv_so1 PARTITION OF adv_so FOR VALUES FROM (0) TO (10);
              CREATE TABLE adv_so2 PARTITION OF adv_so FOR VALUES FROM (10) TO (20);
              INSERT INTO adv_so VALUES (1), (11);
              SELECT memo.watch('adv_so');},
            kind   => 'list', query => 'SELECT tableoid, x FROM adv_so ORDER BY x', cols => 'tableoid oid, x int',
            change => 'UPDATE adv_so SET x = 12 WHERE x = 1;' },

        # ---------------------------------------------------------------- 9. deltas: every write path carried, or fallen back
        # Tables watched with deltas; the cached queries qualify (a count, a
        # page ordered with LIMIT), so a write is carried forward unless its
        # rows cannot be accounted for. Every change changes the result.
        # Tables with scope columns: each write changes the cached scope's
        # rows only through the row it moves, the array element it drops,
        # the NULL it writes, or a write its rows cannot tell.
        {   name   => 'scope.row_moves_out',
            setup  => stab('adv_s1', 12),
            kind   => 'count', query => 'SELECT * FROM adv_s1 WHERE g = $1', params => ['0'],
            change => 'UPDATE adv_s1 SET g = 1 WHERE x = 3;',
            after  => 'UPDATE adv_s1 SET g = 2 WHERE x = 6;' },
        {   name   => 'scope.row_moves_in',
            setup  => stab('adv_s2', 12),
            kind   => 'list', query => 'SELECT x FROM adv_s2 WHERE g = $1 ORDER BY x LIMIT 3', params => ['0'],
            cols   => 'x int',
            change => 'UPDATE adv_s2 SET g = 0 WHERE x = 1;' },
        {   name   => 'scope.array_loses_element',
            setup  => stab('adv_s3', 12),
            kind   => 'count', query => 'SELECT * FROM adv_s3 WHERE tags @> ARRAY[$1::int]', params => ['5'],
            change => 'UPDATE adv_s3 SET tags = array_remove(tags, 5) WHERE x = 1;',
            after  => 'UPDATE adv_s3 SET tags = tags || 5 WHERE x = 2;' },
        {   name   => 'scope.array_set_null',
            setup  => stab('adv_s4', 12),
            kind   => 'list', query => 'SELECT x FROM adv_s4 WHERE $1::int = ANY (tags) ORDER BY x', params => ['1'],
            cols   => 'x int',
            change => 'UPDATE adv_s4 SET tags = NULL WHERE x = 1;',
            after  => 'UPDATE adv_s4 SET tags = ARRAY[1] WHERE x = 2;' },
        {   name   => 'scope.in_list_delete',
            setup  => stab('adv_s5', 12),
            kind   => 'count', query => 'SELECT * FROM adv_s5 WHERE g IN ($1::int, $2::int)', params => ['0', '2'],
            change => 'DELETE FROM adv_s5 WHERE x = 5;' },
        {   name   => 'scope.union_other_branch',
            setup  => stab('adv_s6', 12),
            kind   => 'count', query => 'SELECT x FROM adv_s6 WHERE g = $1 UNION ALL SELECT x FROM adv_s6 WHERE tags @> ARRAY[$2::int]',
            params => ['0', '6'],
            change => 'UPDATE adv_s6 SET tags = ARRAY[6] WHERE x = 1;' },
        {   name   => 'scope.truncate',
            setup  => stab('adv_s7', 12),
            kind   => 'count', query => 'SELECT * FROM adv_s7 WHERE g = $1', params => ['0'],
            change => q{TRUNCATE adv_s7; INSERT INTO adv_s7 VALUES (1, 0, '{}', 'n');} },
        {   name   => 'scope.columns_dropped_then_write',
            setup  => stab('adv_s8', 12),
            kind   => 'count', query => 'SELECT * FROM adv_s8 WHERE g = $1', params => ['0'],
            change => q{SELECT memo.watch('adv_s8', deltas => true); UPDATE adv_s8 SET g = 0 WHERE x = 1;} },
        # Scopes across types (issue 47): a value of another type of the scope
        # column's hash family pins the same counters a writer marks for the
        # equal column value; where two hash functions of a family need not
        # agree (name against text under a nondeterministic collation), the
        # entry keeps the table's counter.
        {   name   => 'scope.int4_value_on_bigint_column',
            setup  => q{CREATE TABLE adv_sx1 (x int PRIMARY KEY, owner bigint, note text);
                        INSERT INTO adv_sx1 SELECT i, i % 3, 'n' FROM generate_series(1, 12) i;
                        SELECT memo.watch('adv_sx1', true, '{owner}');},
            kind   => 'count', query => 'SELECT * FROM adv_sx1 WHERE owner = $1::int4', params => ['1'],
            change => 'UPDATE adv_sx1 SET owner = 1 WHERE x = 3;',
            after  => 'DELETE FROM adv_sx1 WHERE x = 1;' },
        {   name   => 'scope.int8_array_on_int_column',
            setup  => stab('adv_sx2', 12),
            kind   => 'list', query => 'SELECT x FROM adv_sx2 WHERE g = ANY ($1::int8[]) ORDER BY x', params => ['{0,1}'],
            cols   => 'x int',
            change => 'UPDATE adv_sx2 SET g = 0 WHERE x = 2;',
            after  => 'UPDATE adv_sx2 SET g = 2 WHERE x = 1;' },
        {   name   => 'scope.text_value_on_varchar_column',
            setup  => q{CREATE TABLE adv_sx3 (x int PRIMARY KEY, code varchar(8), note text);
                        INSERT INTO adv_sx3 SELECT i, 'c' || (i % 3), 'n' FROM generate_series(1, 12) i;
                        SELECT memo.watch('adv_sx3', true, '{code}');},
            kind   => 'list', query => 'SELECT x FROM adv_sx3 WHERE code = $1::text ORDER BY x', params => ['c1'],
            cols   => 'x int',
            change => q{UPDATE adv_sx3 SET code = 'c1' WHERE x = 2;},
            after  => q{UPDATE adv_sx3 SET note = 'm' WHERE x = 1; DELETE FROM adv_sx3 WHERE x = 4;} },
        (!$has_icu ? () : (
        {   name   => 'scope.name_as_text_nondeterministic',
            setup  => q{CREATE COLLATION adv_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
                        CREATE TABLE adv_sx4 (x int PRIMARY KEY, owner name COLLATE adv_ci, v int);
                        INSERT INTO adv_sx4 VALUES (1, 'alice', 1), (2, 'bob', 1), (3, 'Alice', 1);
                        SELECT memo.watch('adv_sx4', true, '{owner}');},
            kind   => 'count', query => 'SELECT * FROM adv_sx4 WHERE owner = $1::text AND v = 1', params => ['ALICE'],
            change => 'UPDATE adv_sx4 SET v = 2 WHERE x = 1;' },
        )),
        # A function labelled IMMUTABLE that reads the scoped table itself
        # (issue 45): its read is not the text's own range table entry, so
        # it covers every scope, and a write to another scope changes its
        # value. Learned like a read of a table the text does not name (the
        # first computation stores nothing). stab's x 1..12 sum to 78.
        {   name   => 'scope.function_reads_other_scopes_sql', learns => 1,
            setup  => stab('adv_sf1', 12)
              . q{CREATE FUNCTION adv_sf1_total() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT sum(x) FROM adv_sf1';},
            kind   => 'count', query => 'SELECT * FROM adv_sf1 WHERE g = $1::int AND x * 10 > adv_sf1_total()',
            params => ['1'],
            change => 'DELETE FROM adv_sf1 WHERE x = 12;',
            after  => 'UPDATE adv_sf1 SET x = 30 WHERE x = 9;' },
        {   name   => 'scope.function_reads_other_scopes_plpgsql', learns => 1,
            setup  => stab('adv_sf2', 12)
              . q{CREATE FUNCTION adv_sf2_above(int) RETURNS bool IMMUTABLE LANGUAGE plpgsql
                    AS 'BEGIN RETURN $1 * 10 > (SELECT sum(x) FROM adv_sf2); END';},
            kind   => 'list', query => 'SELECT x FROM adv_sf2 WHERE g = $1::int AND adv_sf2_above(x) ORDER BY x',
            params => ['1'], cols => 'x int',
            change => 'DELETE FROM adv_sf2 WHERE x = 12;',
            after  => q{INSERT INTO adv_sf2 VALUES (40, 2, '{}', 'n');} },
        {   name   => 'scope.dynamic_sql_reads_other_scopes', learns => 1,
            setup  => stab('adv_sf3', 12)
              . q{CREATE FUNCTION adv_sf3_above(a int) RETURNS bool IMMUTABLE LANGUAGE plpgsql AS $f$
                    DECLARE r bool;
                    BEGIN EXECUTE 'SELECT $1 * 10 > sum(x) FROM adv_sf3' INTO r USING a; RETURN r; END $f$;},
            kind   => 'count', query => 'SELECT * FROM adv_sf3 WHERE g = $1::int AND adv_sf3_above(x)', params => ['1'],
            change => 'UPDATE adv_sf3 SET x = 0 WHERE x = 12;' },
        # Inlined by the planner: the function's range table entry for the
        # same table sits in the query's own plan.
        {   name   => 'scope.srf_in_from_reads_other_scopes', learns => 1,
            setup  => stab('adv_sf4', 12)
              . q{CREATE FUNCTION adv_sf4_total() RETURNS TABLE (total bigint) IMMUTABLE LANGUAGE sql
                    AS 'SELECT sum(x) FROM adv_sf4';},
            kind   => 'count',
            query  => 'SELECT t.x FROM adv_sf4 t, adv_sf4_total() s WHERE t.g = $1::int AND t.x * 10 > s.total',
            params => ['1'],
            change => 'DELETE FROM adv_sf4 WHERE x = 12;',
            after  => q{INSERT INTO adv_sf4 VALUES (40, 2, '{}', 'n');} },
        {   name   => 'scope.function_in_output_reads_other_scopes', learns => 1,
            setup  => stab('adv_sf5', 12)
              . q{CREATE FUNCTION adv_sf5_total() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT sum(x) FROM adv_sf5';},
            kind   => 'list', query => 'SELECT x, adv_sf5_total() AS total FROM adv_sf5 WHERE g = $1::int ORDER BY x',
            params => ['1'], cols => 'x int, total bigint',
            change => 'DELETE FROM adv_sf5 WHERE x = 12;' },
        # Through a view over the same table: the view is a relation the
        # text does not name, learned with its base table's every write.
        {   name   => 'scope.function_reads_view_of_other_scopes', learns => 1,
            setup  => stab('adv_sf6', 12)
              . q{CREATE VIEW adv_sf6v AS SELECT x FROM adv_sf6;
                  CREATE FUNCTION adv_sf6_total() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT sum(x) FROM adv_sf6v';},
            kind   => 'count', query => 'SELECT * FROM adv_sf6 WHERE g = $1::int AND x * 10 > adv_sf6_total()',
            params => ['1'],
            change => 'DELETE FROM adv_sf6 WHERE x = 12;' },
        # A domain's CHECK calls it: no function in the text at all. A
        # large row in another scope makes the check fail on this scope's
        # small rows (the new row passes it).
        {   name   => 'scope.domain_check_reads_other_scopes', learns => 1,
            setup  => stab('adv_sf7', 12)
              . q{CREATE FUNCTION adv_sf7_ok(int) RETURNS bool IMMUTABLE LANGUAGE sql
                    AS 'SELECT $1 > (SELECT sum(x) FROM adv_sf7) / 100';
                  CREATE DOMAIN adv_sf7_big AS int CHECK (adv_sf7_ok(VALUE));},
            kind   => 'count', query => 'SELECT * FROM adv_sf7 WHERE g = $1::int AND x::adv_sf7_big > 0', params => ['1'],
            change => q{INSERT INTO adv_sf7 VALUES (500, 0, '{}', 'big');},
            after  => 'DELETE FROM adv_sf7 WHERE x = 500;' },
        {   name   => 'delta.insert_on_conflict_update',
            setup  => dtab('adv_d1', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d1 WHERE g = $1', params => ['0'],
            change => q{INSERT INTO adv_d1 VALUES (1, 0, 'u'), (50, 0, 'i') ON CONFLICT (x) DO UPDATE SET g = excluded.g;},
            after  => q{INSERT INTO adv_d1 VALUES (2, 0, 'u') ON CONFLICT (x) DO UPDATE SET g = excluded.g;} },
        {   name   => 'delta.merge',
            setup  => dtab('adv_d2', 9) . 'CREATE TABLE adv_d2_src (x int, g int); INSERT INTO adv_d2_src VALUES (3, 1), (60, 0), (61, 0);',
            kind   => 'count', query => 'SELECT * FROM adv_d2 WHERE g = $1', params => ['0'],
            change => q{MERGE INTO adv_d2 t USING adv_d2_src s ON t.x = s.x
                        WHEN MATCHED THEN UPDATE SET g = s.g WHEN NOT MATCHED THEN INSERT VALUES (s.x, s.g, 'm');},
            after  => q{MERGE INTO adv_d2 t USING adv_d2_src s ON t.x = s.x WHEN MATCHED THEN DELETE;} },
        {   name   => 'delta.copy_from',
            setup  => dtab('adv_d3', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d3 WHERE g = $1', params => ['0'],
            change => q{COPY adv_d3 (x, g) FROM PROGRAM 'printf "70\t0\n71\t0\n"';} },
        {   name   => 'delta.fk_cascade_delete',
            setup  => q{CREATE TABLE adv_d4p (id int PRIMARY KEY); INSERT INTO adv_d4p VALUES (1), (2);}
              . dtab('adv_d4', 9) . q{ALTER TABLE adv_d4 ADD COLUMN p int REFERENCES adv_d4p ON DELETE CASCADE;
              UPDATE adv_d4 SET p = 1 + x % 2;},
            kind   => 'count', query => 'SELECT * FROM adv_d4 WHERE g = $1', params => ['0'],
            change => 'DELETE FROM adv_d4p WHERE id = 1;' },
        {   name   => 'delta.fk_set_null',
            setup  => q{CREATE TABLE adv_d5p (id int PRIMARY KEY); INSERT INTO adv_d5p VALUES (1), (2);}
              . dtab('adv_d5', 9) . q{ALTER TABLE adv_d5 ADD COLUMN p int REFERENCES adv_d5p ON DELETE SET NULL;
              UPDATE adv_d5 SET p = 1 + x % 2;},
            kind   => 'count', query => 'SELECT * FROM adv_d5 WHERE p IS NULL' ,
            change => 'DELETE FROM adv_d5p WHERE id = 2;' },
        {   name   => 'delta.other_tables_trigger',
            setup  => dtab('adv_d6', 9) . q{CREATE TABLE adv_d6_log (x int);
              CREATE FUNCTION adv_d6_fwd() RETURNS trigger LANGUAGE plpgsql AS
                'BEGIN INSERT INTO adv_d6 SELECT x, 0, ''t'' FROM new_rows; RETURN NULL; END';
              CREATE TRIGGER adv_d6_fwd AFTER INSERT ON adv_d6_log REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION adv_d6_fwd();},
            kind   => 'count', query => 'SELECT * FROM adv_d6 WHERE g = $1', params => ['0'],
            change => 'INSERT INTO adv_d6_log VALUES (80), (81);' },
        {   name   => 'delta.writable_cte_two_statements',
            setup  => dtab('adv_d7', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d7 WHERE g = $1', params => ['0'],
            change => q{WITH d AS (DELETE FROM adv_d7 WHERE x = 3 RETURNING x) INSERT INTO adv_d7 SELECT x + 100, 0, 'c' FROM d;
                        UPDATE adv_d7 SET g = 0 WHERE x = 4;} },
        {   name   => 'delta.savepoint_rolled_back',
            setup  => dtab('adv_d8', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d8 WHERE g = $1', params => ['0'],
            change => q{INSERT INTO adv_d8 VALUES (90, 0); SAVEPOINT s; INSERT INTO adv_d8 VALUES (91, 0);
                        DELETE FROM adv_d8 WHERE x = 3; ROLLBACK TO SAVEPOINT s; UPDATE adv_d8 SET g = 0 WHERE x = 4;} },
        {   name   => 'delta.same_row_updated_twice',
            setup  => dtab('adv_d9', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d9 WHERE g = $1', params => ['0'],
            change => q{UPDATE adv_d9 SET g = 0 WHERE x = 1; UPDATE adv_d9 SET g = 2 WHERE x = 1;
                        UPDATE adv_d9 SET g = 0 WHERE x = 1; UPDATE adv_d9 SET g = 0 WHERE x = 2;} },
        {   name   => 'delta.truncate_and_reload',
            setup  => dtab('adv_d10', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d10 WHERE g = $1', params => ['0'],
            change => q{TRUNCATE adv_d10; INSERT INTO adv_d10 SELECT i, 0 FROM generate_series(1, 4) i;} },
        {   name   => 'delta.disabled_delta_trigger_write',
            setup  => dtab('adv_d11', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d11 WHERE g = $1', params => ['0'],
            change => q{ALTER TABLE adv_d11 DISABLE TRIGGER pg_memo_delta_insert; INSERT INTO adv_d11 VALUES (95, 0);
                        ALTER TABLE adv_d11 ENABLE ALWAYS TRIGGER pg_memo_delta_insert;} },
        {   name   => 'delta.replica_mode_write',
            setup  => dtab('adv_d12', 9),
            kind   => 'count', query => 'SELECT * FROM adv_d12 WHERE g = $1', params => ['0'],
            change => q{SET LOCAL session_replication_role = replica; INSERT INTO adv_d12 VALUES (96, 0);} },
        {   name   => 'delta.page_row_after_last_then_before',
            setup  => dtab('adv_d13', 30),
            kind   => 'list', query => 'SELECT x, note FROM adv_d13 WHERE g = $1 ORDER BY x LIMIT 3', params => ['0'],
            cols => 'x int, note text',
            change => q{UPDATE adv_d13 SET note = 'late' WHERE x = 30; UPDATE adv_d13 SET note = 'early' WHERE x = 3;},
            after  => q{UPDATE adv_d13 SET note = 'late2' WHERE x = 27;} },
        {   name   => 'delta.page_tie_with_last_row',
            setup  => dtab('adv_d14', 30) . q{UPDATE adv_d14 SET note = 'k'; DELETE FROM adv_d14 WHERE x = 28;},
            kind   => 'list', query => 'SELECT x, note FROM adv_d14 WHERE g = $1 ORDER BY note, x DESC LIMIT 2',
            params => ['0'], cols => 'x int, note text',
            change => q{INSERT INTO adv_d14 VALUES (28, 0, 'k');} },
        {   name   => 'delta.page_offset_shift',
            setup  => dtab('adv_d15', 30),
            kind   => 'list', query => 'SELECT x FROM adv_d15 WHERE g = $1 ORDER BY x LIMIT 2 OFFSET 3', params => ['0'],
            cols => 'x int',
            change => q{DELETE FROM adv_d15 WHERE x = 3;} },
        {   name   => 'delta.union_all_count',
            setup  => dtab('adv_d16', 9),
            kind   => 'count', query => 'SELECT x FROM adv_d16 WHERE g = $1 UNION ALL SELECT x FROM adv_d16 WHERE x = $2',
            params => ['0', '3'],
            change => q{UPDATE adv_d16 SET g = 1 WHERE x = 3;} },
        {   name   => 'delta.function_writes',
            setup  => dtab('adv_d17', 9) . q{CREATE FUNCTION adv_d17_move(a int) RETURNS void LANGUAGE plpgsql AS
              'BEGIN UPDATE adv_d17 SET g = 0 WHERE x = a; DELETE FROM adv_d17 WHERE x = a + 1; END';},
            kind   => 'count', query => 'SELECT * FROM adv_d17 WHERE g = $1', params => ['0'],
            change => 'SELECT adv_d17_move(4);', rows_only => 1 },

        # ---------------------------------------------------------------- 10. remembered errors (pg_memo.error_ttl)
        # Every session remembers errors for an hour: the first call's error is
        # stored, later calls raise it without running the query (a flight's
        # leader too). The change ends the error: the remembered one must go.
        {   name   => 'error.data_fixed',
            session => q{SET pg_memo.error_ttl = '1h'},
            setup  => q{CREATE TABLE adv_ed (v int); INSERT INTO adv_ed VALUES (0); SELECT memo.watch('adv_ed');},
            kind   => 'count', query => 'SELECT * FROM adv_ed WHERE 1 / v = 1',
            change => 'UPDATE adv_ed SET v = 1;' },
        {   name   => 'error.function_replaced',
            session => q{SET pg_memo.error_ttl = '1h'},
            setup  => tab('adv_eft', 3) . q{
              CREATE FUNCTION adv_ef(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
                AS 'BEGIN RAISE EXCEPTION ''not yet'' USING ERRCODE = ''22023''; END';},
            kind   => 'count', query => 'SELECT * FROM adv_eft WHERE adv_ef(x) > 0',
            change => q{CREATE OR REPLACE FUNCTION adv_ef(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
                AS 'BEGIN RETURN $1; END';} },
        # The remembered message holds a value of the table: a role that lost
        # SELECT must get the permission error, not the message.
        {   name   => 'error.select_revoked',
            role   => 'adv_er',
            session => q{SET pg_memo.error_ttl = '1h'},
            setup  => q{
              CREATE ROLE adv_er; CREATE TABLE adv_ert (t text); INSERT INTO adv_ert VALUES ('secret');
              SELECT memo.watch('adv_ert'); GRANT SELECT ON adv_ert TO adv_er;},
            kind   => 'count', query => 'SELECT * FROM adv_ert WHERE t::int > 0',
            change => 'REVOKE SELECT ON adv_ert FROM adv_er;' },
        # A revoked membership moves no counter of the entry: the privilege
        # checks of a hit, run again on the remembered error, must catch it.
        {   name   => 'error.membership_revoked',
            role   => 'adv_em',
            session => q{SET pg_memo.error_ttl = '1h'},
            setup  => q{
              CREATE ROLE adv_emg; CREATE ROLE adv_em IN ROLE adv_emg;
              CREATE TABLE adv_emt (t text); INSERT INTO adv_emt VALUES ('secret');
              SELECT memo.watch('adv_emt'); GRANT SELECT ON adv_emt TO adv_emg;},
            kind   => 'count', query => 'SELECT * FROM adv_emt WHERE t::int > 0',
            change => 'REVOKE adv_emg FROM adv_em;' },
        # ---------------------------------------------------------------- 11. deltas over what the evaluator reads
        # Rows written before ADD COLUMN ... DEFAULT are short on disk: the
        # column's value is the default (attmissingval), never NULL.
        {   name   => 'delta.fast_default_update',
            setup  => dtab('adv_fd1', 6) . q{ALTER TABLE adv_fd1 ADD COLUMN b int DEFAULT 5;},
            kind   => 'count', query => 'SELECT * FROM adv_fd1 WHERE b = 5',
            change => q{UPDATE adv_fd1 SET b = 6 WHERE x = 1;} },
        {   name   => 'delta.fast_default_delete',
            setup  => dtab('adv_fd2', 6) . q{ALTER TABLE adv_fd2 ADD COLUMN b int DEFAULT 5;},
            kind   => 'count', query => 'SELECT * FROM adv_fd2 WHERE b = 5',
            change => q{DELETE FROM adv_fd2 WHERE x IN (1, 2);} },
        {   name   => 'delta.fast_default_is_null',
            setup  => dtab('adv_fd3', 6) . q{ALTER TABLE adv_fd3 ADD COLUMN b int DEFAULT 5;},
            kind   => 'count', query => 'SELECT * FROM adv_fd3 WHERE b IS NULL',
            change => q{UPDATE adv_fd3 SET note = 'u' WHERE x = 1; INSERT INTO adv_fd3 VALUES (50, 0, 'n', NULL);} },
        {   name   => 'delta.fast_default_page',
            setup  => dtab('adv_fd4', 6) . q{ALTER TABLE adv_fd4 ADD COLUMN b int DEFAULT 5;},
            kind   => 'list', query => 'SELECT x, b FROM adv_fd4 WHERE b = 5 ORDER BY x LIMIT 3', cols => 'x int, b int',
           
            change => q{DELETE FROM adv_fd4 WHERE x = 2;} },
        # A branch's own ORDER BY ... LIMIT makes its rows depend on rows it
        # does not return: not corrected row by row.
        {   name   => 'delta.union_all_branch_limit',
            setup  => dtab('adv_ua1', 6),
            kind   => 'count',
            query  => 'SELECT x FROM adv_ua1 WHERE x > 2 UNION ALL (SELECT x FROM adv_ua1 ORDER BY x LIMIT 2)',
            change => q{INSERT INTO adv_ua1 VALUES (7, 1);} },
        {   name   => 'delta.union_all_branch_offset',
            setup  => dtab('adv_ua2', 3),
            kind   => 'count',
            query  => 'SELECT x FROM adv_ua2 WHERE g = 0 UNION ALL (SELECT x FROM adv_ua2 ORDER BY x OFFSET 4)',
            change => q{INSERT INTO adv_ua2 VALUES (10, 1), (12, 0);} },
        {   name   => 'delta.union_all_branch_order_limit_delete',
            setup  => dtab('adv_ua3', 6),
            kind   => 'count',
            query  => 'SELECT x FROM adv_ua3 WHERE g = 1 UNION ALL (SELECT x FROM adv_ua3 ORDER BY x DESC LIMIT 3)',
            change => q{DELETE FROM adv_ua3 WHERE x = 4;} },
        # The direct plan computes the outputs of every matching row (a top-N
        # sort over a sequential scan): a new row whose output fails makes the
        # direct query fail, whatever page it lands on.
        {   name   => 'delta.page_output_fails',
            session => 'SET enable_indexscan = off; SET enable_bitmapscan = off',
            setup  => dtab('adv_pe1', 6),
            kind   => 'list', query => 'SELECT x, 100 / (x - 10) AS q FROM adv_pe1 ORDER BY x LIMIT 2',
            cols   => 'x int, q int',
            change => q{INSERT INTO adv_pe1 VALUES (10, 1);} },
        {   name   => 'delta.count_output_fails',
            session => 'SET enable_indexscan = off; SET enable_bitmapscan = off',
            setup  => dtab('adv_pe2', 6),
            kind   => 'count',
            query  => 'SELECT x FROM adv_pe2 WHERE g = 1 UNION ALL SELECT (100 / (x - 10))::int FROM adv_pe2 WHERE g = 2',
            change => q{INSERT INTO adv_pe2 VALUES (10, 2);} },
        # The planner orders the conjuncts by cost: it may evaluate the failing
        # one first although the text puts it last.
        # A function labelled IMMUTABLE that reads the table itself: a
        # write to a row outside the selection changes its value (issue 45's
        # kin without scopes). Deltas carry no query that calls a user's
        # function, and its read must not count as the text's own.
        {   name   => 'delta.function_reads_same_table', learns => 1,
            setup  => dtab('adv_df1', 9)
              . q{CREATE FUNCTION adv_df1_total() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT sum(x) FROM adv_df1';},
            kind   => 'count', query => 'SELECT * FROM adv_df1 WHERE g = $1 AND x * 10 > adv_df1_total()', params => ['0'],
            change => q{INSERT INTO adv_df1 VALUES (20, 1, 'i');} },
        {   name   => 'delta.function_reads_same_table_page', learns => 1,
            setup  => dtab('adv_df2', 9)
              . q{CREATE FUNCTION adv_df2_total() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT sum(x) FROM adv_df2';},
            kind   => 'list', query => 'SELECT x FROM adv_df2 WHERE x * 10 > adv_df2_total() ORDER BY x LIMIT 2',
            cols   => 'x int',
            change => q{DELETE FROM adv_df2 WHERE x IN (1, 2, 3);} },
        # Through a domain's CHECK, which the text does not show as a call:
        # a carry would evaluate it over the written row only, unobserved,
        # while the direct query checks every row against the new sum.
        {   name   => 'delta.domain_check_reads_same_table', learns => 1,
            setup  => dtab('adv_df3', 9)
              . q{CREATE FUNCTION adv_df3_ok(int) RETURNS bool IMMUTABLE LANGUAGE sql
                    AS 'SELECT $1 > (SELECT sum(x) FROM adv_df3) / 100';
                  CREATE DOMAIN adv_df3_big AS int CHECK (adv_df3_ok(VALUE));},
            kind   => 'count', query => 'SELECT * FROM adv_df3 WHERE g = $1 AND x::adv_df3_big > 0', params => ['0'],
            change => q{INSERT INTO adv_df3 VALUES (500, 1, 'big');},
            after  => 'DELETE FROM adv_df3 WHERE x = 500;' },
        # (a page: a registered statement's count is an aggregate, which
        # deltas do not carry; its page they do)
        {   name   => 'delta.domain_check_reads_same_table_page', learns => 1,
            setup  => dtab('adv_df4', 9)
              . q{CREATE FUNCTION adv_df4_ok(int) RETURNS bool IMMUTABLE LANGUAGE sql
                    AS 'SELECT $1 > (SELECT sum(x) FROM adv_df4) / 100';
                  CREATE DOMAIN adv_df4_big AS int CHECK (adv_df4_ok(VALUE));},
            kind   => 'list', query => 'SELECT x, note FROM adv_df4 WHERE g = $1 AND x::adv_df4_big > 0 ORDER BY x LIMIT 2',
            params => ['0'], cols => 'x int, note text',
            change => q{INSERT INTO adv_df4 VALUES (500, 1, 'big');},
            after  => 'DELETE FROM adv_df4 WHERE x = 500;' },
        {   name   => 'delta.conjunct_fails_in_plan_order',
            setup  => dtab('adv_pe3', 6) . q{CREATE FUNCTION adv_pe3_slow(int) RETURNS bool IMMUTABLE LANGUAGE plpgsql
              COST 10000 AS 'BEGIN RETURN $1 < 8; END';},
            kind   => 'count',
            query  => 'SELECT * FROM adv_pe3 WHERE adv_pe3_slow(x) AND 100 / (x - 10) > -100',
            change => q{INSERT INTO adv_pe3 VALUES (10, 1);} },
        # ---------------------------------------------------------------- 12. relations of every kind take names over
        {   name   => 'names.sequence_takes_name',
            path   => 'adv_ns1, public',
            setup  => q{CREATE SCHEMA adv_ns1;} . tab('adv_nt1', 3),
            kind   => 'count', query => 'SELECT * FROM adv_nt1',
            change => q{CREATE SEQUENCE adv_ns1.adv_nt1;} },
        {   name   => 'names.index_takes_name',
            path   => 'adv_ns2, public',
            setup  => q{CREATE SCHEMA adv_ns2; CREATE TABLE adv_ns2.other (x int);} . tab('adv_nt2', 3),
            kind   => 'count', query => 'SELECT * FROM adv_nt2',
            change => q{CREATE INDEX adv_nt2 ON adv_ns2.other (x);} },
        {   name   => 'names.sequence_renamed_into_name',
            path   => 'adv_ns3, public',
            setup  => q{CREATE SCHEMA adv_ns3; CREATE SEQUENCE adv_ns3.q;} . tab('adv_nt3', 3),
            kind   => 'count', query => 'SELECT * FROM adv_nt3',
            change => q{ALTER SEQUENCE adv_ns3.q RENAME TO adv_nt3;} },
        {   name   => 'names.partitioned_index_takes_name',
            path   => 'adv_ns5, public',
            setup  => q{CREATE SCHEMA adv_ns5; CREATE TABLE adv_ns5.pt (k int) PARTITION BY RANGE (k);} . tab('adv_nt5', 3),
            kind   => 'count', query => 'SELECT * FROM adv_nt5',
            change => q{CREATE INDEX adv_nt5 ON adv_ns5.pt (k);} },
        {   name   => 'names.sequence_moved_into_schema',
            path   => 'adv_ns6, public',
            setup  => q{CREATE SCHEMA adv_ns6; CREATE SCHEMA adv_ns6b; CREATE SEQUENCE adv_ns6b.adv_nt6;} . tab('adv_nt6', 3),
            kind   => 'count', query => 'SELECT * FROM adv_nt6',
            change => q{ALTER SEQUENCE adv_ns6b.adv_nt6 SET SCHEMA adv_ns6;} },
        {   name   => 'names.regclass_sequences_swap',
            setup  => q{CREATE SEQUENCE adv_sqa; CREATE SEQUENCE adv_sqb;
              CREATE TABLE adv_sqr (r regclass); INSERT INTO adv_sqr VALUES ('adv_sqa'); SELECT memo.watch('adv_sqr');},
            kind   => 'count', query => q{SELECT * FROM adv_sqr WHERE r = 'adv_sqb'::regclass},
            change => q{ALTER SEQUENCE adv_sqa RENAME TO adv_sqt; ALTER SEQUENCE adv_sqb RENAME TO adv_sqa;
              ALTER SEQUENCE adv_sqt RENAME TO adv_sqb;} },
        {   name   => 'names.regclass_indexes_swap',
            setup  => q{CREATE TABLE adv_ixt (x int); CREATE INDEX adv_ixa ON adv_ixt (x); CREATE INDEX adv_ixb ON adv_ixt (x);
              CREATE TABLE adv_ixr (r regclass); INSERT INTO adv_ixr VALUES ('adv_ixa'); SELECT memo.watch('adv_ixr');},
            kind   => 'count', query => 'SELECT * FROM adv_ixr WHERE r = $1::regclass', params => ['adv_ixb'],
            change => q{ALTER INDEX adv_ixa RENAME TO adv_ixt2; ALTER INDEX adv_ixb RENAME TO adv_ixa;
              ALTER INDEX adv_ixt2 RENAME TO adv_ixb;} },
        {   name   => 'names.regclass_sequence_dropped',
            setup  => q{CREATE SEQUENCE adv_sqd;
              CREATE TABLE adv_sqdr (r regclass); INSERT INTO adv_sqdr VALUES ('adv_sqd'); SELECT memo.watch('adv_sqdr');},
            kind   => 'count', query => q{SELECT * FROM adv_sqdr WHERE r = 'adv_sqd'::regclass},
            change => q{DROP SEQUENCE adv_sqd;} },
        # ---------------------------------------------------------------- 13. functions labelled IMMUTABLE that read tables
        {   name   => 'func.immutable_sql_reads_table', learns => 1,
            setup  => tab('adv_fr1', 10) . tab('adv_fr1s', 3)
              . q{CREATE FUNCTION adv_fr1n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr1s';},
            kind   => 'count', query => 'SELECT * FROM adv_fr1 WHERE x <= adv_fr1n()',
            change => q{INSERT INTO adv_fr1s VALUES (4), (5);} },
        {   name   => 'func.immutable_plpgsql_reads_table', learns => 1,
            setup  => tab('adv_fr2', 10) . tab('adv_fr2s', 3)
              . q{CREATE FUNCTION adv_fr2n(int) RETURNS bool IMMUTABLE LANGUAGE plpgsql
                    AS 'BEGIN RETURN EXISTS (SELECT 1 FROM adv_fr2s WHERE x = $1); END';},
            kind   => 'count', query => 'SELECT * FROM adv_fr2 WHERE adv_fr2n(x)',
            change => q{DELETE FROM adv_fr2s WHERE x = 2;} },
        {   name   => 'func.immutable_plpgsql_folded_constant', learns => 1,
            setup  => tab('adv_fr3', 10) . tab('adv_fr3s', 3)
              . q{CREATE FUNCTION adv_fr3n() RETURNS bigint IMMUTABLE LANGUAGE plpgsql
                    AS 'BEGIN RETURN (SELECT max(x) FROM adv_fr3s); END';},
            kind   => 'list', query => 'SELECT x FROM adv_fr3 WHERE x <= adv_fr3n() ORDER BY x', cols => 'x int',
            change => q{UPDATE adv_fr3s SET x = 7 WHERE x = 3;} },
        {   name   => 'func.immutable_sql_srf_inlined',
            registered_todo => 'not served through a registration after learning what the inlined function reads (issue 30, open)', learns => 1,
            setup  => tab('adv_fr4', 5)
              . q{CREATE FUNCTION adv_fr4f() RETURNS SETOF int IMMUTABLE LANGUAGE sql AS 'SELECT x FROM adv_fr4';},
            kind   => 'count', query => 'SELECT * FROM adv_fr4f()',
            change => q{INSERT INTO adv_fr4 VALUES (6);} },
        {   name   => 'func.immutable_reads_a_view', learns => 1,
            setup  => tab('adv_fr5', 10) . tab('adv_fr5s', 3)
              . q{CREATE VIEW adv_fr5v AS SELECT x FROM adv_fr5s WHERE x > 1;
                  CREATE FUNCTION adv_fr5n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr5v';},
            kind   => 'count', query => 'SELECT * FROM adv_fr5 WHERE x <= adv_fr5n()',
            change => q{INSERT INTO adv_fr5s VALUES (9);} },
        {   name   => 'func.immutable_reads_a_partition_tree', learns => 1,
            setup  => tab('adv_fr6', 10) . q{CREATE TABLE adv_fr6p (k int) PARTITION BY RANGE (k);
                  CREATE TABLE adv_fr6p1 PARTITION OF adv_fr6p FOR VALUES FROM (0) TO (100);
                  INSERT INTO adv_fr6p VALUES (1), (2); SELECT memo.watch('adv_fr6p');
                  CREATE FUNCTION adv_fr6n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr6p';},
            kind   => 'count', query => 'SELECT * FROM adv_fr6 WHERE x <= adv_fr6n()',
            change => q{INSERT INTO adv_fr6p1 VALUES (3), (4);} },
        {   name   => 'func.immutable_reads_deltas_table', learns => 1,
            setup  => dtab('adv_fr7', 10) . tab('adv_fr7s', 3)
              . q{CREATE FUNCTION adv_fr7n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr7s';},
            kind   => 'count', query => 'SELECT * FROM adv_fr7 WHERE x <= adv_fr7n()',
            change => q{INSERT INTO adv_fr7s VALUES (4);} },
        {   name   => 'func.immutable_reads_unwatched_table',
            setup  => tab('adv_fr8', 10) . tab('adv_fr8s', 3, unwatched => 1)
              . q{CREATE FUNCTION adv_fr8n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr8s';},
            kind   => 'count', query => 'SELECT * FROM adv_fr8 WHERE x <= adv_fr8n()', refuse => '55000' },
        {   name   => 'func.immutable_reads_revoked_table', learns => 1,
            role   => 'adv_frr',
            setup  => q{CREATE ROLE adv_frr;} . tab('adv_fr9', 10) . tab('adv_fr9s', 3)
              . q{GRANT SELECT ON adv_fr9, adv_fr9s TO adv_frr;
                  CREATE FUNCTION adv_fr9n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr9s';},
            kind   => 'count', query => 'SELECT * FROM adv_fr9 WHERE x <= adv_fr9n()',
            change => q{REVOKE SELECT ON adv_fr9s FROM adv_frr;} },
        {   name   => 'func.immutable_reads_membership_revoked', learns => 1,
            role   => 'adv_frm',
            setup  => q{CREATE ROLE adv_frmg; CREATE ROLE adv_frm IN ROLE adv_frmg;} . tab('adv_fr10', 10) . tab('adv_fr10s', 3)
              . q{GRANT SELECT ON adv_fr10 TO adv_frm; GRANT SELECT ON adv_fr10s TO adv_frmg;
                  CREATE FUNCTION adv_fr10n() RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT count(*) FROM adv_fr10s';},
            kind   => 'count', query => 'SELECT * FROM adv_fr10 WHERE x <= adv_fr10n()',
            change => q{REVOKE adv_frmg FROM adv_frm;} },
        # In a parallel worker: the worker's executor checks are not this
        # backend's; the worker says that it ran statements, and the query is
        # planned without workers from then on.
        {   name   => 'func.immutable_parallel_safe_reads_table_in_worker', learns => 2,
            session => 'SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; '
              . 'SET parallel_leader_participation = off',
            setup  => q{CREATE TABLE adv_fr12 AS SELECT g AS x FROM generate_series(1, 1000) g; SELECT memo.watch('adv_fr12');}
              . tab('adv_fr12s', 3)
              # (its own scan never parallel: run from the direct query's cursor,
              # in the leader, each call would start workers of its own)
              . q{ALTER TABLE adv_fr12s SET (parallel_workers = 0);
                  CREATE FUNCTION adv_fr12n(int) RETURNS bool IMMUTABLE PARALLEL SAFE LANGUAGE plpgsql
                    AS 'BEGIN RETURN EXISTS (SELECT 1 FROM adv_fr12s WHERE x = $1); END';},
            kind   => 'count', query => 'SELECT * FROM adv_fr12 WHERE adv_fr12n(x)',
            change => q{INSERT INTO adv_fr12s VALUES (4), (5);} },
        # A function's read of a relation the analysis lists only for its
        # writes (an ancestor of the partition the text names, a parent
        # read with ONLY) covers none of its other rows.
        {   name   => 'func.immutable_reads_partition_ancestor', learns => 1,
            setup  => q{CREATE TABLE adv_fr13 (k int) PARTITION BY RANGE (k);
                  CREATE TABLE adv_fr13a PARTITION OF adv_fr13 FOR VALUES FROM (0) TO (100);
                  CREATE TABLE adv_fr13b PARTITION OF adv_fr13 FOR VALUES FROM (100) TO (200);
                  INSERT INTO adv_fr13 SELECT generate_series(1, 10); SELECT memo.watch('adv_fr13');
                  CREATE FUNCTION adv_fr13n() RETURNS bigint IMMUTABLE LANGUAGE sql
                    AS 'SELECT count(*) FROM adv_fr13 WHERE k >= 100';},
            kind   => 'count', query => 'SELECT * FROM adv_fr13a WHERE k <= 10 * adv_fr13n()',
            change => q{INSERT INTO adv_fr13b VALUES (150);} },
        {   name   => 'func.immutable_reads_parent_of_only',
            registered_todo => 'not served through a registration after learning what the function reads (issue 30, open)', learns => 1,
            setup  => q{CREATE TABLE adv_fr14 (x int); CREATE TABLE adv_fr14c () INHERITS (adv_fr14);
                  INSERT INTO adv_fr14 SELECT generate_series(1, 10); SELECT memo.watch('adv_fr14');
                  CREATE FUNCTION adv_fr14n() RETURNS bigint IMMUTABLE LANGUAGE sql
                    AS 'SELECT count(*) FROM adv_fr14 WHERE x >= 100';},
            kind   => 'count', query => 'SELECT * FROM ONLY adv_fr14 WHERE x <= 10 * adv_fr14n()',
            change => q{INSERT INTO adv_fr14c VALUES (100);} },
        # Deltas never carry a query that calls a user's function: on an
        # empty table the computation never calls it (nothing to learn), and
        # a carry would call it unobserved.
        {   name   => 'func.immutable_deltas_table_starts_empty',
            setup  => dtab('adv_fr15', 0) . tab('adv_fr15s', 3)
              . q{CREATE FUNCTION adv_fr15n(int) RETURNS bool IMMUTABLE LANGUAGE plpgsql
                    AS 'BEGIN RETURN EXISTS (SELECT 1 FROM adv_fr15s WHERE x = $1); END';},
            kind   => 'count', query => 'SELECT * FROM adv_fr15 WHERE adv_fr15n(x)',
            change => q{INSERT INTO adv_fr15 VALUES (1, 1), (2, 2);},
            after  => q{DELETE FROM adv_fr15s WHERE x = 1;} },
        {   name   => 'func.immutable_calls_memo', uncached => 'a memo call inside it: never stored',
            setup  => tab('adv_fr11', 10) . tab('adv_fr11s', 3)
              . q{CREATE FUNCTION adv_fr11n() RETURNS bigint IMMUTABLE LANGUAGE sql
                    AS $$SELECT memo.count('adv.inner', 'SELECT * FROM adv_fr11s', '{}')$$;},
            kind   => 'count', query => 'SELECT * FROM adv_fr11 WHERE x <= adv_fr11n()',
            change => q{INSERT INTO adv_fr11s VALUES (4);} },
        # ---------------------------------------------------------------- 14. portals: as of the portal's snapshot
        # Registered statements read through portals opened before W's change
        # or commit and read after it (issue 45): cursors, prepared
        # statements; the choreography is MemoAdversarial.pm's "Portals".
        # Run through registered statements only (test/t/019).
        {   name   => 'portal.cursor_after_commit', portal => 1,
            setup  => portal_table('adv_pc1'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc1 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc1 SET s = 'new' WHERE g = 1;} },
        {   name   => 'portal.cursor_with_hold', portal => 1, hold => 1,
            setup  => portal_table('adv_pc2'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc2 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc2 SET s = 'new' WHERE id = 3;} },
        {   name   => 'portal.cursor_scroll_fetch_backward', portal => 1, cursor => 'SCROLL',
            fetch  => ['FETCH ALL FROM %s', 'FETCH BACKWARD ALL FROM %s', 'FETCH ABSOLUTE 2 FROM %s',
                       'MOVE LAST IN %s', 'FETCH PRIOR FROM %s'],
            setup  => portal_table('adv_pc3'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc3 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc3 SET s = 'new' WHERE id = 3; DELETE FROM adv_pc3 WHERE id = 5;} },
        # The transaction's own writes after the DECLARE, of every kind.
        {   name   => 'portal.cursor_then_own_update', portal => 1,
            setup  => portal_table('adv_pc4'),
            kind   => 'count', query => q{SELECT * FROM adv_pc4 WHERE s = 'old'},
            change => q{UPDATE adv_pc4 SET s = 'new' WHERE id = 1; DELETE FROM adv_pc4 WHERE id = 2;
                        INSERT INTO adv_pc4 VALUES (10, 0, 'old');} },
        # A transaction with one snapshot: its own write after the DECLARE
        # is the one its cursor must not see (W's commit it never sees).
        {   name   => 'portal.repeatable_read_cursor', portal => 1, isolation => 'REPEATABLE READ',
            setup  => portal_table('adv_pc5'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc5 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc5 SET s = 'new' WHERE g = 1;} },
        {   name   => 'portal.scoped_cursor_after_commit', portal => 1,
            setup  => stab('adv_pc6', 12),
            kind   => 'list', query => 'SELECT x, note FROM adv_pc6 WHERE g = $1 ORDER BY x', params => ['0'],
            cols   => 'x int, note text',
            change => q{UPDATE adv_pc6 SET note = 'new' WHERE x = 3; UPDATE adv_pc6 SET g = 0 WHERE x = 1;} },
        # The entry carried forward by deltas at W's commit: current, and
        # newer than the cursors' snapshot.
        {   name   => 'portal.delta_kept_cursor_after_commit', portal => 1,
            setup  => dtab('adv_pc7', 9),
            kind   => 'count', query => 'SELECT * FROM adv_pc7 WHERE g = $1', params => ['0'],
            change => q{INSERT INTO adv_pc7 VALUES (50, 0, 'i');} },
        {   name   => 'portal.delta_page_cursor_after_commit', portal => 1,
            setup  => dtab('adv_pc8', 30),
            kind   => 'list', query => 'SELECT x, note FROM adv_pc8 WHERE g = $1 ORDER BY x LIMIT 3', params => ['0'],
            cols   => 'x int, note text',
            change => q{UPDATE adv_pc8 SET note = 'new' WHERE x = 6;} },
        # The first row fetched before the commit, the rest after: one
        # result throughout.
        {   name   => 'portal.cursor_fetch_straddles_commit', portal => 1, fetch_first => 'FETCH 1 FROM %s',
            setup  => portal_table('adv_pc9'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc9 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc9 SET s = 'new' WHERE g = 1;} },
        # A prepared statement executed before and after a commit in one
        # transaction: in READ COMMITTED each EXECUTE has a snapshot of its
        # own (it must see the commit, and its own transaction's change)...
        {   name   => 'portal.execute_after_commit', portal => 'execute', fetch_first => 'EXECUTE %s',
            setup  => portal_table('adv_pc10'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc10 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc10 SET s = 'new' WHERE g = 1;} },
        # ... in REPEATABLE READ, the transaction's.
        {   name   => 'portal.repeatable_read_execute', portal => 'execute', fetch_first => 'EXECUTE %s',
            isolation => 'REPEATABLE READ',
            setup  => portal_table('adv_pc11'),
            kind   => 'list', query => 'SELECT id, s FROM adv_pc11 WHERE g = 1 ORDER BY id', cols => 'id int, s text',
            change => q{UPDATE adv_pc11 SET s = 'new' WHERE g = 1;} },
    );
    # ADV_ONLY (by hand, MemoAdversarial.pm): the probes whose name matches.
    @probes = grep { $_->{name} =~ /$ENV{ADV_ONLY}/ } @probes if length($ENV{ADV_ONLY} // '');
    return @probes;
}

1;
