# Transaction and catalog edge cases that need more than one session:
# savepoints, two-phase commit finished from another session, and DROP
# EXTENSION / CREATE EXTENSION under another session's prepared statement.
# Every step waits for an observable state; nothing depends on timing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('edge', conf => 'max_prepared_transactions = 4');

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE acct (id int PRIMARY KEY);
  INSERT INTO acct SELECT generate_series(1, 5);
  SELECT memo.watch('acct');
  CREATE TABLE audit (note text);
  CREATE VIEW acct_view AS SELECT * FROM acct;
  CREATE ROLE edge_reader;
  GRANT SELECT ON acct_view TO edge_reader;
});

# The ids, as one memoized text, read in a new session each time.
my $ids_sql = q{SELECT s FROM memo.list('ids', 'SELECT string_agg(id::text, '','' ORDER BY id) FROM acct') AS t(s text)};
sub ids_elsewhere { return $node->safe_psql('postgres', $ids_sql); }
sub stat_of { return memo_stat($node, @_); }

# 1. Savepoints. A released savepoint's write is the transaction's: private
#    until the commit, then seen by the very next call anywhere. A write
#    rolled back to a savepoint never reaches anyone.
{
    is(ids_elsewhere(), '1,2,3,4,5', 'cached before the writer starts');
    my $w = $node->background_psql('postgres');
    $w->query_safe('BEGIN');
    $w->query_safe('SAVEPOINT gone');
    $w->query_safe('INSERT INTO acct VALUES (100)');
    $w->query_safe('ROLLBACK TO gone');
    $w->query_safe('SAVEPOINT kept');
    $w->query_safe('INSERT INTO acct VALUES (6)');
    $w->query_safe('RELEASE kept');
    is($w->query_safe($ids_sql), '1,2,3,4,5,6', 'the writer sees its released write, not the rolled-back one');
    is(ids_elsewhere(), '1,2,3,4,5', 'another session sees neither before the commit');
    is(ids_elsewhere(), '1,2,3,4,5', 'nor when served from the cache');
    $w->query_safe('COMMIT');
    is(ids_elsewhere(), '1,2,3,4,5,6', 'after the commit: the released write, at once');

    # Only a rolled-back savepoint wrote: the commit changes nothing.
    $w->query_safe('BEGIN');
    $w->query_safe('SAVEPOINT s');
    $w->query_safe('DELETE FROM acct');
    is($w->query_safe($ids_sql), '', 'the writer sees its own delete');
    is(ids_elsewhere(), '1,2,3,4,5,6', 'another session does not');
    $w->query_safe('ROLLBACK TO s');
    $w->query_safe('COMMIT');
    is(ids_elsewhere(), '1,2,3,4,5,6', 'the rolled-back delete never shows');
    $w->quit;
}

# 2. Two-phase commit of a transaction that wrote a watched table: the
#    PREPARE is accepted, other sessions keep being served what is
#    committed, and COMMIT PREPARED from another session is seen at once.
{
    $node->safe_psql('postgres', q{BEGIN; INSERT INTO acct VALUES (7); PREPARE TRANSACTION 'edge_write'});
    is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '1', 'a write to a watched table prepares');
    is(ids_elsewhere(), '1,2,3,4,5,6', 'while prepared, the write is not seen');
    $node->safe_psql('postgres', q{COMMIT PREPARED 'edge_write'});
    is(ids_elsewhere(), '1,2,3,4,5,6,7', 'after COMMIT PREPARED, it is');
    $node->safe_psql('postgres', 'DELETE FROM acct WHERE id = 7');
}

# 3. Prepared transactions that did not write watched tables: reads in
#    between from other sessions, then COMMIT PREPARED or ROLLBACK PREPARED
#    from yet another session. No read is ever stale.
for my $finish ('COMMIT PREPARED', 'ROLLBACK PREPARED') {
    my $p = $node->background_psql('postgres');
    $p->query_safe('BEGIN');
    is($p->query_safe($ids_sql), '1,2,3,4,5,6', "$finish: the preparing transaction reads the cache");
    $p->query_safe(q{INSERT INTO audit VALUES ('x')});
    $p->query_safe(q{PREPARE TRANSACTION 'edge_audit'});
    $p->quit;
    is(ids_elsewhere(), '1,2,3,4,5,6', "$finish: read while prepared");
    $node->safe_psql('postgres', qq{$finish 'edge_audit'});
    is(ids_elsewhere(), '1,2,3,4,5,6', "$finish: read after it, from a third session");
    $node->safe_psql('postgres', 'INSERT INTO acct VALUES (7)');
    is(ids_elsewhere(), '1,2,3,4,5,6,7', "$finish: a later commit is still seen at once");
    $node->safe_psql('postgres', 'DELETE FROM acct WHERE id = 7');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM audit'), '1', 'one prepared insert committed, one rolled back');

# 4. A prepared DROP VIEW: until it is finished, the view's entry is what
#    is committed (as during any uncommitted DDL) and is served; after
#    ROLLBACK PREPARED it still is, after COMMIT PREPARED the next call
#    finds no view.
{
    my $view_sql = q{SELECT memo.count('view', 'SELECT * FROM acct_view')};
    is($node->safe_psql('postgres', $view_sql), '6', 'the view query is cached');
    for my $finish ('ROLLBACK PREPARED', 'COMMIT PREPARED') {
        $node->safe_psql('postgres', q{BEGIN; DROP VIEW acct_view; PREPARE TRANSACTION 'edge_drop_view'});
        my $hits = stat_of('view', 'hits');
        is($node->safe_psql('postgres', $view_sql), '6', "$finish: while prepared, the committed result");
        is(stat_of('view', 'hits'), $hits + 1, "$finish: served from the cache");
        $node->safe_psql('postgres', qq{$finish 'edge_drop_view'});
        if ($finish eq 'ROLLBACK PREPARED') {
            is($node->safe_psql('postgres', $view_sql), '6', 'ROLLBACK PREPARED: the view is still there');
            is(stat_of('view', 'hits'), $hits + 2, 'ROLLBACK PREPARED: and its entry still served');
        } else {
            my ($ret, undef, $next_err) = $node->psql('postgres', $view_sql);
            like($next_err, qr/relation "acct_view" does not exist/, 'COMMIT PREPARED: the next call finds no view');
        }
    }
    $node->safe_psql('postgres', q{
      CREATE VIEW acct_view AS SELECT * FROM acct;
      GRANT SELECT ON acct_view TO edge_reader;
    });
}

# 5. A prepared REVOKE on a view: a read in between still has the privilege
#    (and caches), and after COMMIT PREPARED from another session the hit's
#    privilege re-check refuses it.
{
    my $as_reader = q{SET ROLE edge_reader; SELECT memo.count('view.reader', 'SELECT * FROM acct_view')};
    is($node->safe_psql('postgres', $as_reader), '6', 'the reader caches through the view');
    $node->safe_psql('postgres',
        q{BEGIN; REVOKE SELECT ON acct_view FROM edge_reader; PREPARE TRANSACTION 'edge_revoke'});
    is($node->safe_psql('postgres', $as_reader), '6', 'while prepared, the privilege still holds');
    $node->safe_psql('postgres', q{COMMIT PREPARED 'edge_revoke'});
    my ($ret, $out, $err) = $node->psql('postgres', $as_reader);
    like($err, qr/permission denied for view acct_view/, 'after COMMIT PREPARED the reader is refused');
    is($out, '', 'and served nothing');
}

# 6. DROP EXTENSION, a write while no trigger watches, CREATE EXTENSION and
#    watch: another session's prepared statement sees the write.
{
    my $b = $node->background_psql('postgres');
    $b->query_safe(q{PREPARE ext_count AS SELECT memo.count('ext', 'SELECT * FROM acct')});
    is($b->query_safe('EXECUTE ext_count'), '6', 'the prepared statement computes');
    is($b->query_safe('EXECUTE ext_count'), '6', 'and hits');
    $node->safe_psql('postgres', q{
      SET client_min_messages = warning;
      DROP EXTENSION pg_memo CASCADE;
      INSERT INTO acct VALUES (8);
      CREATE EXTENSION pg_memo;
      SELECT memo.watch('acct');
    });
    is($b->query_safe('EXECUTE ext_count'), '7', 'after CREATE EXTENSION it sees the write made in between');
    $b->quit;
}

# 5. Loading pg_memo changes nothing for other objects: dropping a trigger
#    asks whether it is pg_memo's, and that must not need USAGE on a schema
#    named memo (here an application's own, in a database without the
#    extension, that the role may not use). Found by review.
{
    $node->safe_psql('postgres', q{
      CREATE DATABASE app;
      CREATE ROLE app_user LOGIN;
    });
    $node->safe_psql('app', q{
      CREATE SCHEMA memo;
      REVOKE ALL ON SCHEMA memo FROM PUBLIC;
      CREATE SCHEMA work AUTHORIZATION app_user;
      CREATE FUNCTION work.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
    });
    my ($rc, $out, $err) = $node->psql('app', q{
      CREATE TABLE work.t (i int);
      CREATE TRIGGER tr AFTER INSERT ON work.t FOR EACH STATEMENT EXECUTE FUNCTION work.noop();
      DROP TRIGGER tr ON work.t;
      CREATE TRIGGER tr AFTER INSERT ON work.t FOR EACH STATEMENT EXECUTE FUNCTION work.noop();
      DROP TABLE work.t;
      CREATE TEMP TABLE tt (i int);
      CREATE TRIGGER tr AFTER INSERT ON tt FOR EACH STATEMENT EXECUTE FUNCTION work.noop();
    }, extra_params => ['-U', 'app_user', '-v', 'ON_ERROR_STOP=1']);
    is($rc, 0, 'a role without USAGE on a schema named memo drops its triggers and tables');
    is($err, '', 'without an error');
}

is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight left behind');
$node->stop;
done_testing();
