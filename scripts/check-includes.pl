#!/usr/bin/env perl
# Fails on an include cycle between pg_memo's modules or between its folders.
#
# A module is a source file and its header (compute.cpp and compute.hpp);
# module A depends on B when A's source or header includes B's header.
#
# A folder is a subsystem's directory: each folder under src/pg (admin,
# compute, ...), the files directly in src/pg ("base") and src/core ("core");
# in directory/, the files directly in directory/src ("base") and each folder
# under it. Folder A depends on B when a file in A includes a file in B.
# A folder cycle needs no module cycle: compute/a.cpp including serve/b.hpp
# and serve/c.cpp including compute/d.hpp tangle two subsystems while no
# module includes itself.
#
# Prints every cycle found (one per strongly connected group), with the file
# includes that make a folder cycle's edges, and exits 1 if there is one.
# Without a folder cycle it prints each tree's folders in a ladder order
# (lowest first: a folder comes after every folder it includes).
#
#   scripts/check-includes.pl [DIR...]     # default: src and directory
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Find;
use Cwd ();
use FindBin;

# Each tree and its include paths (the Makefiles' -I): a header is looked up
# next to the including file, then there.
my $top = Cwd::abs_path("$FindBin::RealBin/..");
my %include_paths = @ARGV ? (map { $_ => ["$_/pg", "$_/core", "$_/src"] } map { s{/+$}{}r } @ARGV)
                          : ("$top/src" => ["$top/src/pg", "$top/src/core"], "$top/directory" => ["$top/directory/src"]);
my @roots = sort keys %include_paths;
my %module_of;  # path of a file -> its module's name (its path without the extension)
my %includes;   # module -> { module it includes }
my %root_of;    # path of a file -> the tree it is in
my %folder_of;  # path of a file -> its folder's name within its tree
my %folder_includes;  # tree -> folder -> { folder it includes -> [ "file includes file", ... ] }
my @files;
find({ wanted => sub { push @files, $File::Find::name if /\.(cpp|hpp|c|h)$/ }, no_chdir => 1 }, grep { -d } @roots);
for my $f (@files) {
    (my $m = $f) =~ s/\.(cpp|hpp|c|h)$//;
    $module_of{$f} = $m;
    ($root_of{$f}) = grep { index($f, "$_/") == 0 } @roots;
    $folder_of{$f} = folder_of($f, $root_of{$f});
}

# A file's path within its tree as its includes spell it: below pg/ or src/
# (the include paths where the base lives), core/ kept.
sub in_tree {
    my ($f, $root) = @_;
    (my $rel = substr($f, length($root) + 1)) =~ s{^(pg|src)/}{};
    return $rel;
}

# The folder a file belongs to: the first directory of its in-tree path, so
# everything under core/ is core and a folder's subfolders are part of it;
# "base" for the files directly in the include root.
sub folder_of {
    my ($f, $root) = @_;
    my $rel = in_tree($f, $root);
    return $rel =~ m{^([^/]+)/} ? $1 : 'base';
}

for my $f (@files) {
    my $m = $module_of{$f};
    my $root = $root_of{$f};
    open(my $fh, '<', $f) or die "$f: $!";
    while (<$fh>) {
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        my $inc = $1;
        my ($path) = grep { exists $module_of{$_} }
                     map { (my $p = "$_/$inc") =~ s{[^/]+/\.\./}{}g; $p } (dirname($f), @{ $include_paths{$root} });
        next unless $path;
        $includes{$m}{ $module_of{$path} } = 1 if $module_of{$path} ne $m;
        # A file reached by climbing out of the tree (../) is in no folder of it.
        my ($from, $to) = ($folder_of{$f}, $folder_of{$path});
        push @{ $folder_includes{$root}{$from}{$to} }, in_tree($f, $root) . " includes " . in_tree($path, $root)
            if $root_of{$path} eq $root && $from ne $to;
    }
}

# Tarjan's strongly connected components of a graph (node -> { node it
# depends on }), visiting nodes and edges in sorted order so the output is
# stable. Returns the groups of more than one node: each one is a cycle.
sub cycles {
    my ($graph, @nodes) = @_;
    my ($index, @stack, %on, %idx, %low, @groups) = (0);
    my $visit;
    $visit = sub {
        my ($v) = @_;
        $idx{$v} = $low{$v} = $index++;
        push @stack, $v;
        $on{$v} = 1;
        for my $w (sort keys %{ $graph->{$v} // {} }) {
            if (!exists $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
            elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
        }
        if ($low{$v} == $idx{$v}) {
            my @g;
            while (1) { my $w = pop @stack; $on{$w} = 0; push @g, $w; last if $w eq $v }
            push @groups, [sort @g] if @g > 1;
        }
    };
    $visit->($_) for grep { !exists $idx{$_} } sort @nodes;
    undef $visit;  # the closure refers to itself: break the loop so it is freed
    return @groups;
}

# A topological order of an acyclic graph, lowest first: a node comes once
# every node it depends on has come, the alphabetically first of those ready,
# so that the same tree always prints the same ladder.
sub ladder {
    my ($graph, @nodes) = @_;
    my %waits_on = map { $_ => scalar(keys %{ $graph->{$_} // {} }) } @nodes;
    my %needed_by;
    for my $v (@nodes) { push @{ $needed_by{$_} }, $v for keys %{ $graph->{$v} // {} } }
    my (@order, @ready);
    @ready = sort grep { !$waits_on{$_} } @nodes;
    while (@ready) {
        my $v = shift @ready;
        push @order, $v;
        push @ready, grep { !--$waits_on{$_} } @{ $needed_by{$v} // [] };
        @ready = sort @ready;
    }
    return @order;
}

my $short = sub { (my $s = $_[0]) =~ s{^\Q$top\E/}{}; $s };

# Folders, tree by tree: an include never crosses trees, and the same folder
# name (base) means a different folder in each.
my $folder_cycles = 0;
my @ladders;
for my $root (@roots) {
    my @folders = sort keys %{ { map { $folder_of{$_} => 1 } grep { $root_of{$_} eq $root } @files } };
    next unless @folders;
    my $graph = $folder_includes{$root} // {};
    my @groups = cycles($graph, @folders);
    my $tree = @roots > 1 ? " in " . $short->($root) : "";
    for my $g (@groups) {
        my %in = map { $_ => 1 } @$g;
        print "folder cycle$tree among: ", join(', ', @$g), "\n";
        for my $from (@$g) {
            for my $to (grep { $in{$_} } sort keys %{ $graph->{$from} // {} }) {
                print "  $from -> $to: $_\n" for sort @{ $graph->{$from}{$to} };
            }
        }
    }
    $folder_cycles += @groups;
    push @ladders, "folders$tree form a ladder: " . join(' < ', ladder($graph, @folders)) . "\n" unless @groups;
}
print $folder_cycles ? "FAIL: $folder_cycles folder cycle(s)\n" : @ladders;

# Modules.
my @groups = cycles(\%includes, values %module_of);
for my $g (@groups) {
    my %in = map { $_ => 1 } @$g;
    print "include cycle among: ", join(', ', map { $short->($_) } @$g), "\n";
    for my $m (@$g) {
        my @to = grep { $in{$_} } sort keys %{ $includes{$m} };
        print "  ", $short->($m), " -> ", join(', ', map { $short->($_) } @to), "\n";
    }
}
my $n = keys %{ { map { $_ => 1 } values %module_of } };
my $edges = 0;
$edges += keys %{ $includes{$_} } for keys %includes;
print scalar(@groups) ? "FAIL: " . scalar(@groups) . " include cycle(s)\n"
                      : "no include cycle among $n modules ($edges includes between them)\n";
exit(@groups || $folder_cycles ? 1 : 0);
