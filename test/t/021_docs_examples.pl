# Docs as tests (issue 32): every ```sql example of README.md,
# docs/reference.md and directory/README.md runs here, in order, one
# database a document, after a fixture that makes what the examples
# assume; where the document shows psql's output (a ```text block right
# after the example) the output must be that. The markers and their
# meaning: test/perl/DocExamples.pm.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;
use DocExamples;

my $root = "$FindBin::RealBin/../..";
my @docs = ('README.md', 'docs/reference.md', 'directory/README.md');

my $node = memo_node('docs', conf => "shared_preload_libraries = 'pg_memo,pg_stat_statements'\n");

# What the examples assume, in a template database every document's
# database (and every "new database" example's) is made from: the tables
# they read, with a few rows.
$node->safe_psql('postgres', q{
  CREATE ROLE api;
  CREATE DATABASE app;
  CREATE DATABASE docs_template;
});
$node->safe_psql('docs_template', q{
  CREATE TABLE orders (id bigint PRIMARY KEY, customer int, customer_id int, region text,
                       status text, amount numeric);
  INSERT INTO orders
  SELECT g, g % 50, g % 50, (ARRAY['north', 'south'])[g % 2 + 1],
         CASE WHEN g % 3 = 0 THEN 'closed' ELSE 'open' END, g * 1.5
    FROM generate_series(1, 200) g;
  CREATE TABLE emp (id int PRIMARY KEY, name text, dept text);
  INSERT INTO emp VALUES (1, 'Ada', 'd1'), (2, 'Grace', 'd1'), (3, 'Edsger', 'd2'),
                         (4, 'Barbara', 'd1'), (5, 'Ken', 'd2');
  CREATE TABLE events (id bigint, at date NOT NULL, what text) PARTITION BY RANGE (at);
  CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
  CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
  CREATE TABLE employees (id int PRIMARY KEY, name text, team_id int);
  INSERT INTO employees SELECT g, 'employee ' || g, g % 10 FROM generate_series(1, 100) g;
});
# What a document's own database has besides: the extensions, a small
# directory, the fixture's tables watched.
my $doc_setup = q{
  CREATE EXTENSION pg_memo_directory CASCADE;
  CREATE EXTENSION pg_stat_statements;
  SELECT directory.directory_seed(2000);
  SELECT memo.watch('orders');
  SELECT memo.watch('emp');
  SELECT memo.watch('employees');
};

# psql's output for SQL in DB as a terminal shows it: the results, and
# the notices, warnings and errors among them without psql's prefix.
# Returns (exit status, output).
sub run_sql {
    my ($db, $sql) = @_;
    my $out = '';
    IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db) ],
                  '<', \$sql, '>&', \$out);
    my $rc = $? >> 8;
    $out =~ s/^psql:<stdin>:\d+: //mg;
    $out =~ s/[ \t]+$//mg;  # aligned output pads its header; the documents need not
    $out =~ s/\n+\z/\n/;      # nor end with the blank line after the last result
    return ($rc, $out);
}

# What is wrong with the signatures of a signature block, compared with
# the functions in DB: a list of sentences.
sub signature_problems {
    my ($db, $sql) = @_;
    my @entries = eval { signature_entries($sql) } or return ($@ || 'no signature');
    my @wrong;
    for my $e (@entries) {
        my ($schema, $function) = split /\./, $e->{name};
        my @overloads = map { [ split /\t/, $_, -1 ] } split /\n/, $node->safe_psql($db, qq{
          SELECT concat_ws(E'\\t', pg_get_function_arguments(oid), pg_get_function_result(oid),
                           CASE WHEN proisstrict THEN 't' ELSE 'f' END, provolatile)
            FROM pg_proc
           WHERE proname = '$function' AND pronamespace = to_regnamespace('$schema')});
        my ($f) = grep { normal_arguments($_->[0]) eq $e->{arguments} } @overloads;
        if (!$f) {
            push @wrong, "$e->{name}($e->{arguments}): no such function; there are: "
              . join('; ', map { "($_->[0])" } @overloads);
            next;
        }
        my ($arguments, $result, $strict, $volatility) = @$f;
        push @wrong, "$e->{name}($e->{arguments}) returns $result, not " . ($e->{result} // "(no RETURNS)")
          unless defined $e->{result} && normal_result($result) eq $e->{result};
        push @wrong, "$e->{name}($e->{arguments}) is " . ($strict eq 't' ? '' : 'not ') . 'STRICT'
          if ($e->{comments} =~ /\bSTRICT\b/) != ($strict eq 't');
        my %says = (i => 'IMMUTABLE', s => 'STABLE', v => 'VOLATILE');
        for my $v (grep { $e->{comments} =~ /\b$says{$_}\b/ } keys %says) {
            push @wrong, "$e->{name}($e->{arguments}) is $says{$volatility}, not $says{$v}" unless $v eq $volatility;
        }
    }
    return @wrong;
}

# The extractor and the markers on a document of its own, first.
{
    my $file = PostgreSQL::Test::Utils::tempdir() . '/doc.md';
    open my $fh, '>', $file or die $!;
    print $fh <<'DOC';
Text.

<!-- example: error -->
```sql
SELECT 1 AS one;
SELECT 1 / 0;
```

```text
 one
-----
   1
(1 row)

ERROR:  division by zero
```

<!-- example: not run (a template) -->
```sql
SELECT <column> FROM <table>;
```

```sql
memo.generation(rel regclass) RETURNS bigint   -- STRICT
```

<!-- example: new database after CREATE TABLE t (v int); run with 7 for 42 -->
```sql
INSERT INTO t VALUES (42);
```
DOC
    close $fh;
    my @ex = doc_examples($file);
    is(scalar(@ex), 4, 'extractor: four examples');
    is_deeply([ map { $_->{line} } @ex ], [ 4, 19, 23, 28 ], 'extractor: the line of each fence');
    ok($ex[0]{error} && defined $ex[0]{output} && !defined $ex[2]{output}, 'extractor: an error example, its output');
    is($ex[1]{skip}, 'a template', 'extractor: not run, with the reason');
    ok($ex[2]{signature} && !$ex[0]{signature}, 'extractor: a block of signatures');
    is_deeply([ $ex[3]{new_database}, $ex[3]{setup}, $ex[3]{replace} ],
              [ 1, 'CREATE TABLE t (v int)', [ [ '42', '7' ] ] ], 'extractor: two markers in one comment');
    my ($rc, $out) = run_sql('postgres', $ex[0]{sql});
    isnt($rc, 0, 'an error stops the example');
    is($out, $ex[0]{output}, 'the output of an error example: results, then the error without the prefix');
}

my (@skipped, $ran, $compared, $signatures);
my $n = 0;
for my $doc (@docs) {
    my @examples = doc_examples("$root/$doc");
    note("$doc: " . scalar(@examples) . ' examples');
    my $db = 'doc' . ++$n;
    $node->safe_psql('postgres', "CREATE DATABASE $db TEMPLATE docs_template");
    $node->safe_psql($db, $doc_setup);
    for my $ex (@examples) {
        my $name = "$doc:$ex->{line}";
        if (defined $ex->{skip}) {
            push @skipped, "$name ($ex->{skip})";
            next;
        }
        if ($ex->{signature}) {
            my @wrong = signature_problems($db, $ex->{sql});
            ok(!@wrong, "$name: signatures of the functions as they are") or diag(join "\n", @wrong);
            $signatures++;
            next;
        }
        my $in = $db;
        if ($ex->{new_database}) {
            $in = "${db}_$ex->{line}";
            $node->safe_psql('postgres', "CREATE DATABASE $in TEMPLATE docs_template");
            $node->safe_psql($in, $ex->{setup}) if defined $ex->{setup};
        }
        my $sql = $ex->{sql};
        for my $r (@{ $ex->{replace} // [] }) {
            my ($old, $new) = @$r;
            $sql =~ s/\Q$old\E/$new/g or die "$name: no $old to replace\n";
        }
        my ($rc, $out) = run_sql($in, $sql);
        $ran++;
        note("$name printed:\n$out");
        if ($ex->{error}) {
            isnt($rc, 0, "$name: fails, as the document says") or diag($out);
        } else {
            is($rc, 0, "$name: runs") or diag($out);
        }
        if (defined $ex->{output}) {
            my $shown = $ex->{output} =~ s/[ \t]+$//mgr =~ s/\n+\z/\n/r;
            is($out, $shown, "$name: the output the document shows");
            $compared++;
        }
        $node->safe_psql('postgres', "DROP DATABASE $in") if $ex->{new_database};
    }
}

$ran //= 0;
$compared //= 0;
$signatures //= 0;
note("ran $ran examples, compared the output of $compared, checked $signatures signatures");
note("not run: $_") for @skipped;
is(scalar(@skipped), 0, 'every example runs: a "not run" marker makes this fail');

done_testing();
