#!/usr/bin/env perl
# Fails on an include cycle between pg_memo's modules. A module is a source
# file and its header (compute.cpp and compute.hpp); module A depends on B
# when A's source or header includes B's header. Prints every cycle found
# (one per strongly connected group of modules) and exits 1 if there is one.
#
#   scripts/check-includes.pl [DIR...]     # default: src directory
use strict;
use warnings;
use File::Basename qw(basename dirname);
use File::Find;
use FindBin;

my @roots = @ARGV ? @ARGV : ("$FindBin::RealBin/../src", "$FindBin::RealBin/../directory");
my %module_of;  # path of a file -> its module's name (its path without the extension)
my %includes;   # module -> { module it includes }
my @files;
find({ wanted => sub { push @files, $File::Find::name if /\.(cpp|hpp|c|h)$/ }, no_chdir => 1 }, grep { -d } @roots);
for my $f (@files) {
    (my $m = $f) =~ s/\.(cpp|hpp|c|h)$//;
    $module_of{$f} = $m;
}
my %by_base;  # header basename -> modules with a header of that name
for my $f (grep { /\.(hpp|h)$/ } @files) { push @{ $by_base{basename($f)} }, $module_of{$f} }

for my $f (@files) {
    my $m = $module_of{$f};
    open(my $fh, '<', $f) or die "$f: $!";
    while (<$fh>) {
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        my $inc = $1;
        # Relative to the including file first, then by name (the -I paths).
        my $path = dirname($f) . "/$inc";
        1 while $path =~ s{[^/]+/\.\./}{};
        my @targets = exists $module_of{$path} ? ($module_of{$path}) : @{ $by_base{basename($inc)} // [] };
        die "$f: \"$inc\" names more than one header: @targets\n" if @targets > 1;
        $includes{$m}{ $targets[0] } = 1 if @targets && $targets[0] ne $m;
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

my $root = "$FindBin::RealBin/..";
my $short = sub { (my $s = $_[0]) =~ s{^\Q$root\E/}{}; $s };
for my $g (@groups) {
    my %in = map { $_ => 1 } @$g;
    print "include cycle among: ", join(', ', map { $short->($_) } @$g), "\n";
    for my $m (@$g) {
        my @to = grep { $in{$_} } sort keys %{ $includes{$m} };
        print "  ", $short->($m), " -> ", join(', ', map { $short->($_) } @to), "\n";
    }
}
my $n = keys %{ { map { $_ => 1 } values %module_of } };
print scalar(@groups) ? "FAIL: " . scalar(@groups) . " include cycle(s)\n" : "no include cycle among $n modules\n";
exit(@groups ? 1 : 0);
