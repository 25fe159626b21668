# Scaffolding the TAP tests share: a cluster with pg_memo preloaded, and
# memo.stats lookups.
package MemoTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(memo_node memo_stat);

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

1;
