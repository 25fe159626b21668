# Hostile input at the SQL level: pseudo-random calls of memo.list,
# memo.list_as, memo.count, memo.watch, memo.unwatch, memo.invalidate and
# directory.cached_list_employees with garbage, multiple statements, DDL,
# DML, writable CTEs, long texts (MBs), odd unicode, wrong parameter counts
# and types, NULLs, huge values and arrays, and odd cache names. Two
# sessions run the inputs at once, in autocommit, savepoint, REPEATABLE READ
# and non-owner segments.
#
# Every outcome is classified by SQLSTATE. The test fails on a crash (a
# postmaster restart, "terminated by signal" in the log), on an unclear
# error (XX000, or a message that names no problem), on a write or DDL that
# a memo function let through, and on a cached directory listing that
# differs from the uncached one. Afterwards the cache must still be right.
#
# CI runs 3000 inputs (a few seconds). Longer runs:
#   PG_MEMO_FUZZ_INPUTS=100000 PG_MEMO_FUZZ_SEED=7 PG_MEMO_FUZZ_MAX_MB=32 \
#   PG_MEMO_FUZZ_HUGE=1 make installcheck REGRESS= PROVE_TESTS=test/t/006_serve_fuzz.pl
# (PG_MEMO_FUZZ_HUGE adds a call whose key would pass 1 GB: about 2 GB of
# backend memory for a few seconds.)
use strict;
use warnings;
use utf8;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $inputs_wanted = $ENV{PG_MEMO_FUZZ_INPUTS} // 3000;
my $seed = $ENV{PG_MEMO_FUZZ_SEED} // 6;
my $max_mb = $ENV{PG_MEMO_FUZZ_MAX_MB} // 4;
my $huge = $ENV{PG_MEMO_FUZZ_HUGE} // 0;
my $streams = 2;
srand($seed);

my $node = memo_node('fuzz', init => [extra => ['--encoding=UTF8', '--locale=C']], conf => q{
pg_memo.cache_size = '16MB'
statement_timeout = '5s'
# ERRORs by the thousand, some quoting MBs of query text, are not logged;
# LOG (a backend "terminated by signal") and FATAL/PANIC still are.
log_min_messages = log
log_min_error_statement = panic
log_statement = none
});

$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo_directory CASCADE;
  SELECT directory.directory_seed(300);
  CREATE TABLE fz (id int PRIMARY KEY, v text, n numeric, t timestamptz, j jsonb, a int[]);
  INSERT INTO fz SELECT g, 'v' || (g % 13), g / 7.0, '2024-01-01'::timestamptz + g * interval '1 hour',
                        jsonb_build_object('k', g % 5), ARRAY[g, g + 1]
    FROM generate_series(1, 200) g;
  SELECT memo.watch('fz');
  CREATE TABLE fz_s1 (id int, v text);
  INSERT INTO fz_s1 SELECT g, 's' || g FROM generate_series(1, 20) g;
  CREATE TABLE fz_part (k int, v text) PARTITION BY LIST (k);
  CREATE TABLE fz_part_1 PARTITION OF fz_part FOR VALUES IN (1);
  CREATE TABLE fz_part_2 PARTITION OF fz_part FOR VALUES IN (2);
  INSERT INTO fz_part VALUES (1, 'a'), (2, 'b');
  CREATE TABLE fz_inh (extra int) INHERITS (fz_s1);
  CREATE UNLOGGED TABLE fz_unlogged (id int);
  CREATE TABLE fz_unwatched (id int);
  CREATE VIEW fz_view AS SELECT id, v FROM fz WHERE id % 2 = 0;
  CREATE MATERIALIZED VIEW fz_mv AS SELECT id FROM fz;
  CREATE SEQUENCE fz_seq;
  CREATE TABLE "Odd Name" (id int);
  CREATE ROLE fuzz_user;
  GRANT SELECT ON fz, fz_s1, fz_view TO fuzz_user;
});

my $fz_checksum_sql = q{SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM fz t};
my $fz_checksum = $node->safe_psql('postgres', $fz_checksum_sql);
# A crash of any backend makes the postmaster end every session (and, with
# restart_after_crash on, reinitialize shared memory: TAP clusters have it
# off and simply stop). pg_postmaster_start_time() changes only when the
# postmaster itself restarts, so a session opened now and still there at the
# end is the proof that no backend crashed.
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $run_timeout = $PostgreSQL::Test::Utils::timeout_default * (3 + $inputs_wanted / 1000);
my $sentinel = $node->background_psql('postgres', timeout => 2 * $run_timeout);
my $sentinel_pid = $sentinel->query_safe('SELECT pg_backend_pid()');
my $arena_baseline = $node->safe_psql('postgres', 'SELECT used_bytes FROM memo.info');

# ---- generators ---------------------------------------------------------------
# Each returns SQL text (an expression or a statement); long values are built
# by the server (repeat(), generate_series) so that the scripts stay small.

sub pick { return $_[int(rand(@_))]; }
sub chance { return rand() < $_[0]; }

sub lit {
    my ($s) = @_;
    return 'NULL' unless defined $s;
    $s =~ s/'/''/g;
    return "'$s'";
}

# A size in bytes: mostly small, sometimes up to $max_mb MB.
sub big_size {
    return pick(1000, 10_000, 100_000, 1_000_000, int($max_mb * 1_000_000 * rand()) + 1);
}

my @odd_chars = ("\x{202E}", "\x{FEFF}", "\x{0301}", "\x{1F600}", "\x{FFFD}", "\x{E000}", "\x{1D11E}",
                 "\x{2028}", "\x{00A0}", "\x{200B}", "日", "é", "ß", "\t", "\n", "\r", "\x01", "\x7F",
                 "'", '"', "\\", ';', '$', '$$', '$1', '--', '/*', '*/', '(', ')', ',', '%', '_', ':',
                 'SELECT', 'FROM', 'fz', ' ', ' ', 'a', '1');

sub garbage {
    my $n = 1 + int(rand(pick(5, 20, 80)));
    return join('', map { pick(@odd_chars) } 1 .. $n);
}

my @valid_queries = (
    ['SELECT * FROM fz WHERE id <= $1::int', 1],
    ['SELECT id, v FROM fz ORDER BY id LIMIT $1::int OFFSET $2::int', 2],
    ['SELECT count(*) FROM fz', 0],
    ['SELECT v, count(*) FROM fz GROUP BY v ORDER BY v', 0],
    ['SELECT f.id, e.full_name FROM fz f JOIN directory.employees e ON e.id = f.id WHERE f.id < $1::int', 1],
    ['WITH x AS (SELECT id FROM fz WHERE id % 7 = 0) SELECT * FROM x', 0],
    ['SELECT * FROM fz_view', 0],
    ['SELECT * FROM fz_part WHERE k = $1::int', 1],
    ['SELECT * FROM fz_s1', 0],
    ['TABLE fz', 0],
    ['VALUES (1, $1), (2, $2)', 2],
    ['SELECT $1', 1],
    ['SELECT $1::int + $2::int', 2],
    ['SELECT id FROM fz UNION SELECT id FROM directory.employees', 0],
    ['SELECT id, row_number() OVER (ORDER BY v, id) FROM fz', 0],
    ['SELECT * FROM fz WHERE v = ANY($1::text[])', 1],
    ['SELECT * FROM fz WHERE j @> $1::jsonb', 1],
    ['SELECT * FROM fz WHERE t < $1::timestamptz', 1],
    ['SELECT * FROM fz WHERE n > $1::numeric', 1],
    ['SELECT length($1) FROM fz LIMIT 1', 1],
    ['SELECT * FROM fz WHERE id = $2::int', 2],
    ['SELECT 1 FROM fz a, fz b', 0],
    ['SELECT * FROM fz WHERE id = $1::int; -- trailing note', 1],
    ['/* leading */ SELECT id FROM fz WHERE id < $1::int ;; ', 1],
);

# Query texts that must never run as a memo call (writes, DDL, several
# statements, side effects): each must end in an error, and fz must stay as
# it was.
my @hostile_queries = (
    q{INSERT INTO fz (id) VALUES (100000)}, q{UPDATE fz SET v = 'pwned'}, q{DELETE FROM fz},
    q{TRUNCATE fz}, q{DROP TABLE fz}, q{ALTER TABLE fz ADD COLUMN pwned int},
    q{CREATE TABLE pwned (a int)}, q{WITH d AS (DELETE FROM fz RETURNING *) SELECT * FROM d},
    q{WITH u AS (UPDATE fz SET v = 'pwned' RETURNING 1) SELECT count(*) FROM u},
    q{WITH i AS (INSERT INTO fz (id) VALUES (100001) RETURNING id) SELECT * FROM i},
    q{SELECT 1; DELETE FROM fz}, q{SELECT * FROM fz; DROP TABLE fz}, q{SELECT 1;SELECT 2},
    q{MERGE INTO fz USING (SELECT 1 AS id) s ON fz.id = s.id WHEN MATCHED THEN DELETE},
    q{SELECT * INTO pwned FROM fz}, q{CREATE TABLE pwned AS SELECT * FROM fz}, q{COPY fz TO STDOUT},
    q{DO $$BEGIN DELETE FROM fz; END$$}, q{SELECT * FROM fz FOR UPDATE}, q{SELECT * FROM fz FOR SHARE SKIP LOCKED},
    q{SELECT pg_terminate_backend(pg_backend_pid())}, q{SELECT pg_cancel_backend(pg_backend_pid())},
    q{SELECT set_config('search_path', 'pwned', false)}, q{SELECT nextval('fz_seq')},
    q{SELECT setval('fz_seq', 1)}, q{SELECT pg_advisory_lock(1)}, q{SELECT lo_create(0)},
    q{SELECT txid_current()}, q{SELECT pg_sleep(0)}, q{SELECT * FROM fz WHERE random() < 2},
    q{SELECT now()}, q{EXPLAIN ANALYZE DELETE FROM fz}, q{EXPLAIN SELECT 1}, q{PREPARE p AS SELECT 1},
    q{EXECUTE p}, q{BEGIN}, q{COMMIT}, q{ROLLBACK}, q{VACUUM fz}, q{ANALYZE fz}, q{LOCK fz}, q{LISTEN x},
    q{NOTIFY x}, q{SET search_path = pwned}, q{RESET ALL}, q{DISCARD ALL}, q{CHECKPOINT},
    q{GRANT ALL ON fz TO PUBLIC}, q{CREATE EXTENSION hstore}, q{DROP EXTENSION pg_memo CASCADE},
    q{ALTER SYSTEM SET work_mem = '1MB'}, q{SELECT memo.reset()}, q{SELECT memo.unwatch('fz')},
    q{SELECT memo.invalidate('fz')}, q{SELECT * FROM memo.list('x', 'DELETE FROM fz') t(a int)},
    q{CALL pwned()}, q{SELECT pg_reload_conf()}, q{SELECT pg_stat_reset()}, q{SELECT pg_notify('x', 'y')},
    q{SELECT pg_read_file('/etc/passwd')}, q{SELECT * FROM pg_catalog.pg_authid}, q{SELECT * FROM fz_unwatched},
    q{SELECT * FROM fz_mv}, q{SELECT * FROM fz_seq},
    q{SELECT * FROM directory.employees WHERE directory.hire_employee(1, 'x') > 0},
    q{SELECT memo.count('inner', 'SELECT 1')}, q{SELECT 1 WHERE (SELECT count(*) FROM pg_stat_activity) > 0},
    q{SELECT E'\xff'}, q{SELECT U&'\0000'},
);

my @odd_queries = (
    '', ' ', ';', ';;', '--', '/*', '/* unterminated', '$$', '$1', "'", '"', 'SELECT', 'SELECT (',
    '\\', '\\x', 'SELECT $0', 'SELECT $2147483647', 'SELECT $99999999999', 'SELECT $1 $2',
    'SELECT 1 AS ' . ('a' x 200), "SELECT 'é\x{1F600}\x{202E}' AS \"列\"", "SELECT '\x{FEFF}'",
    'SELECT * FROM "Odd Name"', 'SELECT * FROM nonexistent', 'SELECT nonexistent FROM fz',
    'SELECT * FROM fz WHERE', 'SELECT * FROM fz ORDER BY', 'SELECT 1/0', 'SELECT (1/0) FROM fz',
    "SELECT 'a'::int", 'SELECT * FROM fz LIMIT -1', 'SELECT * FROM generate_series(1, 3)',
    'SELECT ROW(1, 2)', 'SELECT NULL', 'SELECT FROM fz', 'SELECT 1 UNION SELECT', 'SELECT * FROM fz_unlogged',
);

# Server-built long query texts.
sub long_query {
    my $size = big_size();
    my $k = pick(10, 100, 1000, 2000 + int(rand(10_000)));
    return pick(
        "'SELECT 1' || repeat(' ', $size)",
        "repeat('SELECT 1 UNION ALL ', $k) || 'SELECT 1'",
        "'SELECT ''' || repeat('x', $size) || ''''",
        "'SELECT 1 /*' || repeat('*', $size) || '*/'",
        "'SELECT ' || repeat('(', $k * 10) || '1' || repeat(')', $k * 10)",
        "'SELECT ' || repeat('1+', $k * 10) || '1'",
        "'SELECT * FROM fz WHERE id IN (' || (SELECT string_agg(g::text, ',') FROM generate_series(1, $k * 10) g) || ')'",
        "'SELECT ' || (SELECT string_agg('1 AS c' || g, ',') FROM generate_series(1, $k) g)",
        "'SELECT ''' || repeat('日本\x{1F600}', $size / 10 + 1) || ''''",
        "repeat(' ', $size) || 'SELECT 1'",
        "'SELECT \$' || repeat('9', $k)",
        "'SELECT 1 AS ' || repeat('a', $size)",
    );
}

# Damage: insert, delete or repeat a few characters of a valid query.
sub damaged_query {
    my $q = pick(@valid_queries)->[0];
    for (1 .. 1 + int(rand(3))) {
        my $at = int(rand(length($q) + 1));
        my $what = int(rand(3));
        if ($what == 0) { substr($q, $at, 0) = pick(@odd_chars); }
        elsif ($what == 1) { substr($q, $at, 1 + int(rand(4))) = '' if $at < length($q); }
        else { $q = substr($q, 0, $at) . substr($q, $at) x 2; }
    }
    return $q;
}

# (SQL expression of the query text, number of parameters it wants or -1,
# whether it must fail)
sub query_expr {
    my $r = rand();
    if ($r < 0.40) { my $v = pick(@valid_queries); return (lit($v->[0]), $v->[1], 0); }
    if ($r < 0.62) { return (lit(pick(@hostile_queries)), -1, 1); }
    if ($r < 0.72) { return (lit(pick(@odd_queries)), -1, 0); }
    if ($r < 0.82) { return (lit(damaged_query()), -1, 0); }
    if ($r < 0.92) { return (long_query(), -1, 0); }
    return (lit(garbage()), -1, 0);
}

my @good_values = (1 .. 20, 50, 100, 199, 200, 300);
my @odd_values = ('0', '-1', '2147483647', '2147483648', '-2147483649', '9223372036854775808', '1e309',
                  'NaN', 'Infinity', '-0', '', ' ', 'abc', '{', '{a,b}', '"', "'", '\\', 'null', 'true',
                  '{"k": 1}', '[1,2]', '2024-02-30', 'epoch', 'infinity', '1.5', '12:00', "O'Reilly",
                  "\x{1F600}", "\x{202E}abc", 'v1', 'v5', '{v1,v2}', '$1');

sub param_value {
    return undef if chance(0.05);
    return chance(0.5) ? pick(@good_values) : chance(0.8) ? pick(@odd_values) : garbage();
}

sub params_expr {
    my ($wanted) = @_;
    my $r = rand();
    if ($r < 0.55) {
        my $n = $wanted >= 0 && chance(0.8) ? $wanted : int(rand(5));
        return "'{}'" if $n == 0 && chance(0.5);
        return 'ARRAY[' . join(', ', map { lit(param_value()) } 1 .. $n) . ']::text[]';
    }
    my $size = big_size();
    my $n = pick(100, 65535, 65536, 200_000);
    return pick(
        "'{}'", 'NULL', 'ARRAY[]::text[]', "'{NULL}'", 'ARRAY[NULL]::text[]', "'{1,2}'::int[]",
        'ARRAY[1]', "'not an array'", "'{{1},{2}}'", "'[3:4]={1,2}'", '42', "'{1'", "ARRAY[ARRAY['a']]",
        "'{}'::jsonb", "'{}'::varchar[]", "array_fill('1'::text, ARRAY[$n])", "array_fill(NULL::text, ARRAY[$n])",
        "(SELECT array_agg(g::text) FROM generate_series(1, $n) g)", "ARRAY[repeat('9', $size)]",
        "ARRAY[repeat('x', $size), '1']", "array_fill(NULL::text, ARRAY[70000000])",
        "ARRAY['1', repeat('日', $size / 3 + 1)]",
    );
}

my @names = map { "fz.$_" } 'a' .. 'h';
sub name_expr {
    return lit(pick(@names)) if chance(0.75);
    my $size = big_size();
    return pick(
        "''", "' '", lit('x' x 63), lit('x' x 64), lit('日' x 21), lit('日' x 22), lit("\x01"), lit("a\nb"),
        lit('%s%s%n%x'), lit('"; DROP TABLE fz; --'), lit("'"), 'NULL', lit("\x{1F600}"), lit("\x{202E}rtl"),
        lit("\x{FEFF}"), "repeat('x', $size)", lit(garbage()), '42', "E'\\xff'",
    );
}

my @coldefs = ('AS t(a int)', 'AS t(id int, v text, n numeric, t timestamptz, j jsonb, a int[])',
               'AS t(a text)', 'AS t(a int, b int)', 'AS t()', 'AS t(a bigint)', 'AS t("weird col" int)',
               'AS t(id int, v text)', 'AS t(a fz)', 'AS t(a record)');
my @row_types = ('NULL::fz', 'NULL::int', 'NULL::text', 'NULL::directory.employee_row', 'NULL::int[]',
                 'NULL', 'NULL::record', '1', 'ROW(1, 2)', 'NULL::void', 'NULL::fz_view', 'NULL::pg_class',
                 "NULL::\"Odd Name\"", 'NULL::bigint');
my @targets = ("'fz_s1'", "'fz_part'", "'fz_part_1'", "'fz_inh'", "'fz_view'", "'fz_seq'", "'fz_mv'",
               "'fz_unlogged'", "'pg_class'", "'pg_catalog.pg_proc'", "'nonexistent'",
               "'a.b.c.d'", q{'"Odd Name"'}, 'NULL', '0', '12345678', "repeat('x', 100000)", "'memo.watched'",
               "'fz_pkey'", "''", lit(garbage()), "'fz'::regclass::oid::int");

# directory.cached_list_employees arguments: (scope, page, page_size, sort, filters)
sub directory_args {
    my $size = big_size();
    my $scope = chance(0.6) ? 1 + int(rand(300)) : pick('1', '0', '-1', '301', '9223372036854775807', 'NULL');
    my $page = chance(0.7) ? 1 + int(rand(3)) : pick('0', '-1', '2147483647', 'NULL');
    my $size_arg = chance(0.7) ? pick(1, 5, 20, 500) : pick('0', '-5', '501', '2147483647', 'NULL');
    my $sort = chance(0.6)
      ? lit(pick(qw(full_name title department location hired_on org_depth)) . ':' . pick('asc', 'desc'))
      : pick("'full_name'", "'x:asc'", "'full_name:up'", "''", 'NULL', lit(garbage()),
             "'full_name:asc; DROP TABLE fz'", "repeat('full_name:asc', 1000)");
    my $filters = chance(0.5) ? "'{}'" : pick(
        'NULL', "'[]'", "'1'", q{'"s"'}, q{'{"department": "Engineering"}'}, q{'{"department": 1}'},
        q{'{"bogus": "x"}'}, q{'{"name_prefix": "A"}'}, q{'{"name_prefix": "%"}'}, q{'{"name_prefix": "_\\\\"}'},
        q{'{"title": "x", "location": "y", "department": "z", "name_prefix": "w"}'},
        qq{jsonb_build_object('department', repeat('x', $size))}, q{'{"department": {"nested": true}}'},
        lit(qq{{"location": "\x{1F600}\x{202E}"}}), q{'{"department": null}'});
    return "$scope, $page, $size_arg, $sort, $filters";
}

# One input: a list of [statement, flags] run in order.
#   expect_error  the statement must fail
#   hash          the statement yields one row with column h (\gset)
#   same_as       index of an earlier statement of this input whose outcome
#                 (SQLSTATE, and h on success) must be the same
sub make_input {
    my $r = rand();
    if ($r < 0.25) {
        my ($q, $n, $bad) = query_expr();
        return [["SELECT memo.count(" . name_expr() . ", $q, " . params_expr($n) . ")", {expect_error => $bad}]];
    }
    if ($r < 0.40) {
        my ($q, $n, $bad) = query_expr();
        return [["SELECT * FROM memo.list(" . name_expr() . ", $q, " . params_expr($n) . ") " . pick(@coldefs),
                 {expect_error => $bad}]];
    }
    if ($r < 0.50) {
        my ($q, $n, $bad) = query_expr();
        my $from = chance(0.8) ? 'SELECT * FROM ' : 'SELECT ';
        return [["${from}memo.list_as(" . pick(@row_types) . ', ' . name_expr() . ", $q, " . params_expr($n) . ")",
                 {expect_error => $bad}]];
    }
    if ($r < 0.52) {
        my ($q, $n, $bad) = query_expr();
        return [["SELECT memo.list(" . name_expr() . ", $q, " . params_expr($n) . ")", {expect_error => 1}]];
    }
    if ($r < 0.67) {
        my $args = directory_args();
        my $hash = q{SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY o), '')) AS h FROM };
        my $cols = 't(c1, c2, c3, c4, c5, c6, c7, c8, c9, o)';
        return [["$hash directory.cached_list_employees($args) WITH ORDINALITY $cols", {hash => 1}],
                ["$hash directory.list_employees($args) WITH ORDINALITY $cols", {hash => 1, same_as => 0}]];
    }
    if ($r < 0.77) {
        my $fn = pick('watch', 'unwatch', 'invalidate', 'invalidate');
        my $target = pick(@targets, $fn eq 'unwatch' ? () : ("'fz'", "'directory.employees'"));
        return [["SELECT memo.$fn($target)", {}]];
    }
    if ($r < 0.84) {
        return [[pick(
            q{SELECT memo.count()}, q{SELECT memo.count('fz.a')}, q{SELECT memo.count('fz.a', 'SELECT 1', '{}', 'x')},
            q{SELECT memo.count(1, 2, 3)}, q{SELECT memo.count(cache_name => 'fz.a', query => 'SELECT 1')},
            q{SELECT memo.count(query => 'SELECT count(*) FROM fz', cache_name => 'fz.b', params => '{}')},
            q{SELECT * FROM memo.list_as('fz.a', 'SELECT 1')}, q{SELECT memo.watch()}, q{SELECT memo.watch('fz', 'fz')},
            q{SELECT memo.invalidate(NULL)}, q{SELECT memo.generation(NULL)}, q{SELECT memo.generation('fz')},
            q{SELECT memo.generation(0)}, q{SELECT memo.watch_targets('fz_part')}, q{SELECT memo.invalidation_trigger()},
            q{SELECT * FROM memo.stats() LIMIT 1}, q{SELECT * FROM memo.flights()}, q{SELECT memo.info()},
            q{SELECT memo.count(VARIADIC ARRAY['a'])}, q{SELECT * FROM memo.list('fz.a', 'SELECT 1', '{}')},
        ), {}]];
    }
    if ($r < 0.97) {
        return [[pick(q{SELECT * FROM memo.info}, q{SELECT * FROM memo.stats}, q{SELECT * FROM memo.flights},
                      q{SELECT * FROM memo.watched}, q{SELECT memo.reset_stats()}), {}]];
    }
    return [[q{SELECT memo.reset()}, {}]];
}

# ---- scripts ------------------------------------------------------------------

# Each statement is followed by a marker line with its outcome:
#   @@ <input>.<statement> <ERROR> <SQLSTATE> <h>
#   @@m <first 400 characters of the error message>  (may span lines)
# Inside a transaction, each statement runs in a savepoint that an error
# rolls back. (Messages can quote MBs of input: they are cut by the server.)
sub statement_script {
    my ($id, $k, $stmt, $flags, $in_xact) = @_;
    my $sp = $in_xact ? 1 : 0;
    my $s = "SAVEPOINT f;\n" x $sp;
    $s .= "\\unset h\n$stmt" . ($flags->{hash} ? " \\gset\n" : ";\n");
    $s .= "\\echo \@\@ $id.$k :ERROR :SQLSTATE :h\n\\if :ERROR\n";
    $s .= "ROLLBACK TO SAVEPOINT f;\n" x $sp;
    $s .= "SELECT left(:'LAST_ERROR_MESSAGE', 400) AS m \\gset\n\\echo \@\@m :m\n\\else\n";
    $s .= "RELEASE SAVEPOINT f;\n" x $sp;
    return $s . "\\endif\n";
}

# Segments of 25 inputs, each in one shape.
sub segment_script {
    my ($shape, $inputs) = @_;
    my $s = '';
    $s .= "SET ROLE fuzz_user;\n" if $shape eq 'role';
    $s .= "BEGIN;\n" if $shape eq 'savepoint';
    $s .= "BEGIN ISOLATION LEVEL REPEATABLE READ;\n" if $shape eq 'repeatable_read';
    my $in_xact = $shape eq 'savepoint' || $shape eq 'repeatable_read';
    for my $input (@$inputs) {
        my ($id, $stmts) = @$input;
        $s .= statement_script($id, $_, @{$stmts->[$_]}, $in_xact) for 0 .. $#$stmts;
    }
    $s .= "COMMIT;\n" if $in_xact;
    $s .= "RESET ROLE;\n" if $shape eq 'role';
    return $s;
}

my $script_header = "\\set VERBOSITY terse\n\\set SHOW_CONTEXT never\n\\o /dev/null\nSET client_min_messages = error;\n";

# Runs scripts in concurrent psql sessions; returns their stdout texts.
# Output goes to files: a session blocked on a full pipe while the test
# waits for another one would hold its locks, and its turn, indefinitely.
my $script_runs = 0;
sub run_scripts {
    my @scripts = @_;
    my (@runs, @outfiles);
    for my $i (0 .. $#scripts) {
        my $base = "${PostgreSQL::Test::Utils::tmp_check}/fuzz_" . $script_runs++;
        open(my $fh, '>:encoding(UTF-8)', "$base.sql") or die "cannot write $base.sql: $!";
        print $fh $script_header, $scripts[$i];
        close($fh);
        push @outfiles, "$base.out";
        push @runs, IPC::Run::start(
            ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres'), '-f', "$base.sql"],
            '>', "$base.out", '2>', '/dev/null',
            IPC::Run::timeout($run_timeout));
    }
    $_->finish for @runs;
    return map { slurp_file($_) } @outfiles;
}

# Parses marker lines into {"<input>.<k>" => {error, state, h, message}}.
sub parse_outcomes {
    my %outcomes;
    my $last;
    for my $out (@_) {
        utf8::decode($out);
        for my $line (split /\n/, $out) {
            if ($line =~ /^\@\@ (\d+\.\d+) (true|false) (\S+) (.*)$/) {
                $last = $outcomes{$1} = {error => $2 eq 'true', state => $3, h => $4, message => ''};
            } elsif ($line =~ /^\@\@m (.*)$/) {
                $last->{message} = $1 if $last;
            } elsif ($last && $last->{error}) {
                $last->{message} .= "\n$line";
            }
        }
    }
    return \%outcomes;
}

# An error that does not say what is wrong: PostgreSQL's internal error
# class, or wording of an internal failure.
sub unclear {
    my ($o) = @_;
    return 0 unless $o->{error};
    return 1 if $o->{state} =~ /^(XX|58)/ || $o->{state} eq 'P0001';
    return 1 if $o->{message} =~ /SPI_|unexpected|internal error|cache lookup failed|unrecognized node|corrupt|invalid memory alloc|could not find/i;
    return 1 if $o->{message} !~ /\w/;
    return 0;
}

my (%by_state, @unclear, @wrong, @missing);
my ($inputs_tried, $statements_tried) = (0, 0);

sub tally {
    my ($inputs, $outcomes, $what) = @_;
    for my $input (@$inputs) {
        my ($id, $stmts) = @$input;
        $inputs_tried++;
        for my $k (0 .. $#$stmts) {
            my ($stmt, $flags) = @{$stmts->[$k]};
            my $o = $outcomes->{"$id.$k"};
            my $shown = length($stmt) > 300 ? substr($stmt, 0, 300) . '...' : $stmt;
            if (!$o) { push @missing, "$what $id.$k: $shown"; next; }
            $statements_tried++;
            $by_state{$o->{error} ? $o->{state} : 'success'}++;
            push @unclear, "$o->{state} $o->{message} <- $shown" if unclear($o);
            push @wrong, "succeeded but must fail: $shown" if $flags->{expect_error} && !$o->{error};
            if ($flags->{want_state} && ($o->{error} ? $o->{state} : '00000') ne $flags->{want_state}) {
                push @wrong, "got $o->{state} ($o->{message}), want $flags->{want_state}: $shown";
            }
            if (defined $flags->{want_h} && ($o->{error} || $o->{h} ne $flags->{want_h})) {
                push @wrong, "got " . ($o->{error} ? "$o->{state} $o->{message}" : $o->{h}) . ", want $flags->{want_h}: $shown";
            }
            if (defined $flags->{same_as}) {
                my $ref = $outcomes->{"$id.$flags->{same_as}"};
                my $a = $ref->{error} ? "error $ref->{state}" : "rows $ref->{h}";
                my $b = $o->{error} ? "error $o->{state}" : "rows $o->{h}";
                push @wrong, "cached $a, uncached $b: $shown" if $ref && $a ne $b;
            }
        }
    }
}

# ---- fixed inputs: what earlier runs found, kept fixed --------------------------

my @fixed = (
    # memo.count wrapped a trailing comment into its count(*) query: 42601
    [q{SELECT memo.count('fz.fixed', 'SELECT * FROM fz; -- a note')::text AS h}, {hash => 1, want_h => '200'}],
    [q{SELECT memo.count('fz.fixed', ';SELECT * FROM fz WHERE id <= 5;; ;')::text AS h}, {hash => 1, want_h => '5'}],
    [q{SELECT memo.count('fz.fixed', 'SELECT * FROM fz WHERE id <= 7 -- no semicolon')::text AS h},
     {hash => 1, want_h => '7'}],
    # 70 million NULL parameters: XX000 "invalid memory alloc request size"
    [q{SELECT memo.count('fz.fixed', 'SELECT $1', array_fill(NULL::text, ARRAY[70000000]))}, {want_state => '54000'}],
    [q{SELECT memo.count('fz.fixed', 'SELECT $1', array_fill('1'::text, ARRAY[65536]))}, {want_state => '54000'}],
    [q{SELECT memo.count('fz.fixed', 'SELECT $1', array_fill('1'::text, ARRAY[65535]))}, {want_state => '22023'}],
    # refusals that must come before anything runs
    [q{SELECT memo.count('fz.fixed', 'SELECT pg_terminate_backend(pg_backend_pid())')}, {want_state => '0A000'}],
    [q{SELECT memo.count('fz.fixed', 'WITH d AS (DELETE FROM fz RETURNING *) SELECT * FROM d')},
     {want_state => '0A000'}],
    [q{SELECT memo.count('fz.fixed', 'SELECT 1; DROP TABLE fz')}, {want_state => '0A000'}],
    [q{SELECT memo.count('', 'SELECT 1')}, {want_state => '22023'}],
    [q{SELECT memo.count(repeat('x', 64), 'SELECT 1')}, {want_state => '22023'}],
    [q{SELECT memo.count(NULL, 'SELECT 1')}, {want_state => '22004'}],
    [q{SELECT memo.list('fz.fixed', 'SELECT 1')}, {want_state => '42601'}],
);
push @fixed, [q{SELECT memo.count('fz.fixed', 'SELECT 1' || repeat(' ', 700000000), array_fill(repeat('x', 100000000), ARRAY[5]))},
              {want_state => '54000'}] if $huge;
my @fixed_inputs = map { [$_, [$fixed[$_]]] } 0 .. $#fixed;
# (no statement_timeout: the PG_MEMO_FUZZ_HUGE input takes a while)
tally(\@fixed_inputs, parse_outcomes(run_scripts("SET statement_timeout = 0;\n" . segment_script('auto', \@fixed_inputs))),
      'fixed');

# ---- random inputs -----------------------------------------------------------------

my @scripts = ('') x $streams;
my @random_inputs;
my @shapes = ('auto', 'auto', 'savepoint', 'repeatable_read', 'role');
for (my $id = 1000; $id < 1000 + $inputs_wanted; $id += 25) {
    my @segment = map { [$_, make_input()] } $id .. ($id + 24 < 1000 + $inputs_wanted ? $id + 24 : 999 + $inputs_wanted);
    push @random_inputs, @segment;
    $scripts[int(rand($streams))] .= segment_script(pick(@shapes), \@segment);
}
tally(\@random_inputs, parse_outcomes(run_scripts(@scripts)), 'random');

# ---- verdict -----------------------------------------------------------------------

my $summary = sprintf("seed %d: %d inputs, %d statements; outcomes: %s; unclear errors: %d; wrong outcomes: %d",
    $seed, $inputs_tried, $statements_tried,
    join(', ', map { "$_ $by_state{$_}" } sort { $by_state{$b} <=> $by_state{$a} || $a cmp $b } keys %by_state),
    scalar(@unclear), scalar(@wrong));
note($summary);
diag($summary) if $ENV{PG_MEMO_FUZZ_INPUTS};

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start_time,
    'no crash: the postmaster never restarted');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $sentinel_pid"), '1',
    'no crash: a session opened before the fuzzing is still there (no crash restart)');
$sentinel->quit;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|was terminated by exception|reinitializing|PANIC:|TRAP:/,
    'no backend died on a signal');
is(scalar(@missing), 0, 'every statement reported an outcome') or diag(join("\n", @missing[0 .. ($#missing < 9 ? $#missing : 9)]));
is(scalar(@unclear), 0, 'no unclear error') or diag(join("\n", @unclear[0 .. ($#unclear < 19 ? $#unclear : 19)]));
is(scalar(@wrong), 0, 'no wrong outcome') or diag(join("\n", @wrong[0 .. ($#wrong < 19 ? $#wrong : 19)]));
cmp_ok($by_state{success} // 0, '>', $statements_tried / 10, 'a fair share of the inputs succeeded');

# ---- the cache still works ---------------------------------------------------------

is($node->safe_psql('postgres', $fz_checksum_sql), $fz_checksum, 'fz is unchanged: no hostile text wrote');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'pwned'}), '0',
    'no hostile text created a table');
$node->safe_psql('postgres', q{SELECT memo.watch('fz'), memo.watch('directory.employees')});
is($node->safe_psql('postgres', q{SELECT bool_and(triggers_enabled) FROM memo.watched
                                   WHERE table_name IN ('fz'::regclass, 'directory.employees'::regclass)}),
   't', 'fz and directory.employees are watched');

my $known = q{SELECT memo.count('fz.after', 'SELECT * FROM fz WHERE id <= $1::int', '{50}')};
is($node->safe_psql('postgres', $known), '50', 'a known count is right after the fuzzing');
is($node->safe_psql('postgres', $known), '50', 'and right from the cache');
is(memo_stat($node, 'fz.after', 'hits'), '1',
   'the second call was a hit');
$node->safe_psql('postgres', q{INSERT INTO fz (id) VALUES (0)});
is($node->safe_psql('postgres', $known), '51', 'a committed write still invalidates');
is($node->safe_psql('postgres', q{
    SELECT string_agg(id || ':' || v, ',' ORDER BY id)
      FROM memo.list('fz.after', 'SELECT id, v FROM fz WHERE id BETWEEN $1::int AND $2::int ORDER BY id',
                     '{10,14}') AS t(id int, v text)}),
   '10:v10,11:v11,12:v12,13:v0,14:v1', 'a known list is right');
is($node->safe_psql('postgres', q{
    SELECT (SELECT array_agg(t) FROM directory.cached_list_employees(1, 2, 10, 'title:desc') t)
         = (SELECT array_agg(t) FROM directory.list_employees(1, 2, 10, 'title:desc') t)}),
   't', 'a directory page through the cache equals the uncached page');

is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.flights'), '0', 'no flight is left over');
is($node->safe_psql('postgres', q{
    SELECT i.entries = (SELECT coalesce(sum(entries), 0) FROM memo.stats)
      FROM memo.info i}), 't', 'memo.info is consistent with memo.stats');
$node->safe_psql('postgres', 'SELECT memo.reset()');
is($node->safe_psql('postgres', 'SELECT entries || \' \' || used_bytes FROM memo.info'), "0 $arena_baseline",
   'after memo.reset() the arena holds nothing: no leaked bytes');

# Filling the statistics table with cache names: names beyond
# pg_memo.max_cache_names are counted together as (other), and caching goes
# on as before.
$node->append_conf('postgresql.conf', 'pg_memo.max_cache_names = 16');
$node->restart;
$node->psql('postgres', q{
    SELECT memo.count('fill.' || g, 'SELECT * FROM fz WHERE id <= $1::int', ARRAY[g::text])
      FROM generate_series(1, 100) g}, stderr => \my $fill_err, on_error_die => 1);
like($fill_err, qr/WARNING:  pg_memo's statistics table is full: cache name "fill\.\d+" is counted in the row "\(other\)" of memo\.stats\n.*pg_memo\.max_cache_names \(16\)/,
     'a name that finds no row warns, naming pg_memo.max_cache_names');
is(scalar(() = $fill_err =~ /WARNING/g), 1, 'once per session');
is($node->safe_psql('postgres', 'SELECT count(*) FROM memo.stats'), '16',
   'the statistics table holds pg_memo.max_cache_names rows, (other) included');
is(memo_stat($node, '(other)', 'calls'), '85',
   'the names that found no row are counted in (other)');
my $known_other = q{SELECT memo.count('fill.more', 'SELECT * FROM fz WHERE id <= $1::int', '{7}')};
is($node->safe_psql('postgres', $known_other) . ' ' . $node->safe_psql('postgres', $known_other), '8 8',
   'a name counted in (other) is cached and right');
is(memo_stat($node, '(other)', 'hits'), '1',
   'and its second call was a hit');

$node->stop;
done_testing();
