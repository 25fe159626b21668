# Warm restart (pg_memo.save): a clean shutdown saves the cache and the next
# start restores it, so the first call after pg_ctl restart -m fast is a hit;
# a write after the restart still invalidates what was restored. Nothing is
# restored, and the log says why, after an immediate stop (crash recovery),
# with pg_memo.save off, with another pg_memo.cache_size, from a damaged
# file, after pg_resetwal, from another server's file, into a server
# restored from a base backup, or into a server started as a standby; a
# dropped database's entries are freed at the drop, not saved.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MemoTest;

my $node = memo_node('main', init => [allows_streaming => 1]);
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo;
  CREATE TABLE emp (id int PRIMARY KEY, dept int, name text);
  INSERT INTO emp SELECT g, g % 2, 'name ' || g FROM generate_series(1, 10) g;
  SELECT memo.watch('emp');
  CREATE FUNCTION cached_list_employees(d int) RETURNS TABLE (id int, name text)
    LANGUAGE sql AS $$
      SELECT * FROM memo.list('employees', 'SELECT id, name FROM emp WHERE dept = $1 ORDER BY id',
                              ARRAY[d::text]) AS t(id int, name text)
    $$;
});

my $saved_file = 'pg_stat/pg_memo.cache';
my $dept1 = '1,3,5,7,9';

sub employees {
    return $node->safe_psql('postgres',
        q{SELECT string_agg(id::text, ',' ORDER BY id) FROM cached_list_employees(1)});
}

# hits/misses/computations of the cache since the server started.
sub counts {
    return $node->safe_psql('postgres',
        q{SELECT hits || '/' || misses || '/' || computations FROM memo.stats WHERE cache_name = 'employees'});
}

# Runs $action (which stops and/or starts nodes) and returns what $n logged
# meanwhile.
sub log_of {
    my ($n, $action) = @_;
    my $offset = -s $n->logfile;
    $action->();
    return slurp_file($n->logfile, $offset);
}

my $not_restoring = qr/LOG:  pg_memo: not restoring the cache saved at .+?: /;

# A dropped database: its entries and statistics rows are freed at the drop,
# so the next save has nothing of it (a later database may get its OID).
{
    $node->safe_psql('postgres', 'CREATE DATABASE gone');
    $node->safe_psql('gone', q{CREATE EXTENSION pg_memo; CREATE TABLE g (id int); SELECT memo.watch('g');
                              SELECT memo.count('gone.c', 'SELECT * FROM g');});
    is($node->safe_psql('postgres', q{SELECT entries FROM memo.stats WHERE datname = 'gone'}), '1', 'an entry of a database');
    $node->safe_psql('postgres', 'DROP DATABASE gone');
    is($node->safe_psql('postgres', 'SELECT entries FROM memo.info'), '0', 'DROP DATABASE frees its entries');
    my $log = log_of($node, sub { $node->restart });
    like($log, qr/pg_memo: saved 0 cached results/, 'the clean shutdown saves none of it');
    is($node->safe_psql('postgres', q{SELECT count(*) FROM memo.stats WHERE datname IS NULL}), '0',
       'and no statistics row of it comes back');
}

# (a) pg_ctl restart -m fast: saved, restored, and the first call is a hit.
is(employees(), $dept1, 'first call computes');
my $log = log_of($node, sub { $node->restart });
like($log, qr/LOG:  pg_memo: saved 1 cached results to "pg_stat\/pg_memo.cache"/, 'the clean shutdown saved the cache');
like($log, qr/LOG:  pg_memo: restored 1 cached results saved at /, 'the start restored it');
ok(!-e $node->data_dir . "/$saved_file", 'the file is removed once read');
is(employees(), $dept1, 'same result after the restart');
is(counts(), '1/0/0', 'the first call after a fast restart is a hit: no computation');
is($node->safe_psql('postgres', 'SELECT restored_entries, restored_at IS NOT NULL FROM memo.info'), '1|t',
    'memo.info says when the arena was restored, and how many entries');


# (b) The restored counters are the saved ones: a write after the restart
# moves them past the restored entry's stamps.
like(log_of($node, sub { $node->restart }), qr/restored 1 cached results/, 'restored again');
$node->safe_psql('postgres', q{INSERT INTO emp VALUES (11, 1, 'new')});
is(employees(), "$dept1,11", 'a write committed after the restart is seen');
is(counts(), '0/1/1', 'the restored entry was invalidated by it');

# The employee directory's API: after pg_ctl restart -m fast, the first
# cached_list_employees(1) is a hit.
$node->safe_psql('postgres', q{
  CREATE EXTENSION pg_memo_directory CASCADE;
  SELECT directory.directory_seed(300);
});
my $directory_page = q{SELECT count(*) FROM directory.cached_list_employees(1)};
my $page_rows = $node->safe_psql('postgres', $directory_page);
my $page_counts = q{SELECT hits || '/' || computations FROM memo.stats WHERE cache_name = 'employees.page'};
like(log_of($node, sub { $node->restart }), qr/restored \d+ cached results/, 'fast restart with the directory');
is($node->safe_psql('postgres', $directory_page), $page_rows, 'the same first page after the restart');
is($node->safe_psql('postgres', $page_counts), '1/0', 'the first cached_list_employees(1) after the restart is a hit');

# Scopes (1.2: the directory's path and id): the restored scope counters are
# the saved ones. A team's page restored, a write elsewhere leaves it a hit;
# a write in its subtree is seen.
my ($team, $elsewhere) = split /\|/, $node->safe_psql('postgres', q{
  SELECT t.id, (SELECT e.id FROM directory.employees e WHERE NOT e.path @> ARRAY[t.id] AND e.id > 1 ORDER BY e.id DESC LIMIT 1)
    FROM directory.employees t WHERE t.sub_org_size > 2 AND t.id > 1 ORDER BY t.id LIMIT 1});
my $team_page = qq{SELECT string_agg(x.title, ',' ORDER BY x.id) FROM directory.cached_list_employees($team) x};
my $team_truth = qq{SELECT string_agg(x.title, ',' ORDER BY x.id) FROM directory.list_employees($team) x};
$node->safe_psql('postgres', $team_page);
like(log_of($node, sub { $node->restart }), qr/restored \d+ cached results/, 'fast restart with a team page');
$node->safe_psql('postgres', qq{UPDATE directory.employees SET title = 'Elsewhere' WHERE id = $elsewhere});
is($node->safe_psql('postgres', $team_page), $node->safe_psql('postgres', $team_truth), 'the team page after the restart');
is($node->safe_psql('postgres', $page_counts), '1/0', 'a plain hit: the write was in another scope');
$node->safe_psql('postgres', qq{UPDATE directory.employees SET title = 'Inside'
                                 WHERE id = (SELECT x.id FROM directory.list_employees($team) x LIMIT 1)});
is($node->safe_psql('postgres', $team_page), $node->safe_psql('postgres', $team_truth),
   'a write in its scope after the restart is seen');
like($node->safe_psql('postgres', $team_page), qr/Inside/, 'the new title on the page');
$node->safe_psql('postgres', 'DROP EXTENSION pg_memo_directory');

# (c) An immediate stop is a crash: nothing saved, nothing restored.
$log = log_of($node, sub { $node->stop('immediate'); $node->start; });
like($log, qr/LOG:  pg_memo: starting with an empty cache: the server did not shut down cleanly/,
    'after an immediate stop the log says why nothing is restored');
unlike($log, qr/restored \d+ cached results/, 'nothing restored after an immediate stop');
is(employees(), "$dept1,11", 'result after the crash');
is(counts(), '0/1/1', 'the first call after an immediate stop is a miss');
is($node->safe_psql('postgres', 'SELECT restored_entries, restored_at IS NULL FROM memo.info'), '0|t',
    'memo.info: nothing restored');

# (d) pg_memo.save = off (reloadable): nothing saved.
$node->append_conf('postgresql.conf', 'pg_memo.save = off');
$node->reload;
$log = log_of($node, sub { $node->stop });
like($log, qr/LOG:  pg_memo: not saving the cache: pg_memo.save is off/, 'pg_memo.save off: not saved');
ok(!-e $node->data_dir . "/$saved_file", 'no file written');
$node->append_conf('postgresql.conf', 'pg_memo.save = on');
$log = log_of($node, sub { $node->start });
like($log, qr/LOG:  pg_memo: starting with an empty cache: no cache was saved at the last shutdown/,
    'the start says no cache was saved');
is(employees(), "$dept1,11", 'result after the restart without a save');
is(counts(), '0/1/1', 'a miss');

# (e) Another pg_memo.cache_size: not restored.
$node->stop;
ok(-e $node->data_dir . "/$saved_file", 'saved at the clean stop');
$node->append_conf('postgresql.conf', "pg_memo.cache_size = '32MB'");
$log = log_of($node, sub { $node->start });
like($log, qr/${not_restoring}pg_memo.cache_size changed from 65536 kB to 32768 kB/,
    'a changed cache_size: the log says why');
ok(!-e $node->data_dir . "/$saved_file", 'the refused file is removed too');
employees();
is(counts(), '0/1/1', 'a miss after the cache_size change');

# (f) A damaged file: one byte flipped.
$node->stop;
my $path = $node->data_dir . "/$saved_file";
my $size = -s $path;
open(my $fh, '+<:raw', $path) or die "open $path: $!";
seek($fh, $size - 40, 0);
read($fh, my $byte, 1);
seek($fh, $size - 40, 0);
print $fh chr(ord($byte) ^ 0x10);
close($fh);
$log = log_of($node, sub { $node->start });
like($log, qr/${not_restoring}the file is damaged \(its checksum does not match\)/, 'a damaged file is refused');
employees();
is(counts(), '0/1/1', 'a miss after the damaged file');

# (g) pg_resetwal after a clean stop: the checkpoint moved.
$node->stop;
command_ok([ 'pg_resetwal', '-f', $node->data_dir ], 'pg_resetwal -f');
$log = log_of($node, sub { $node->start });
like($log, qr/${not_restoring}the server's last checkpoint is \S+ on timeline 1, not the shutdown checkpoint \S+ on timeline 1 it was saved after/,
    'after pg_resetwal the file is refused');
employees();
is(counts(), '0/1/1', 'a miss after pg_resetwal');

# (h) A file from another server (another system identifier).
my $other = memo_node('other');
$other->stop;
$node->stop;
copy($node->data_dir . "/$saved_file", $other->data_dir . "/$saved_file") or die "copy: $!";
$log = log_of($other, sub { $other->start });
like($log, qr/${not_restoring}it was saved by another server \(system identifier \d+, this server's is \d+\)/,
    'another server\'s file is refused');
unlike($log, qr/restored \d+ cached results/, 'nothing restored on the other server');
$other->stop;
# Its own server still restores it (the copy above left it in place).
like(log_of($node, sub { $node->start }), qr/restored 1 cached results/, 'the server that saved it restores it');
is(employees(), "$dept1,11", 'restored result');
is(counts(), '1/0/0', 'a hit');

# (i) A restore from a base backup, given the file its origin saved later.
$node->backup('wr_backup');
$node->stop;
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($node, 'wr_backup');
copy($node->data_dir . "/$saved_file", $restored->data_dir . "/$saved_file") or die "copy: $!";
$log = log_of($restored, sub { $restored->start });
like($log, qr/${not_restoring}backup_label exists: the server starts from a base backup/,
    'a server restored from a backup refuses the file');
unlike($log, qr/restored \d+ cached results/, 'nothing restored from the backup');
$restored->stop;

# A backend killed: the postmaster reinitializes shared memory (crash
# restart). Nothing to restore then, and the next clean stop saves once.
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
like(log_of($node, sub { $node->start }), qr/restored 1 cached results/, 'restored before the crash');
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$log = log_of($node, sub {
    my $offset = -s $node->logfile;
    kill 'KILL', $victim_pid;
    $victim->quit;
    # Not before the postmaster has seen the death: a query may still run
    # in between.
    $node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
    $node->poll_query_until('postgres', 'SELECT 1', '1') or die 'no crash restart';
});
like($log, qr/pg_memo: starting with an empty cache: the server did not shut down cleanly/,
    'a crash restart starts empty');
employees();
is(counts(), '0/1/1', 'a miss after the crash restart');
$log = log_of($node, sub { $node->stop });
is(scalar(() = $log =~ /pg_memo: saved 1 cached results/g), 1, 'the clean stop after a crash restart saves once');

# (j) standby.signal: the server will replay WAL it has not seen.
$node->set_standby_mode;
$log = log_of($node, sub { $node->start });
like($log, qr/${not_restoring}standby.signal exists: the server starts as a standby/,
    'a server started as a standby refuses the file');
unlike($log, qr/restored \d+ cached results/, 'nothing restored on the standby');
like(log_of($node, sub { $node->stop }), qr/pg_memo: not saving the cache: the server was a standby when it shut down/,
    'a standby saves nothing');

done_testing();
