# The install scripts against the upgrade path. pg_memo--1.2.sql and
# pg_memo_directory--1.2.sql define every object of 1.2 in one file, so
# that CREATE EXTENSION replays no chain of scripts (pg_memo's default,
# 1.3, adds pg_memo--1.2--1.3.sql until 1.3 ships with an install script
# of its own); a database installed at 1.0 or 1.1 reaches the default
# through ALTER EXTENSION ... UPDATE. Both must leave exactly the same
# objects. Three databases (fresh at 1.2, 1.0
# updated, 1.1 updated; pg_memo and pg_memo_directory in each) are
# compared three ways, each of which must find no difference:
#
#   - pg_dump --schema-only --binary-upgrade: the full definition of every
#     object, extension members included (a plain dump names only the
#     extension), with their owners, comments, grants and initial
#     privileges, and the extension's configuration tables; the OIDs,
#     relfilenodes, transaction ids and LSNs it carries for pg_upgrade are
#     normalized away, nothing else;
#   - pg_dump --schema-only as users run it (the grants that differ from
#     the extension's initial privileges);
#   - the catalogs: extension members, every dependency between user
#     objects, ACLs, initial privileges, comments, functions' definitions,
#     relations' columns, constraints, indexes and triggers, types, casts,
#     sequences, and the pg_extension rows (version, extconfig as names,
#     extcondition).
#
# A fourth database, fresh with one function's volatility and one grant
# changed afterwards, shows that each comparison sees such a difference.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MemoTest;

my $node = memo_node('install_script');

# CREATE EXTENSION takes an install script for the version itself when
# there is one: these must be installed for the fresh databases to test them.
my $extdir = $node->config_data('--sharedir') . '/extension';
ok(-f "$extdir/pg_memo--1.2.sql", 'pg_memo--1.2.sql is installed');
ok(-f "$extdir/pg_memo_directory--1.2.sql", 'pg_memo_directory--1.2.sql is installed');
my %default = map {
    $_ => $node->safe_psql('postgres', "SELECT default_version FROM pg_available_extensions WHERE name = '$_'")
} qw(pg_memo pg_memo_directory);
is($default{pg_memo}, '1.3', 'pg_memo.control: default_version 1.3');
is($default{pg_memo_directory}, '1.2', 'pg_memo_directory.control: default_version 1.2');

$node->safe_psql('postgres', $_) for map { "CREATE DATABASE $_" } qw(fresh from_1_0 from_1_1 altered);
for my $db (qw(fresh altered)) {
    $node->safe_psql($db, q{CREATE EXTENSION pg_memo; CREATE EXTENSION pg_memo_directory});
}
for my $from (qw(1.0 1.1)) {
    (my $db = "from_$from") =~ s/\./_/;
    # pg_memo first: the directory's updates watch its table as the pg_memo
    # installed then can.
    $node->safe_psql($db, qq{
      CREATE EXTENSION pg_memo VERSION '$from';
      CREATE EXTENSION pg_memo_directory VERSION '$from';
      SET client_min_messages = error;
      ALTER EXTENSION pg_memo UPDATE;
      ALTER EXTENSION pg_memo_directory UPDATE;
    });
}
for my $db (qw(fresh from_1_0 from_1_1 altered)) {
    is($node->safe_psql($db, q{SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
                                 FROM pg_extension WHERE extname LIKE 'pg_memo%'}),
       'pg_memo 1.3, pg_memo_directory 1.2', "$db: pg_memo at 1.3, pg_memo_directory at 1.2");
}
# pg_memo_directory 1.2 over an older pg_memo: its install script watches
# the table as that pg_memo can, as its upgrade scripts do.
for my $memo (qw(1.0 1.1)) {
    (my $tag = $memo) =~ s/\./_/;
    $node->safe_psql('postgres', "CREATE DATABASE dir_on_${tag}_$_") for qw(fresh updated);
    $node->safe_psql("dir_on_${tag}_fresh", qq{
      CREATE EXTENSION pg_memo VERSION '$memo';
      SET client_min_messages = error;
      CREATE EXTENSION pg_memo_directory;
    });
    $node->safe_psql("dir_on_${tag}_updated", qq{
      CREATE EXTENSION pg_memo VERSION '$memo';
      CREATE EXTENSION pg_memo_directory VERSION '1.0';
      SET client_min_messages = error;
      ALTER EXTENSION pg_memo_directory UPDATE;
    });
}
my @databases = qw(fresh from_1_0 from_1_1 altered dir_on_1_0_fresh dir_on_1_0_updated
                   dir_on_1_1_fresh dir_on_1_1_updated);

# The negative control: a fresh install, then two changes an install script
# could have made by mistake.
$node->safe_psql('altered', q{
  ALTER FUNCTION memo.generation(regclass) STABLE;
  GRANT EXECUTE ON FUNCTION memo.reset_stats() TO PUBLIC;
});

# --- pg_dump ----------------------------------------------------------------

sub pg_dump {
    my ($db, @options) = @_;
    my ($out, $err);
    IPC::Run::run([ 'pg_dump', '--schema-only', @options, '-d', $node->connstr($db) ], '>', \$out, '2>', \$err)
      or die "pg_dump @options $db failed: $err";
    # What differs between any two databases, whatever they hold: the
    # random key of \restrict (PostgreSQL 17.6, 15.14 and later), and for
    # pg_upgrade the OIDs, relfilenodes, frozen transaction ids and
    # attribute LSNs it preserves, and the OIDs of the configuration tables.
    my @lines = grep { !/^\\(un)?restrict / && !/^SELECT pg_catalog\.binary_upgrade_set_next_/ }
      split /\n/, $out;
    for (@lines) {
        s/binary_upgrade_create_empty_extension\((.*?), '\{[0-9,]*\}'/binary_upgrade_create_empty_extension($1, '{OIDS}'/;
        s/relfrozenxid = '\d+', relminmxid = '\d+'/relfrozenxid = 'XID', relminmxid = 'MXID'/;
        s/^WHERE oid = '\d+';$/WHERE oid = 'OID';/;
        s/pg_toast_\d+/pg_toast_OID/g;
    }
    return @lines;
}

# The lines only one side has, as diff -U0 shows them ("-" first, "+"
# second), without its headers.
my $tmp = PostgreSQL::Test::Utils::tempdir;
sub line_diff {
    my ($a, $b) = @_;
    my @files = map { "$tmp/side$_" } 1, 2;
    for my $k (0, 1) {
        open my $fh, '>', $files[$k] or die "$files[$k]: $!";
        print $fh map { "$_\n" } @{ ($a, $b)[$k] };
        close $fh;
    }
    my ($out, $err);
    IPC::Run::run([ 'diff', '-U0', @files ], '>', \$out, '2>', \$err);
    die "diff: $err" if $err;
    return grep { !/^(---|\+\+\+|@@) / } split /\n/, $out;
}

# Compares two line lists; on a difference, shows it (at most 80 lines).
sub same_lines {
    my ($a, $b, $what) = @_;
    my @diff = line_diff($a, $b);
    ok(!@diff, $what) or diag(join("\n", @diff[0 .. ($#diff < 79 ? $#diff : 79)]));
    return @diff;
}

my %binary = map { $_ => [ pg_dump($_, '--binary-upgrade') ] } @databases;
my %plain = map { $_ => [ pg_dump($_) ] } @databases;

# The dumps hold the objects (a normalization that dropped them would make
# any two databases equal).
{
    my $dump = join "\n", @{ $binary{fresh} };
    for my $object ('CREATE FUNCTION memo.watch(rel regclass, deltas boolean, scope_columns text[])',
                    'CREATE VIEW memo.stats', 'CREATE TABLE memo.statements', 'CREATE TYPE memo.params',
                    'CREATE CAST (integer[] AS memo.params)', 'CREATE TRIGGER statements_changed',
                    'ALTER EXTENSION pg_memo ADD FUNCTION memo.candidates(top integer)',
                    'CREATE FUNCTION directory.cached_count_employees(',
                    'CREATE TRIGGER pg_memo_delta_update AFTER UPDATE ON directory.employees',
                    'GRANT SELECT ON TABLE memo.entries TO PUBLIC',
                    'REVOKE ALL ON FUNCTION memo.reset() FROM PUBLIC') {
        ok(index($dump, $object) >= 0, "the binary-upgrade dump has: $object");
    }
    like($dump, qr/binary_upgrade_create_empty_extension\('pg_memo', 'memo', false, '1\.3', '\{OIDS\}', '\{"",""\}'/,
         'the binary-upgrade dump has pg_memo 1.3 with two configuration tables');
}

note(sprintf('fresh: %d lines of binary-upgrade dump, %d of plain dump', scalar @{ $binary{fresh} },
             scalar @{ $plain{fresh} }));
for my $from (qw(from_1_0 from_1_1)) {
    same_lines($binary{fresh}, $binary{$from},
        "pg_dump --schema-only --binary-upgrade: fresh 1.2 and $from updated are the same");
    same_lines($plain{fresh}, $plain{$from}, "pg_dump --schema-only: fresh 1.2 and $from updated are the same");
}
for my $memo (qw(1_0 1_1)) {
    same_lines($binary{"dir_on_${memo}_fresh"}, $binary{"dir_on_${memo}_updated"},
        "pg_dump --schema-only --binary-upgrade: pg_memo_directory fresh and updated over pg_memo $memo are the same");
}
{
    my @diff = line_diff($binary{fresh}, $binary{altered});
    ok((grep { /^-.*LANGUAGE c STRICT PARALLEL SAFE$/ } @diff)
       && (grep { /^\+.*LANGUAGE c STABLE STRICT PARALLEL SAFE/ } @diff),
        'control: the binary-upgrade dumps differ in the changed volatility')
      or diag(join "\n", @diff);
    ok((grep { /^\+GRANT ALL ON FUNCTION memo\.reset_stats\(\) TO PUBLIC;/ } @diff),
        'control: and in the changed grant') or diag(join "\n", @diff);
    @diff = line_diff($plain{fresh}, $plain{altered});
    ok((grep { /^\+GRANT ALL ON FUNCTION memo\.reset_stats\(\) TO PUBLIC;/ } @diff),
        'control: the plain dumps differ in the changed grant') or diag(join "\n", @diff);
}

# --- the catalogs --------------------------------------------------------------

# One line per fact; user objects are those with OIDs from 16384 on (the
# databases hold nothing but the two extensions). Names that embed an OID
# (TOAST tables, foreign key triggers) are normalized.
my $catalog = q{
  WITH ext AS (SELECT * FROM pg_extension WHERE extname LIKE 'pg_memo%'),
  facts(line) AS (
    -- the extensions
    SELECT 'extension ' || x.extname || ' version=' || x.extversion
           || ' schema=' || x.extnamespace::regnamespace || ' owner=' || x.extowner::regrole
           || ' relocatable=' || x.extrelocatable
           || ' config=' || coalesce(x.extconfig::regclass[]::text, '-')
           || ' condition=' || coalesce(x.extcondition::text, '-')
      FROM ext x
    -- their members
    UNION ALL
    SELECT 'member of ' || x.extname || ': ' || pg_describe_object(d.classid, d.objid, d.objsubid)
      FROM pg_depend d JOIN ext x ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = x.oid
     WHERE d.deptype::text = 'e'
    -- every dependency of or on a user object
    UNION ALL
    SELECT 'depend ' || pg_describe_object(d.classid, d.objid, d.objsubid) || ' -> '
           || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) || ' ' || d.deptype::text
      FROM pg_depend d WHERE d.objid >= 16384 OR d.refobjid >= 16384
    -- schemas: owner and grants
    UNION ALL
    SELECT 'schema ' || n.nspname || ' owner=' || n.nspowner::regrole || ' acl=' || coalesce(n.nspacl::text, '-')
      FROM pg_namespace n WHERE n.oid >= 16384
    -- initial privileges (what the scripts granted and revoked)
    UNION ALL
    SELECT 'init privs ' || pg_describe_object(i.classoid, i.objoid, i.objsubid) || ' ' || i.privtype::text
           || ' ' || i.initprivs::text
      FROM pg_init_privs i WHERE i.objoid >= 16384
    -- comments
    UNION ALL
    SELECT 'comment ' || pg_describe_object(c.classoid, c.objoid, c.objsubid) || ': ' || c.description
      FROM pg_description c WHERE c.objoid >= 16384
    -- functions: the definition as pg_get_functiondef gives it (language,
    -- volatility, strictness, parallel safety, cost, rows, security,
    -- settings, body), owner, grants and the rest of pg_proc
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure || ' owner=' || p.proowner::regrole
           || ' acl=' || coalesce(p.proacl::text, '-') || ' kind=' || p.prokind::text
           || ' leakproof=' || p.proleakproof || ' support=' || p.prosupport::regproc
           || ' defaults=' || coalesce(pg_get_expr(p.proargdefaults, 0), '-') || E'\n'
           || pg_get_functiondef(p.oid)
      FROM pg_proc p WHERE p.oid >= 16384
    -- relations: kind, owner, grants, options; views' definitions
    UNION ALL
    SELECT 'relation ' || regexp_replace(c.oid::regclass::text, 'pg_toast_\d+', 'pg_toast_OID')
           || ' kind=' || c.relkind::text || ' owner=' || c.relowner::regrole
           || ' acl=' || coalesce(c.relacl::text, '-') || ' persistence=' || c.relpersistence::text
           || ' options=' || coalesce(c.reloptions::text, '-') || ' rowsecurity=' || c.relrowsecurity
           || ' replident=' || c.relreplident::text || ' type=' || coalesce(c.reltype::regtype::text, '-')
           || ' hasindex=' || c.relhasindex || ' hastriggers=' || c.relhastriggers
           || coalesce(E'\n' || pg_get_viewdef(c.oid), '')
      FROM pg_class c WHERE c.oid >= 16384
    -- their columns
    UNION ALL
    SELECT 'column ' || regexp_replace(a.attrelid::regclass::text, 'pg_toast_\d+', 'pg_toast_OID')
           || ' #' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
           || ' notnull=' || a.attnotnull || ' dropped=' || a.attisdropped
           || ' default=' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-')
           || ' identity=' || a.attidentity::text || ' generated=' || a.attgenerated::text
           || ' collation=' || coalesce(a.attcollation::regcollation::text, '-')
           || ' storage=' || a.attstorage::text || ' acl=' || coalesce(a.attacl::text, '-')
      FROM pg_attribute a
      LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
     WHERE a.attrelid >= 16384 AND a.attnum > 0
    -- constraints, indexes, triggers (foreign keys' internal triggers are
    -- their constraints'), sequences
    UNION ALL
    SELECT 'constraint ' || CASE WHEN co.conrelid <> 0 THEN co.conrelid::regclass::text
                                 ELSE co.contypid::regtype::text END || ' '
           || co.conname || ' ' || pg_get_constraintdef(co.oid)
      FROM pg_constraint co WHERE co.oid >= 16384
    UNION ALL
    SELECT 'index ' || regexp_replace(pg_get_indexdef(i.indexrelid), 'pg_toast_\d+', 'pg_toast_OID', 'g')
      FROM pg_index i WHERE i.indexrelid >= 16384
    UNION ALL
    SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled=' || t.tgenabled::text
      FROM pg_trigger t WHERE t.oid >= 16384 AND NOT t.tgisinternal
    UNION ALL
    SELECT 'sequence ' || s.seqrelid::regclass || ' ' || s.seqtypid::regtype || ' ' || s.seqstart
           || ' ' || s.seqincrement || ' ' || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcache || ' ' || s.seqcycle
      FROM pg_sequence s WHERE s.seqrelid >= 16384
    -- types and casts
    UNION ALL
    SELECT 'type ' || t.oid::regtype || ' type=' || t.typtype::text || ' category=' || t.typcategory::text
           || ' preferred=' || t.typispreferred || ' len=' || t.typlen || ' byval=' || t.typbyval
           || ' align=' || t.typalign::text || ' storage=' || t.typstorage::text
           || ' in=' || t.typinput::regproc || ' out=' || t.typoutput::regproc
           || ' recv=' || t.typreceive::regproc || ' send=' || t.typsend::regproc
           || ' elem=' || t.typelem::regtype || ' array=' || t.typarray::regtype
           || ' relid=' || coalesce(t.typrelid::regclass::text, '-') || ' owner=' || t.typowner::regrole
           || ' acl=' || coalesce(t.typacl::text, '-') || ' delim=' || t.typdelim::text
      FROM pg_type t WHERE t.oid >= 16384
    UNION ALL
    SELECT 'cast ' || c.castsource::regtype || ' -> ' || c.casttarget::regtype || ' via '
           || coalesce(c.castfunc::regprocedure::text, '-') || ' ' || c.castcontext::text || ' ' || c.castmethod::text
      FROM pg_cast c WHERE c.oid >= 16384
  )
  SELECT regexp_replace(regexp_replace(line, 'pg_toast_\d+', 'pg_toast_OID', 'g'),
                        'RI_ConstraintTrigger_([ac])_\d+', 'RI_ConstraintTrigger_\1_OID', 'g')
    FROM facts ORDER BY 1};

sub catalog_lines {
    my ($db) = @_;
    # One fact per row; a fact's own line breaks (function bodies, view
    # definitions) are kept apart from the rows' by a marker.
    my $out = $node->safe_psql($db, "SELECT replace(line, E'\\n', E'\\n  | ') FROM ($catalog) f(line)");
    return split /\n/, $out;
}

my %facts = map { $_ => [ catalog_lines($_) ] } @databases;
{
    my $all = join "\n", @{ $facts{fresh} };
    cmp_ok(scalar(grep { /^member of pg_memo: / } @{ $facts{fresh} }), '>=', 60, 'the catalogs: pg_memo has its members');
    like($all, qr/^extension pg_memo version=1\.3 schema=memo owner=\S+ relocatable=false config=\{memo\.statements,memo\.blocked_shapes\} condition=\{"",""\}$/m,
         'the catalogs: pg_memo 1.3, memo.statements and memo.blocked_shapes its configuration tables');
    like($all, qr/^extension pg_memo_directory version=1\.2 schema=directory .* config=- condition=-$/m,
         'the catalogs: pg_memo_directory 1.2, without configuration tables');
    like($all, qr/^trigger CREATE TRIGGER pg_memo_delta_insert .*delta_trigger\('\d+', '\d+'\) enabled=A$/m,
         'the catalogs: the directory\'s table is watched with its two scope columns');
}
note(sprintf('fresh: %d catalog lines, %d members', scalar @{ $facts{fresh} },
             scalar grep { /^member of / } @{ $facts{fresh} }));
for my $from (qw(from_1_0 from_1_1)) {
    same_lines($facts{fresh}, $facts{$from}, "the catalogs: fresh 1.2 and $from updated are the same");
}
for my $memo (qw(1_0 1_1)) {
    same_lines($facts{"dir_on_${memo}_fresh"}, $facts{"dir_on_${memo}_updated"},
        "the catalogs: pg_memo_directory fresh and updated over pg_memo $memo are the same");
}
like(join("\n", @{ $facts{dir_on_1_0_fresh} }), qr/^trigger CREATE TRIGGER pg_memo_invalidate .* ON directory\.employees /m,
     'over pg_memo 1.0: the directory\'s table is watched');
unlike(join("\n", @{ $facts{dir_on_1_0_fresh} }), qr/^trigger CREATE TRIGGER pg_memo_delta_/m,
       'over pg_memo 1.0: without deltas');
like(join("\n", @{ $facts{dir_on_1_1_fresh} }), qr/^trigger CREATE TRIGGER pg_memo_delta_insert .*delta_trigger\(\) enabled=A$/m,
     'over pg_memo 1.1: with deltas, without scope columns');
{
    my @diff = line_diff($facts{fresh}, $facts{altered});
    ok((grep { /^-  \|  PARALLEL SAFE STRICT$/ } @diff) && (grep { /^\+  \|  STABLE PARALLEL SAFE STRICT$/ } @diff),
        'control: the catalogs differ in the changed volatility') or diag(join "\n", @diff);
    ok((grep { /^\+function memo\.reset_stats\(\) .*acl=\{[^}]*,=X\// } @diff),
        'control: and in the changed grant') or diag(join "\n", @diff);
}

# --- and the fresh install works -------------------------------------------

$node->safe_psql('fresh', q{
  CREATE TABLE t (id int PRIMARY KEY, team int);
  INSERT INTO t SELECT g, g % 3 FROM generate_series(1, 30) g;
  SELECT memo.watch('t', true, '{team}');
  SELECT directory.directory_seed(200);
});
my $count = q{SELECT memo.count('fresh.count', 'SELECT * FROM t WHERE team = $1', ARRAY[1])};
is($node->safe_psql('fresh', $count), '10', 'fresh 1.2: a count with 1.2\'s parameters');
is($node->safe_psql('fresh', $count), '10', 'fresh 1.2: and again');
is($node->safe_psql('fresh', q{SELECT hits FROM memo.stats WHERE datname = 'fresh' AND cache_name = 'fresh.count'}),
   '1', 'fresh 1.2: as a hit');
isnt($node->safe_psql('fresh', q{SELECT memo.cache_statement('SELECT count(*) FROM t WHERE team = 2', 'fresh.stmt')}),
     '', 'fresh 1.2: a statement registers');
$node->safe_psql('fresh', 'SELECT count(*) FROM t WHERE team = 2') for 1 .. 2;
is($node->safe_psql('fresh', q{SELECT calls || ' ' || hits FROM memo.registered_statements}), '2 1',
   'fresh 1.2: the registered statement is served');
is($node->safe_psql('fresh', q{SELECT directory.cached_count_employees(1)}),
   $node->safe_psql('fresh', q{SELECT total_count FROM directory.list_employees(1) LIMIT 1}),
   'fresh pg_memo_directory 1.2: cached_count_employees, as the uncached listing counts');

$node->stop;
done_testing();
