# The SQL examples of a Markdown document, for test/t/021_docs_examples.pl.
#
# An example is a fenced block tagged sql (```sql). What the test does
# with it is said by an HTML comment on the line before the fence (blank
# lines between allowed), with one or more of, separated by ';':
#
#   <!-- example: not run (REASON) -->   skipped, and listed with REASON
#   <!-- example: error -->              it must fail (ON_ERROR_STOP)
#   <!-- example: new database -->       run in a database of its own with
#                                        the fixture's tables but no extension
#   <!-- example: new database after SQL -->   the same, after SQL there
#   <!-- example: run with NEW for OLD -->   run with the text OLD replaced
#                                        by NEW (a smaller seed, say)
#
# A block of function signatures and nothing else (schema.function(...)
# RETURNS ..., comments) is not run: each signature must be one of the
# function's, its arguments with their defaults, its result, STRICT
# exactly when a comment on its lines says so, and STABLE or IMMUTABLE if
# one says so. Any other block runs in the document's database, after the
# examples above it, and must not fail. A fenced block tagged text right after the
# example (blank lines between allowed) is the output psql shows for it:
# what psql prints (aligned, the default format) with the notices,
# warnings and errors among it, without psql's "psql:<stdin>:N: " prefix.
package DocExamples;
use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(doc_examples signature_entries normal_arguments normal_result);

# doc_examples(PATH): the examples of the document, in order, each a hash:
# line (of the opening fence), sql, output (undef without an output block),
# signature (true for a block of signatures), and the marker's fields:
# skip (the reason), error,
# new_database, setup (the SQL after "new database after"), replace (a
# list of [OLD, NEW]).
sub doc_examples {
    my ($path) = @_;
    open my $fh, '<', $path or die "cannot read $path: $!";
    my @lines = <$fh>;
    close $fh;
    chomp @lines;
    my (@examples, $fence, $tag, $start, @body, $marker, $marker_line);
    my $last;  # the example a text block right after it belongs to
    for my $i (0 .. $#lines) {
        my $l = $lines[$i];
        if (defined $fence) {
            if ($l =~ /^ {0,3}\Q$fence\E\s*$/) {
                my $text = join("\n", @body) . (@body ? "\n" : '');
                if ($tag eq 'sql') {
                    my $ex = { line => $start, sql => $text, marker_parse($marker, $path, $marker_line) };
                    $ex->{signature} = 1 if eval { signature_entries($text) };
                    push @examples, $ex;
                    $last = $ex;
                } elsif ($tag eq 'text' && $last && !defined $last->{output}) {
                    $last->{output} = $text;
                    $last = undef;
                } else {
                    $last = undef;
                }
                undef $fence;
                undef $marker;
            } else {
                push @body, $l;
            }
            next;
        }
        if ($l =~ /^ {0,3}(```+)\s*(\S*)/) {
            ($fence, $tag, $start, @body) = ($1, $2, $i + 1);
            # A text block follows its example with nothing but blank lines between.
            $last = undef unless $tag eq 'text';
            next;
        }
        next if $l =~ /^\s*$/;
        $last = undef;
        if ($l =~ /^<!--\s*example:\s*(.*?)\s*-->\s*$/) {
            ($marker, $marker_line) = ($1, $i + 1);
        } else {
            undef $marker;
        }
    }
    die "$path: a fence opened at line $start is not closed\n" if defined $fence;
    # Every line that opens a sql block opened an example.
    my $fences = grep { /^\s*```+\s*sql\b/ } @lines;
    die "$path: $fences sql fences, " . scalar(@examples) . " examples\n" unless $fences == @examples;
    return @examples;
}

sub marker_parse {
    my ($marker, $path, $line) = @_;
    return () unless defined $marker;
    my %m;
    for my $part (split /\s*;\s*(?=not run|error|new database|run with)/, $marker) {
        if ($part =~ /^not run \((.+)\)$/) { $m{skip} = $1 }
        elsif ($part eq 'error') { $m{error} = 1 }
        elsif ($part =~ /^new database(?: after (.+))?$/) { $m{new_database} = 1; $m{setup} = $1 }
        elsif ($part =~ /^run with (.+?) for (.+)$/) { push @{ $m{replace} }, [ $2, $1 ] }
        else { die "$path:$line: unknown example marker: $part\n" }
    }
    return %m;
}

# signature_entries(SQL): the signatures of a signature block, each a hash:
# name (schema.function), arguments and result (as normal_arguments and
# normal_result give them; result undef if the block gives none), the
# comments on its lines. "NAME(<same arguments>)" has the arguments of the
# entry before it; an entry without RETURNS has the next entry's result.
sub signature_entries {
    my ($sql) = @_;
    my @entries;
    my $code = '';
    my @comment_at;  # the comment of each line, by the offset in $code
    for my $l (split /\n/, $sql) {
        my ($c, $comment) = $l =~ /^(.*?)(?:--(.*))?$/;
        push @comment_at, [ length($code), length($code) + length($c) + 1, $comment // '' ];
        $code .= "$c\n";
    }
    while ($code =~ /\G\s*(\w+\.\w+)\s*\(/gc) {
        my ($name, $from) = ($1, $-[1]);
        my ($depth, $args) = (1, '');
        while ($depth && $code =~ /\G([^()]*)([()])/gc) {
            $args .= $1;
            $depth += $2 eq '(' ? 1 : -1;
            $args .= $2 if $depth;
        }
        die "unbalanced parentheses after $name\n" if $depth;
        my $result;
        if ($code =~ /\G\s*RETURNS\s+(.*?)\s*(?=\n\s*(?:\w+\.\w+\s*\(|$)|\z)/gcs) {
            $result = normal_result($1);
        }
        my $to = pos($code);
        my $comments = join ' ', map { $_->[2] } grep { $_->[1] > $from && $_->[0] < $to } @comment_at;
        $args = $args =~ /^\s*<same arguments>\s*$/ && @entries ? $entries[-1]{arguments} : normal_arguments($args);
        push @entries, { name => $name, arguments => $args, result => $result, comments => $comments };
    }
    $code =~ /\G\s*\z/gc or die "not a signature: " . substr($code, pos($code) // 0, 60) . "\n";
    for my $i (reverse 0 .. $#entries - 1) {
        $entries[$i]{result} //= $entries[ $i + 1 ]{result};
    }
    return @entries;
}

# The spellings of a type as pg_get_function_arguments and
# pg_get_function_result print it.
sub normal_type {
    my ($t) = @_;
    $t = lc $t;
    $t =~ s/\s+/ /g;
    $t =~ s/\bint4?\b/integer/g;
    $t =~ s/\bint8\b/bigint/g;
    $t =~ s/\bint2\b/smallint/g;
    $t =~ s/\bbool\b/boolean/g;
    $t =~ s/\bfloat8\b/double precision/g;
    $t =~ s/\btimestamptz\b/timestamp with time zone/g;
    return $t;
}

# An argument list, one line, the casts of the defaults dropped
# ('{}'::text[] as '{}', NULL::text as NULL).
sub normal_arguments {
    my ($a) = @_;
    $a =~ s/^\s+|\s+$//g;
    my @args = split /\s*,\s*(?=(?:[^']*'[^']*')*[^']*$)/, $a;
    return join ', ', map {
        my ($decl, $default) = /^(.*?)(?:\s+DEFAULT\s+(.*))?$/is;
        my $d = normal_type($decl);
        if (defined $default) {
            $default =~ s/::[\w.]+(?: (?:precision|varying|with(?:out)? time zone))?(?:\[\])?//g;
            $d .= " DEFAULT $default";
        }
        $d;
    } @args;
}

sub normal_result {
    my ($r) = @_;
    $r =~ s/^\s+|\s+$//g;
    $r =~ s/^TABLE\s*\(\s*(.*?)\s*\)$/'TABLE(' . normal_arguments($1) . ')'/eis;
    return normal_type($r) =~ s/^setof /SETOF /r =~ s/^table\(/TABLE(/r;
}

1;
