# Scaffolding the TAP tests share: a cluster with pg_memo preloaded,
# memo.stats lookups, and calls started in a session of their own.
package MemoTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();
use Test::More ();

our @EXPORT = qw(memo_node memo_stat start_call finish_call wait_until start_pgbouncer stop_pgbouncer);

# memo_node(NAME, init => [ARGS], conf => TEXT): a started cluster with
# pg_memo in shared_preload_libraries and TEXT appended to postgresql.conf.
# Creating the extension is left to the test's own setup.
sub memo_node {
    my ($name, %o) = @_;
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init(@{ $o{init} // [] });
    $node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_memo'\n" . ($o{conf} // ''));
    $node->start;
    return $node;
}

# One column of memo.stats for a cache name.
sub memo_stat {
    my ($node, $cache, $column) = @_;
    return $node->safe_psql('postgres', "SELECT $column FROM memo.stats WHERE cache_name = '$cache'");
}

# start_call(NODE, SQL, setup => SQL): starts SQL in a new session without
# waiting for it (after the setup, if any); returns the session and its
# backend pid.
sub start_call {
    my ($node, $sql, %opts) = @_;
    my $s = $node->background_psql('postgres', on_error_stop => 0);
    my $pid = $s->query_safe('SELECT pg_backend_pid()');
    $s->query_safe($opts{setup}) if $opts{setup};
    $s->query_until(qr/started/, "\\echo started\n$sql;\n");
    return ($s, $pid);
}

# Waits for a started call to finish; returns (stdout, stderr).
sub finish_call {
    my ($s) = @_;
    my ($out) = $s->query('SELECT 1 AS finished');
    my $err = $s->{stderr};
    $s->quit;
    $out =~ s/\n?1\s*$//;  # drop the marker query's row
    return ($out, $err);
}

sub wait_until {
    my ($node, $query, $what) = @_;
    $node->poll_query_until('postgres', $query) or die "timed out waiting for $what";
}

# start_pgbouncer(NODE, USERS): a PgBouncer in transaction pooling mode in
# front of NODE's database postgres, on 127.0.0.1 and a free port, letting
# in USERS (trust), as a pooler runs in front of an application, in a
# directory of NODE's own (a test file's PgBouncer leaves nothing to the
# next). Returns (the connection string for USERS' first, its directory,
# its port); one test (Test::More) that it accepts connections.
# stop_pgbouncer(DIRECTORY) stops it.
sub start_pgbouncer {
    my ($node, @users) = @_;
    my $dir = $node->basedir . '/pgbouncer';
    mkdir $dir;
    my $port = PostgreSQL::Test::Cluster::get_free_port();
    write_new_file("$dir/users.txt", join('', map { qq{"$_" ""\n} } @users));
    write_new_file("$dir/pgbouncer.ini", join("\n",
        '[databases]', 'postgres = host=' . $node->host . ' port=' . $node->port . ' dbname=postgres', '',
        '[pgbouncer]', 'listen_addr = 127.0.0.1', "listen_port = $port", 'unix_socket_dir =',
        'auth_type = trust', "auth_file = $dir/users.txt", 'pool_mode = transaction',
        'default_pool_size = 2', 'max_client_conn = 20', "logfile = $dir/pgbouncer.log",
        "pidfile = $dir/pgbouncer.pid", 'ignore_startup_parameters = extra_float_digits', ''));
    my $bouncer = -x '/usr/sbin/pgbouncer' ? '/usr/sbin/pgbouncer' : 'pgbouncer';
    system($bouncer, '-d', "$dir/pgbouncer.ini") == 0 or Test::More::BAIL_OUT('pgbouncer did not start');
    my $pooled = "host=127.0.0.1 port=$port dbname=postgres user=$users[0]";
    my $accepting = 0;
    for (1 .. 100) {  # bounded: PgBouncer starts in well under a second
        last if ($accepting = system('psql', '-XAtq', '-c', 'SELECT 1', $pooled) == 0);
        select(undef, undef, undef, 0.1);
    }
    Test::More::ok($accepting, 'PgBouncer accepts connections')
      or Test::More::BAIL_OUT('PgBouncer did not accept connections');
    return ($pooled, $dir, $port);
}

sub write_new_file {
    my ($path, $text) = @_;
    open(my $fh, '>', $path) or die "cannot write $path: $!";
    print $fh $text;
    close($fh) or die "cannot write $path: $!";
}

sub stop_pgbouncer {
    my ($dir) = @_;
    my $pid = PostgreSQL::Test::Utils::slurp_file("$dir/pgbouncer.pid");
    chomp $pid;
    kill 'TERM', $pid if $pid =~ /^\d+$/;
}

1;
