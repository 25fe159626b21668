#!/usr/bin/env perl
# Fails on an include cycle between pg_memo's modules. A module is a source
# file and its header (compute.cpp and compute.hpp); module A depends on B
# when A's source or header includes B's header. Prints every cycle found
# (one per strongly connected group of modules) and exits 1 if there is one.
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
my %include_paths = @ARGV ? (map { $_ => ["$_/pg", "$_/core", "$_/src"] } @ARGV)
                          : ("$top/src" => ["$top/src/pg", "$top/src/core"], "$top/directory" => ["$top/directory/src"]);
my @roots = sort keys %include_paths;
my %module_of;  # path of a file -> its module's name (its path without the extension)
my %includes;   # module -> { module it includes }
my @files;
find({ wanted => sub { push @files, $File::Find::name if /\.(cpp|hpp|c|h)$/ }, no_chdir => 1 }, grep { -d } @roots);
for my $f (@files) {
    (my $m = $f) =~ s/\.(cpp|hpp|c|h)$//;
    $module_of{$f} = $m;
}

for my $f (@files) {
    my $m = $module_of{$f};
    my ($root) = grep { index($f, "$_/") == 0 } @roots;
    open(my $fh, '<', $f) or die "$f: $!";
    while (<$fh>) {
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        my $inc = $1;
        my ($path) = grep { exists $module_of{$_} }
                     map { (my $p = "$_/$inc") =~ s{[^/]+/\.\./}{}g; $p } (dirname($f), @{ $include_paths{$root} });
        $includes{$m}{ $module_of{$path} } = 1 if $path && $module_of{$path} ne $m;
    }
}

# Tarjan's strongly connected components.
my ($index, @stack, %on, %idx, %low, @groups) = (0);
my $visit;
$visit = sub {
    my ($v) = @_;
    $idx{$v} = $low{$v} = $index++;
    push @stack, $v;
    $on{$v} = 1;
    for my $w (sort keys %{ $includes{$v} // {} }) {
        if (!exists $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
        elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
    }
    if ($low{$v} == $idx{$v}) {
        my @g;
        while (1) { my $w = pop @stack; $on{$w} = 0; push @g, $w; last if $w eq $v }
        push @groups, [sort @g] if @g > 1;
    }
};
$visit->($_) for grep { !exists $idx{$_} } sort values %module_of;

my $short = sub { (my $s = $_[0]) =~ s{^\Q$top\E/}{}; $s };
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
exit(@groups ? 1 : 0);
