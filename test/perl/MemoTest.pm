# Scaffolding the TAP tests share: a cluster with pg_memo preloaded,
# memo.stats lookups, and calls started in a session of their own.
package MemoTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(memo_node memo_stat start_call finish_call wait_until);

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

1;
