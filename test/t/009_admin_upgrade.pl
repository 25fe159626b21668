# ALTER EXTENSION pg_memo UPDATE from 1.0 to 1.1, then to 1.2, then to
# 1.3 (and a 1.1 install to 1.2; and installs of 1.0, 1.1 and 1.2, each
# with live entries and, from 1.2 on, a registered statement, through one
# update to the default version, 1.3), and what 1.1 changes:
# only the trigger memo.watch creates counts as watching a table. A role
# holding only the TRIGGER privilege can plant a trigger of pg_memo's name
# and function that never fires (WHEN (false), UPDATE OF a column, ...);
# 1.1 refuses queries over such a table, memo.watch replaces the trigger,
# memo.unwatch leaves it alone and memo.watched does not list it.
#
# Cached entries, registrations, watched tables and the views survive the
# update; a fresh CREATE EXTENSION installs 1.3 (pg_memo--1.2.sql and
# pg_memo--1.2--1.3.sql) with the same catalog contents as 1.0 plus the
# updates (every object:
# test/t/022_admin_install_script.pl); DROP EXTENSION works afterwards.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('upgrade');

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo VERSION '1.0';
  CREATE ROLE upg_owner;
  CREATE ROLE upg_planter;

  CREATE TABLE items (id int PRIMARY KEY, tag text);
  INSERT INTO items SELECT g, CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END
    FROM generate_series(1, 10) g;
  CREATE TABLE events (id int, day date) PARTITION BY RANGE (day);
  CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
  INSERT INTO events SELECT g, date '2026-01-01' + g FROM generate_series(1, 5) g;
  SELECT memo.watch('items');
  SELECT memo.watch('events');

  -- Owned by upg_owner; upg_planter holds only TRIGGER on it.
  CREATE TABLE planted (id int);
  INSERT INTO planted SELECT generate_series(1, 3);
  ALTER TABLE planted OWNER TO upg_owner;
  GRANT TRIGGER ON planted TO upg_planter;
});

sub sql { return $node->safe_psql('postgres', @_); }
sub stat_of { return memo_stat($node, @_); }

# Runs SQL, expecting success; returns its stderr (notices, warnings).
sub messages_of {
    my ($db, $sql) = @_;
    my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => ['-v', 'VERBOSITY=verbose']);
    is($ret, 0, "runs: $sql") or diag($err);
    return $err;
}

# Runs SQL, expecting an error; returns its stderr.
sub error_of {
    my ($db, $sql) = @_;
    my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => ['-v', 'VERBOSITY=verbose']);
    isnt($ret, 0, "fails: $sql");
    return $err;
}

my $count_sql = q{SELECT memo.count('upg.count', 'SELECT * FROM items WHERE tag = $1', '{even}')};
my $list_sql  = q{SELECT string_agg(id::text, ',' ORDER BY id)
                    FROM memo.list('upg.list', 'SELECT id FROM events ORDER BY id') AS t(id int)};
my $planted_sql = q{SET ROLE upg_owner; SELECT memo.count('upg.planted', 'SELECT * FROM planted')};

sub trigger_oid {
    my ($table) = @_;
    return sql("SELECT oid FROM pg_trigger WHERE tgrelid = '$table'::regclass AND tgname = 'pg_memo_invalidate'");
}
sub watched_list {
    return sql(q{SELECT string_agg(table_name::text, ',' ORDER BY table_name::text) FROM memo.watched});
}

# 1. On 1.0: two cached results, each hit on its second call.
is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.0', 'installed at 1.0');
is(sql($count_sql), '5', '1.0: the count computes');
is(sql($count_sql), '5', '1.0: and again');
is(stat_of('upg.count', 'hits'), '1', '1.0: the second count call is a hit');
is(sql($list_sql), '1,2,3,4,5', '1.0: the list (partitioned table) computes');
is(sql($list_sql), '1,2,3,4,5', '1.0: and again');
is(stat_of('upg.list', 'hits'), '1', '1.0: the second list call is a hit');

# 2. A look-alike planted on 1.0 by a role that holds only TRIGGER: it never
#    fires, so the table is not watched, and the query path (the 1.1
#    library, still with 1.0's SQL) refuses it.
is(sql(q{SELECT has_table_privilege('upg_planter', 'planted', 'SELECT')
              OR has_table_privilege('upg_planter', 'planted', 'INSERT')
              OR pg_has_role('upg_planter', 'upg_owner', 'USAGE')}),
   'f', 'the planter holds neither SELECT, INSERT nor the owner\'s privileges');
sql(q{
  SET ROLE upg_planter;
  CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON planted
    FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION memo.invalidation_trigger();
});
my $lookalike = trigger_oid('planted');
isnt($lookalike, '', 'the planter created the look-alike with TRIGGER alone');
like(error_of('postgres', $planted_sql), qr/55000: table public\.planted is not watched by pg_memo/,
    'before the update: a query over the look-alike\'s table is refused as not watched');

# 3. The update. The WARNING names the one table 1.0 counted as watched and
#    1.1 does not.
my $notes = messages_of('postgres', q{ALTER EXTENSION pg_memo UPDATE TO '1.1'});
like($notes, qr/WARNING:  01000: table (public\.)?planted is no longer watched by pg_memo/,
    'the update warns about the look-alike\'s table');
like($notes, qr/HINT:  Run SELECT memo\.watch\('(public\.)?planted'\);/, 'with the call that replaces it');
unlike($notes, qr/items|events/, 'and about no properly watched table');
is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.1', 'updated to 1.1');
is(sql(q{SELECT count(*) FROM pg_depend
          WHERE refclassid = 'pg_extension'::regclass
            AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_memo')
            AND classid = 'pg_proc'::regclass
            AND objid = 'memo.is_watch_trigger(oid)'::regprocedure AND deptype = 'e'}),
   '1', 'memo.is_watch_trigger is a member of the extension');
isnt(sql(q{SELECT obj_description('memo.is_watch_trigger(oid)'::regprocedure, 'pg_proc')}), '',
   'and has a comment');

# 4. The entries cached on 1.0 keep working. The update creates and replaces
#    functions, which bumps the database's routines counter at its commit
#    (docs/consistency.md): each entry is computed once more, then hits.
{
    my %before = map { $_ => [stat_of($_, 'hits'), stat_of($_, 'computations')] } qw(upg.count upg.list);
    is(sql($count_sql), '5', 'after the update: the count');
    is(sql($list_sql), '1,2,3,4,5', 'after the update: the list');
    for my $cache (qw(upg.count upg.list)) {
        is(stat_of($cache, 'computations'), $before{$cache}[1] + 1,
            "after the update: $cache is computed once (the update replaced functions)");
    }
    for my $cache (qw(upg.count upg.list)) {
        my $hits = stat_of($cache, 'hits');
        is(sql($cache eq 'upg.count' ? $count_sql : $list_sql), $cache eq 'upg.count' ? '5' : '1,2,3,4,5',
            "after the update: $cache again");
        is(stat_of($cache, 'hits'), $hits + 1, "after the update: $cache is a hit again");
    }
}

# 5. Committed writes still invalidate, through the parent and straight
#    into a partition.
{
    my $computations = stat_of('upg.count', 'computations');
    sql(q{INSERT INTO items VALUES (11, 'odd'), (12, 'even')});
    is(sql($count_sql), '6', 'after an INSERT: the new count');
    is(sql($count_sql), sql(q{SELECT count(*) FROM items WHERE tag = 'even'}), 'equal to the direct count');
    is(stat_of('upg.count', 'computations'), $computations + 1, 'computed once');
    sql(q{INSERT INTO events VALUES (6, '2026-03-01')});
    is(sql($list_sql), '1,2,3,4,5,6', 'after an INSERT into the partitioned table: the new list');
    sql(q{INSERT INTO events_2026 VALUES (7, '2026-04-01')});
    is(sql($list_sql), '1,2,3,4,5,6,7', 'after an INSERT into the partition: the new list');
}

# 5b. 1.1's deltas on a table watched since 1.0, with its live entry: a
#     write the count can absorb corrects it instead of recomputing.
{
    sql(q{SELECT memo.watch('items', deltas => true)});
    is(sql(q{SELECT deltas FROM memo.watched WHERE table_name = 'items'::regclass}), 't',
       'memo.watch(items, deltas => true) on the updated install');
    is(sql($count_sql), sql(q{SELECT count(*) FROM items WHERE tag = 'even'}), 'the count after watching with deltas');
    my $computations = stat_of('upg.count', 'computations');
    sql(q{INSERT INTO items VALUES (13, 'even')});
    sql(q{UPDATE items SET tag = 'even' WHERE id = 3});
    is(sql($count_sql), sql(q{SELECT count(*) FROM items WHERE tag = 'even'}), 'deltas: the count after two writes');
    is(stat_of('upg.count', 'computations'), $computations, 'deltas: corrected, not recomputed');
    cmp_ok(stat_of('upg.count', 'delta_corrected'), '>=', 1, 'deltas: memo.stats.delta_corrected counts it');
    # Back to the rows the later sections expect, in one transaction with
    # memo.invalidate: a fallback to table-level invalidation.
    sql(q{BEGIN; DELETE FROM items WHERE id = 13; UPDATE items SET tag = 'odd' WHERE id = 3;
          SELECT memo.invalidate('items'); COMMIT});
    is(sql($count_sql), '6', 'deltas: memo.invalidate falls back to recomputing');
    is(stat_of('upg.count', 'computations'), $computations + 1, 'deltas: recomputed once');
    is(sql(q{SELECT delta_records > 0 FROM memo.info}), 't', 'memo.info: delta_records');
}

# 6. The views and functions of 1.0 work on 1.1; the grants are kept.
is(watched_list(), 'events,events_2026,items', 'memo.watched: the watched tables, not the look-alike\'s');
is(sql(q{SELECT bool_and(triggers_enabled) AND bool_and(trigger_mode = 'always') AND bool_and(generation > 0)
           FROM memo.watched}), 't', 'memo.watched: enabled ALWAYS, with generations');
is(sql(q{SELECT count(*) FROM memo.stats WHERE cache_name IN ('upg.count', 'upg.list') AND calls > 0}), '2',
   'memo.stats: both cache names');
is(sql(q{SELECT arena_bytes > 0 AND entries >= 2 FROM memo.info}), 't', 'memo.info: a row');
is(sql(q{SELECT count(*) FROM memo.flights}), '0', 'memo.flights: works, nothing in flight');
is(sql(q{SET ROLE upg_planter; SELECT count(*) FROM memo.watched}), '3', 'memo.watched: still readable by every role');
is(sql(q{SELECT has_function_privilege('upg_planter', 'memo.reset()', 'EXECUTE')}), 'f',
   'memo.reset: still revoked from PUBLIC');

# 7. memo.watch on a watched table is idempotent: no notice, the same
#    trigger.
{
    my %oid = map { $_ => trigger_oid($_) } qw(items events events_2026);
    my $notes = messages_of('postgres', q{SELECT memo.watch('items'); SELECT memo.watch('events')});
    unlike($notes, qr/NOTICE|WARNING/, 're-watching: no notice');
    is(trigger_oid($_), $oid{$_}, "re-watching: $_ keeps its trigger") for sort keys %oid;
    is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'items'::regclass}), '1', 'and has no other');
    is(sql(q{SELECT bool_and(memo.is_watch_trigger(oid)) FROM pg_trigger WHERE tgname = 'pg_memo_invalidate'
              AND tgrelid IN ('items'::regclass, 'events'::regclass, 'events_2026'::regclass)}), 't',
       'memo.is_watch_trigger: true for the triggers memo.watch created');
    is(sql($count_sql), '6', 're-watched: the count');
    is(sql($count_sql), '6', 'and again');
}

# 8. The look-alike planted on 1.0, on 1.1.
{
    is(sql("SELECT memo.is_watch_trigger($lookalike)"), 'f', 'memo.is_watch_trigger: false for the look-alike');
    like(error_of('postgres', $planted_sql), qr/55000: table public\.planted is not watched by pg_memo/,
        'after the update: still refused as not watched');
    sql(q{SET ROLE upg_owner; SELECT memo.unwatch('planted')});
    is(trigger_oid('planted'), $lookalike, 'memo.unwatch leaves the look-alike alone');
    like(error_of('postgres', q{SET ROLE upg_planter; SELECT memo.watch('planted')}),
        qr/42501: must be owner of table (public\.)?planted/, 'the planter cannot watch the table');

    my $notes = messages_of('postgres', q{SET ROLE upg_owner; SELECT memo.watch('planted')});
    like($notes, qr/NOTICE:  00000: replaced a trigger named pg_memo_invalidate on table (public\.)?planted that was not pg_memo's/,
        'memo.watch by the owner replaces the look-alike, with a notice');
    like($notes, qr/DETAIL:  It was: CREATE TRIGGER pg_memo_invalidate .* WHEN \(false\)/,
        'which shows what it replaced');
    my $replaced = trigger_oid('planted');
    isnt($replaced, $lookalike, 'a new trigger');
    is(sql("SELECT memo.is_watch_trigger($replaced)"), 't', 'that is pg_memo\'s');
    is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'planted'::regclass}), '1', 'and the only one');

    is(sql($planted_sql), '3', 'watched: the count computes');
    is(sql($planted_sql), '3', 'and again');
    is(stat_of('upg.planted', 'hits'), '1', 'as a hit');
    sql(q{SET ROLE upg_owner; INSERT INTO planted VALUES (4)});
    is(sql($planted_sql), '4', 'an INSERT invalidates it');
    is(sql($planted_sql), sql('SELECT count(*) FROM planted'), 'the count matches the direct count');
    like(watched_list(), qr/(^|,)planted(,|$)/, 'memo.watched lists the table');
}

# 9. The other shapes a look-alike can take, planted on 1.1; also a trigger
#    of pg_memo's name that calls another function (1.0's memo.watch raised
#    42710 for it). Each is not pg_memo's, not listed, refused, kept by
#    memo.unwatch and replaced by memo.watch.
{
    sql(q{CREATE FUNCTION public.upg_other() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'});
    my %shapes = (
        update_of => 'BEFORE INSERT OR UPDATE OF id OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT'
                   . ' EXECUTE FUNCTION memo.invalidation_trigger()',
        for_each_row => 'BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW'
                      . ' EXECUTE FUNCTION memo.invalidation_trigger()',
        arguments => 'BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT'
                   . q{ EXECUTE FUNCTION memo.invalidation_trigger('x')},
        no_truncate => 'BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH STATEMENT'
                     . ' EXECUTE FUNCTION memo.invalidation_trigger()',
        after => 'AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT'
               . ' EXECUTE FUNCTION memo.invalidation_trigger()',
        constraint => 'CONSTRAINT',  # see below
        other_function => 'BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT'
                        . ' EXECUTE FUNCTION public.upg_other()',
    );
    for my $shape (sort keys %shapes) {
        my $table = "planted_$shape";
        my $create = $shape eq 'constraint'
          ? "CREATE CONSTRAINT TRIGGER pg_memo_invalidate AFTER INSERT OR UPDATE OR DELETE ON $table"
            . ' FOR EACH ROW EXECUTE FUNCTION memo.invalidation_trigger()'
          : 'CREATE TRIGGER pg_memo_invalidate ' . sprintf($shapes{$shape}, $table);
        sql(qq{
          CREATE TABLE $table (id int);
          INSERT INTO $table VALUES (1), (2);
          ALTER TABLE $table OWNER TO upg_owner;
          GRANT TRIGGER ON $table TO upg_planter;
          GRANT EXECUTE ON FUNCTION public.upg_other() TO upg_planter;
          SET ROLE upg_planter;
          $create;
        });
        my $oid = trigger_oid($table);
        my $query = qq{SET ROLE upg_owner; SELECT memo.count('upg.$shape', 'SELECT * FROM $table')};
        is(sql("SELECT memo.is_watch_trigger($oid)"), 'f', "$shape: memo.is_watch_trigger is false");
        unlike(watched_list(), qr/(^|,)$table(,|$)/, "$shape: memo.watched does not list it");
        like(error_of('postgres', $query), qr/55000: table public\.$table is not watched by pg_memo/,
            "$shape: a query over the table is refused as not watched");
        sql(qq{SET ROLE upg_owner; SELECT memo.unwatch('$table')});
        is(trigger_oid($table), $oid, "$shape: memo.unwatch leaves it");
        like(messages_of('postgres', qq{SET ROLE upg_owner; SELECT memo.watch('$table')}),
            qr/NOTICE:  00000: replaced a trigger named pg_memo_invalidate on table (public\.)?$table that was not pg_memo's/,
            "$shape: memo.watch replaces it");
        is(sql(qq{SELECT memo.is_watch_trigger(oid) FROM pg_trigger
                   WHERE tgrelid = '$table'::regclass AND tgname = 'pg_memo_invalidate'}), 't',
           "$shape: with pg_memo's trigger");
        is(sql($query), '2', "$shape: the count");
        sql(qq{INSERT INTO $table VALUES (3)});
        is(sql($query), '3', "$shape: invalidated by an INSERT");
        like(watched_list(), qr/(^|,)$table(,|$)/, "$shape: memo.watched lists it");
    }
}

# 10. A look-alike row trigger on a partitioned table is cloned to its
#     partitions. The clone cannot be dropped on its own: watching only the
#     partition names the partitioned table; watching that replaces both.
{
    sql(q{
      CREATE TABLE planted_p (id int) PARTITION BY RANGE (id);
      CREATE TABLE planted_p1 PARTITION OF planted_p FOR VALUES FROM (0) TO (100);
      INSERT INTO planted_p VALUES (1), (2);
      ALTER TABLE planted_p OWNER TO upg_owner;
      ALTER TABLE planted_p1 OWNER TO upg_owner;
      GRANT TRIGGER ON planted_p, planted_p1 TO upg_planter;
      SET ROLE upg_planter;
      CREATE TRIGGER pg_memo_invalidate BEFORE INSERT OR UPDATE ON planted_p
        FOR EACH ROW EXECUTE FUNCTION memo.invalidation_trigger();
    });
    isnt(sql(q{SELECT tgparentid FROM pg_trigger WHERE tgrelid = 'planted_p1'::regclass}), '0',
        'partitioned: the look-alike was cloned to the partition');
    my $err = error_of('postgres', q{SET ROLE upg_owner; SELECT memo.watch('planted_p1')});
    like($err, qr/42710: table (public\.)?planted_p1 has a trigger named pg_memo_invalidate that is not pg_memo's/,
        'partitioned: watching only the partition is refused');
    like($err, qr/DETAIL:  It is a clone of trigger pg_memo_invalidate on table (public\.)?planted_p\./,
        'partitioned: naming the partitioned table');
    my $notes = messages_of('postgres', q{SET ROLE upg_owner; SELECT memo.watch('planted_p')});
    like($notes, qr/replaced a trigger named pg_memo_invalidate on table (public\.)?planted_p that/,
        'partitioned: watching the partitioned table replaces its look-alike');
    is(sql(q{SELECT count(*) FILTER (WHERE memo.is_watch_trigger(oid)) || '/' || count(*) FROM pg_trigger
              WHERE tgrelid IN ('planted_p'::regclass, 'planted_p1'::regclass)}), '2/2',
       'partitioned: pg_memo\'s trigger on both, and no other');
    like(watched_list(), qr/planted_p,planted_p1/, 'partitioned: memo.watched lists both');
    my $query = q{SET ROLE upg_owner; SELECT memo.count('upg.planted_p', 'SELECT * FROM planted_p')};
    is(sql($query), '2', 'partitioned: the count');
    sql(q{INSERT INTO planted_p1 VALUES (3)});
    is(sql($query), '3', 'partitioned: invalidated by an INSERT into the partition');
}

# 10b. The update to 1.2 (registered statements), with live entries: as in
#      4, the functions it creates move the routines counter, so each entry
#      is computed once more, then hits; memo.statements comes with it.
{
    my $count = sql($count_sql);
    my $computed = stat_of('upg.count', 'computations');
    is(sql(q{SELECT to_regclass('memo.entries') IS NULL}), 't', '1.1: no memo.entries yet');
    messages_of('postgres', q{ALTER EXTENSION pg_memo UPDATE TO '1.2'});
    is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.2', 'updated to 1.2');
    is(sql($count_sql), $count, '1.2: the count cached on 1.1');
    is(sql(q{SELECT state || ' ' || kind || ' ' || rows FROM memo.entries WHERE cache_name = 'upg.count'}),
       "current count $count", '1.2: memo.entries shows the count computed again');
    my $lists = sql(q{SELECT count(*) FROM memo.entries WHERE cache_name = 'upg.list'});
    is(sql(q{SELECT memo.reset('upg.list')}), $lists, '1.2: memo.reset(cache_name) removes what memo.entries showed');
    is(sql(q{SELECT count(*) FROM memo.entries WHERE cache_name = 'upg.list'}), '0', '1.2: none left');
    is(stat_of('upg.count', 'computations'), $computed + 1, '1.2: computed once (the update created functions)');
    my $hits = stat_of('upg.count', 'hits');
    is(sql($count_sql), $count, '1.2: the count again');
    is(stat_of('upg.count', 'hits'), $hits + 1, '1.2: a hit');
    isnt(sql(q{SELECT memo.cache_statement('SELECT id FROM items WHERE tag = $1')}), '',
        '1.2: a statement registers');
    is(sql(q{SELECT count(*) FROM memo.statements}), '1', '1.2: in memo.statements');
    is(sql(q{SELECT state || ' ' || calls FROM memo.registered_statements}), 'serving 0',
       '1.2: memo.registered_statements, made again over memo.stats');
    my ($ret, undef, $err) = $node->psql('postgres', q{SELECT memo.count('upg.fails', 'SELECT * FROM items WHERE 1 / (id - id) = 1')});
    like($err, qr/division by zero/, '1.2: a failing computation');
    is(sql(q{SELECT computations || ' ' || failures FROM memo.stats WHERE cache_name = 'upg.fails'}), '0 1',
       '1.2: memo.stats.failures counts it, computations does not');
    sql(q{SELECT memo.uncache_statement('SELECT id FROM items WHERE tag = $1')});
    # 1.2's scope columns on a table watched since 1.0 (scopes.sql has the rest)
    sql(q{SELECT memo.watch('items', true, '{tag}')});
    is(sql(q{SELECT scope_columns FROM memo.watched WHERE table_name = 'items'::regclass}), '{tag}',
       '1.2: memo.watch(items, true, {tag}) on the updated install');
    is(sql(q{SELECT memo.count('upg.scoped', 'SELECT * FROM items WHERE tag = $1', '{even}')}),
       sql(q{SELECT count(*) FROM items WHERE tag = 'even'}), '1.2: a scoped count');
    sql(q{SELECT memo.watch('items', deltas => true)});
}

# In database $db, over a watched table holding 1 and 2: the count (computed),
# again as a hit, and after an INSERT of 3 invalidated. $label names the case.
sub count_hits_then_invalidates {
    my ($db, $cache, $table, $label) = @_;
    my $q = qq{SELECT memo.count('$cache', 'SELECT * FROM $table')};
    is($node->safe_psql($db, $q), '2', "$label: the count");
    is($node->safe_psql($db, $q), '2', "$label: and again");
    is($node->safe_psql($db, qq{SELECT hits FROM memo.stats WHERE cache_name = '$cache'}), '1', "$label: as a hit");
    $node->safe_psql($db, "INSERT INTO $table VALUES (3)");
    is($node->safe_psql($db, $q), '3', "$label: invalidated by an INSERT");
}

# 10c. A database installed at 1.1, with a live entry, updated to 1.2.
{
    $node->safe_psql('postgres', 'CREATE DATABASE at11');
    $node->safe_psql('at11', q{
      CREATE EXTENSION pg_memo VERSION '1.1';
      CREATE TABLE t11 (id int);
      INSERT INTO t11 VALUES (1), (2);
      SELECT memo.watch('t11', deltas => true);
    });
    my $q = q{SELECT memo.count('at11.count', 'SELECT * FROM t11')};
    $node->safe_psql('at11', $q);
    $node->safe_psql('at11', q{ALTER EXTENSION pg_memo UPDATE TO '1.2'});
    is($node->safe_psql('at11', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.2',
        '1.1 install: updated to 1.2');
    # The update's function DDL made the entry stale: computed once more.
    count_hits_then_invalidates('at11', 'at11.count', 't11', '1.1 install on 1.2');
    is($node->safe_psql('at11', q{SELECT state || ' ' || rows || ' ' || deltas FROM memo.entries
                                  WHERE datname = current_database() AND cache_name = 'at11.count'}),
        'current 3 true', '1.1 install on 1.2: memo.entries shows its entry');
}

# 10d. Every shipped version, installed as such (1.0 and 1.1 from their
#      scripts, 1.2 from pg_memo--1.2.sql) with live entries, a list and a
#      count over a table watched as that version can, and from 1.2 on a
#      registered statement served from the cache, goes through one ALTER
#      EXTENSION pg_memo UPDATE to the default version, 1.3 (its script
#      adds memo.statements.shape_id and fills it for the registrations in
#      place, which then also serve their statement sent another way). After it: the entries
#      serve the direct results, computed at most once more (an update that
#      runs DDL makes them stale once), then hits; writes invalidate; the
#      registration is kept, serves and is invalidated; a new registration
#      works.
{
    my $default = sql(q{SELECT default_version FROM pg_available_extensions WHERE name = 'pg_memo'});
    is($default, '1.3', 'pg_memo.control: the default version is 1.3');
    for my $version (qw(1.0 1.1 1.2)) {
        (my $db = "install_$version") =~ s/\./_/;
        (my $tag = "v$version") =~ s/\./_/;
        my $registers = $version ge '1.2';
        my $watch = $version eq '1.0' ? q{SELECT memo.watch('items')}
                  : $version eq '1.1' ? q{SELECT memo.watch('items', deltas => true)}
                  :                     q{SELECT memo.watch('items', true, '{team}')};
        $node->safe_psql('postgres', "CREATE DATABASE $db");
        $node->safe_psql($db, qq{
          CREATE EXTENSION pg_memo VERSION '$version';
          CREATE TABLE items (id int PRIMARY KEY, team int NOT NULL);
          INSERT INTO items SELECT g, g % 3 FROM generate_series(1, 30) g;
          $watch;
        });
        my $run = sub { return $node->safe_psql($db, $_[0]) };
        my $stat = sub {
            my ($cache, $column) = @_;
            return $run->(qq{SELECT coalesce(sum($column), 0) FROM memo.stats
                              WHERE datname = current_database() AND cache_name = '$cache'});
        };
        my %query = (
            "$tag.count" => qq{SELECT memo.count('$tag.count', 'SELECT * FROM items WHERE team = \$1', '{1}')},
            "$tag.list"  => qq{SELECT string_agg(id::text, ',' ORDER BY id)
                                 FROM memo.list('$tag.list', 'SELECT id FROM items WHERE team = \$1 ORDER BY id LIMIT 5',
                                                '{1}') AS t(id int)},
        );
        my %direct = (
            # (not the registered statement's shape: served by the executor)
            "$tag.count" => q{SELECT count(id) FROM items WHERE team = 1},
            "$tag.list"  => q{SELECT string_agg(id::text, ',' ORDER BY id)
                                FROM (SELECT id FROM items WHERE team = 1 ORDER BY id LIMIT 5) s},
        );
        my $statement = 'SELECT count(*) FROM items WHERE team = 1';
        for my $cache (sort keys %query) {
            is($run->($query{$cache}), $run->($direct{$cache}), "$version install: $cache computes");
            is($run->($query{$cache}), $run->($direct{$cache}), "$version install: $cache again");
            is($stat->($cache, 'hits'), '1', "$version install: $cache is a hit");
        }
        my $query_id;
        if ($registers) {
            $query_id = $run->(qq{SELECT memo.cache_statement('$statement', cache_name => '$tag.stmt')});
            $run->($statement) for 1 .. 2;
            is($run->(q{SELECT calls || ' ' || hits FROM memo.registered_statements}), '2 1',
               "$version install: the registered statement is served");
        }

        my $notes = messages_of($db, 'ALTER EXTENSION pg_memo UPDATE');
        unlike($notes, qr/WARNING|ERROR/, "$version install: the update raises no warning");
        is($run->(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), $default,
           "$version install: updated to $default");

        for my $cache (sort keys %query) {
            my ($hits, $computed) = ($stat->($cache, 'hits'), $stat->($cache, 'computations'));
            is($run->($query{$cache}), $run->($direct{$cache}), "$version install, updated: $cache serves");
            cmp_ok($stat->($cache, 'computations'), '<=', $computed + 1,
                   "$version install, updated: $cache computed at most once more");
            my $hits_now = $stat->($cache, 'hits');
            is($run->($query{$cache}), $run->($direct{$cache}), "$version install, updated: $cache again");
            is($stat->($cache, 'hits'), $hits_now + 1, "$version install, updated: $cache is a hit");
        }
        if ($registers) {
            is($run->(q{SELECT query_id || ' ' || cache_name || ' ' || state FROM memo.registered_statements}),
               "$query_id $tag.stmt serving", "$version install, updated: the registration is kept");
            like($run->("EXPLAIN (COSTS OFF) $statement"), qr/Custom Scan \(pg_memo\)/,
                 "$version install, updated: the statement gets pg_memo's node");
            $run->($statement);
            my $hits = $stat->("$tag.stmt", 'hits');
            is($run->($statement), $run->($direct{"$tag.count"}), "$version install, updated: the statement");
            is($stat->("$tag.stmt", 'hits'), $hits + 1, "$version install, updated: served from the cache");
            # 1.3: the registration has its shape, and serves its statement
            # sent another way (a bigint for the integer).
            is($run->(q{SELECT count(*) FROM memo.statements WHERE shape_id IS NOT NULL}), '1',
               "$version install, updated: the registration has its shape");
            like($run->(q{EXPLAIN (COSTS OFF) SELECT count(*) FROM items WHERE team = 1::bigint}),
                 qr/Custom Scan \(pg_memo\)/, "$version install, updated: its statement sent another way is served");
            is($run->(q{SELECT count(*) FROM items WHERE team = 1::bigint}), $run->($direct{"$tag.count"}),
               "$version install, updated: and exact");
        }

        # A write to team 1 changes both results and the statement's.
        $run->(q{INSERT INTO items VALUES (31, 1)});
        for my $cache (sort keys %query) {
            is($run->($query{$cache}), $run->($direct{$cache}), "$version install, updated: $cache after a write");
        }
        is($run->($statement), $run->($direct{"$tag.count"}), "$version install, updated: the statement after a write")
          if $registers;

        # 1.2's functions on the updated install: a registration, the entries.
        $run->(q{SELECT memo.cache_statement('SELECT id FROM items WHERE team = 0 ORDER BY id LIMIT 2', 'new.stmt')});
        $run->(q{SELECT id FROM items WHERE team = 2 ORDER BY id LIMIT 2}) for 1 .. 2;
        is($stat->('new.stmt', 'hits'), '1', "$version install, updated: a new registration serves");
        is($run->(qq{SELECT count(*) FROM memo.entries
                      WHERE datname = current_database() AND cache_name IN ('$tag.count', '$tag.list')}), '2',
           "$version install, updated: memo.entries shows both entries");
    }
}

# 11. A fresh CREATE EXTENSION installs 1.3 (pg_memo--1.2.sql, then
#     pg_memo--1.2--1.3.sql), with the same catalog contents as 1.0 plus
#     the updates (a sample;
#     test/t/022_admin_install_script.pl compares every object).
my $fingerprint = q{
  WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'pg_memo'),
  members AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
  SELECT string_agg(line, E'\n' ORDER BY line) FROM (
    SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_functiondef(p.oid)
           || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
           || ' acl=' || coalesce(p.proacl::text, '-') AS line
      FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
    UNION ALL
    SELECT 'relation ' || c.oid::regclass || ' ' || c.relkind::text
           || ' ' || coalesce(pg_get_viewdef(c.oid), '')
           || ' acl=' || coalesce(c.relacl::text, '-')
      FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
    UNION ALL
    SELECT 'other ' || pg_describe_object(m.classid, m.objid, 0)
      FROM members m WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass)
  ) lines};
{
    # The database installed at 1.0 and updated to 1.1 and 1.2 above goes on
    # to the default version.
    messages_of('postgres', 'ALTER EXTENSION pg_memo UPDATE');
    is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.3', 'updated on from 1.2 to 1.3');
    $node->safe_psql('postgres', 'CREATE DATABASE fresh');
    $node->safe_psql('fresh', 'CREATE EXTENSION pg_memo');
    is($node->safe_psql('fresh', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.3',
        'a fresh CREATE EXTENSION installs 1.3');
    is($node->safe_psql('fresh', $fingerprint), sql($fingerprint),
        'with the same functions, tables, views, comments and grants as 1.0 updated to 1.3');

    $node->safe_psql('fresh', q{
      CREATE TABLE t (id int);
      INSERT INTO t VALUES (1), (2);
      SELECT memo.watch('t');
    });
    count_hits_then_invalidates('fresh', 'fresh.count', 't', 'fresh 1.2');
    is($node->safe_psql('fresh', q{SELECT string_agg(table_name::text, ',') FROM memo.watched}), 't',
        'fresh 1.2: memo.watched');

    # Unwatched, nothing outside the extension depends on it.
    $node->safe_psql('fresh', q{SELECT memo.unwatch('t'); DROP EXTENSION pg_memo});
    is($node->safe_psql('fresh', q{SELECT count(*) FROM pg_extension WHERE extname = 'pg_memo'}), '0',
        'fresh 1.2: DROP EXTENSION after unwatch');
}

# 12. DROP EXTENSION on the updated database takes the triggers with it.
{
    messages_of('postgres', 'SET client_min_messages = warning; DROP EXTENSION pg_memo CASCADE');
    is(sql(q{SELECT count(*) FROM pg_extension WHERE extname = 'pg_memo'}), '0', 'updated: DROP EXTENSION');
    is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgname = 'pg_memo_invalidate'}), '0', 'and no trigger is left');
    # (The schema memo that CREATE EXTENSION created is not a member: it stays, empty.)
    is(sql(q{SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'memo'::regnamespace)
                  + (SELECT count(*) FROM pg_class WHERE relnamespace = 'memo'::regnamespace)}), '0',
       'nor any function or view of it');
    sql(q{INSERT INTO items VALUES (13, 'odd')});
    is(sql(q{SELECT count(*) FROM items}), '13', 'the tables are writable without it');
    sql('CREATE EXTENSION pg_memo');
    is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'pg_memo'}), '1.3', 'and it can be created again');
}

$node->stop;
done_testing();
