# The engine of test/t/008_adversarial_probes.pl: runs a probe (setup, a memoized
# query, a change) through a fixed choreography of sessions and compares
# every memo call with the same query run directly, at the same moment, in
# the same session.
#
# A probe is a hash:
#   name     unique; the cache name is "adv.<name>"
#   setup    SQL run once as the superuser before anything else
#   kind     'count' (memo.count) or 'list' (memo.list ... AS t(cols))
#   query    the query text; $n are filled from params
#   params   array ref of parameter texts (default none)
#   cols     the column definition list, for 'list'
#   role     compare as this role (SET ROLE, or SET SESSION AUTHORIZATION
#            when auth => 'session'); setup and change run as superuser
#   path     search_path of every session
#   session  SQL run in every session of the probe once it is opened (a
#            setting, say)
#   change   SQL run by the writer W (as superuser); undef: no change phases
#   outside  the change cannot run in a transaction block: it is run once,
#            in autocommit, and only the "after commit" phase is checked
#   rows_only  the change only writes rows (through a function, say), for
#            ADV_MAX_STALENESS runs, which leave such probes out
#   after    SQL run in autocommit after the commit phase, followed by one
#            more round of comparisons
#   refuse   the memo call must fail with this SQLSTATE, from the first call
#            on (and every memo call failing with it counts as agreement)
#   refuse_after  once the change is visible (W during, and after commit),
#            the memo call must fail with this SQLSTATE
#   allow    a memo call failing with this SQLSTATE also counts as
#            agreement (a refusal other than 0A000 that is legitimate)
#   todo     a reason: the probe's failures are reported as TODO
#   registered_todo  the same, through registered statements only
#            (ADV_REGISTERED)
#   uncached a reason: the query is never served from the cache before the
#            change (a memo call inside it, say). Otherwise (and unless it
#            must be refused) a warm call must be served from the cache: a
#            hit, a remembered error or an older answer (memo.stats), so
#            that a build that refuses or bypasses everything fails
#   learns   how many first calls learn what the query's functions read
#            and store nothing (docs/reference.md): as many more warm calls
#   inert    the change is not expected to change the result (otherwise
#            the direct result after the commit must differ from the one
#            before, so that a memo call that kept the old one is caught)
#   portal   (ADV_REGISTERED only) the statement is also read through
#            portals whose snapshot is taken before W's change or commit
#            and whose rows are first fetched after it (see "Portals"
#            below): 1 for cursors (DECLARE ... CURSOR FOR, then FETCH),
#            'execute' for a prepared statement (PREPARE, then EXECUTE).
#            Skipped through memo.list (test/t/008) and on standbys
#            (test/t/016): memo.list is documented to answer as of the
#            call, like any VOLATILE function, so a cursor over it tests
#            nothing of pg_memo's
#   cursor   the cursor's options before CURSOR ('SCROLL', 'NO SCROLL')
#   hold     the cursors are declared WITH HOLD: the transaction that
#            declared them commits (which runs them to their end) after
#            W's commit, and they are fetched after that
#   fetch    array ref of the commands that read a portal, each with %s
#            for its name (default FETCH ALL FROM %s; EXECUTE %s for
#            portal => 'execute'); their outputs, joined with ' / ', are
#            what is compared
#   fetch_first  a command (with %s) run on each portal right after it is
#            opened, before the change; its output starts the compared text
#   isolation  the isolation level of the transactions that open the
#            portals (BEGIN ISOLATION LEVEL ...), W's included
#
# ADV_ONLY=<Perl regex> (by hand): only the probes whose name matches run
# (MemoProbes.pm, adversarial_probes), in every mode; the checks over all
# probes (most registered, delta probes carried, standby hits) are left
# out then. ADV_ONLY='^(scope|portal)\.' make installcheck ...
#
# ADV_SHAPES (with ADV_REGISTERED, test/t/023): the same, the statement
# registered with its parameters as $n wherever that form has the shape
# of the literal one the client sends: served through the registration's
# shape (issue 47, "Statements matched by shape").
#
# ADV_ADMISSION (with ADV_REGISTERED, test/t/024): nothing is registered;
# the server admits every shape after one execution (pg_memo.admission =
# auto, admission_min_cost 0, admission_calls 1), so that the probe's
# statement is served through automatic admission (issue 47). Each probe
# starts with memo.admission_reset(), and its warm phase calls twice more
# (the first call marks its tables as read by a statement that takes at
# least pg_memo.admission_min_cost, the second is observed, not served). Served calls are counted
# under the cache names of admitted shapes, 'auto:%'.
#
# ADV_REGISTERED (test/t/019): the "memo call" is the probe's query run as
# a client runs it, at the top level, registered with memo.cache_statement
# under the probe's cache name (a registered statement); the direct query
# is the same statement right after, planned as without pg_memo
# (pg_memo.serve_statements = off), both as psql prints them. A query
# pg_memo cannot cache runs as without pg_memo there, so the probe's
# refusals become agreements with the direct query.
#
# The choreography (each "compare" runs the memo call and the direct query
# in one session, one after the other, nothing else running in between):
#   warm      R compares twice (the second time from the cache)
#   during    W: BEGIN, change; W compares twice (it must see its change),
#             R compares twice (it must not)
#   rollback  W: ROLLBACK; R and W compare twice each
#   commit    W: the change again and COMMIT; R and W compare twice each
#   after     the follow-up write; R and W compare twice each
#
# Portals (portal, ADV_REGISTERED): a statement's result must be as of
# its portal's snapshot, which is taken when the cursor is declared (or
# the prepared statement executed), not when its rows are first fetched.
# Portals are opened in pairs, in one transaction: served (planned with
# pg_memo.serve_statements on) and direct (SET LOCAL
# pg_memo.serve_statements = off around its DECLARE, or each EXECUTE), and
# the two are read one after the other, their outputs compared (a
# cursor's rows are those of its snapshot; an EXECUTE is a statement of
# its own, with a snapshot of its own in READ COMMITTED). A third
# session C holds the reader's portals, so that R's compares stay as in
# every probe; C and W open theirs in transactions of the probe's
# isolation level:
#   portal warm      after the warm phase, C opens a pair, reads it and
#                    commits, twice (a portal's statement text is cut out
#                    of its DECLARE or PREPARE, and may be an entry of its
#                    own); the served portals must have been served from
#                    the cache (unless isolation is set)
#   portal during    C opens a pair; W: BEGIN, opens a pair, the change,
#                    reads its pair (a cursor: without its own change)
#   portal rollback  after W's rollback, C reads the pair opened before
#                    W's change
#   portal commit    C opens two pairs; W: BEGIN, opens a pair, the change,
#                    reads its pair (with hold: after its commit), COMMIT;
#                    C reads its first pair (the entry W's commit made
#                    stale, or carried forward by deltas), then W runs the
#                    statement twice, and opens and reads a pair twice (a
#                    newer result stored and hit), then C reads its second
#                    pair: a hit would be the wrong answer now. With hold,
#                    C commits (which runs both pairs) after W's reads and
#                    before its own.
# Then the usual commit and after phases, whose first memo call must not
# return what a portal computed for its older snapshot.
#
# Each compare's verdict is 'agree', 'refused' (the memo call was refused
# with 0A000 or the probe's allowed SQLSTATE: a refusal is not a wrong
# answer) or 'mismatch'; and the warm phase checks that the cache served
# the probe (see uncached). A probe the mode cannot run (a portal probe
# through memo.list or on a standby, a session a standby cannot open) is
# reported as a skipped test.
#
# A compare agrees when the memo call returns exactly what the direct query
# returns, or both fail with the same SQLSTATE, or the memo call is refused
# with 0A000 (pg_memo's "cannot cache"). While W holds a lock that blocks R's
# direct query (lock_timeout 55P03 in R), the memo call may return what R
# saw before W began (the state before W, which a query that waits for W's
# rollback would also return) or fail with 55P03.
package MemoAdversarial;
use strict;
use warnings;
use Exporter 'import';
use Test::More;

our @EXPORT = qw(adv_install adv_drop_roles adv_run_probe adv_run_probe_on_standbys adv_verdict adv_report adv_writes_rows_only adv_check_canary adv_run_top_level_probes);
our $TODO;

# Installs pg_memo and the helper that runs one statement and returns its
# rows as one text ('OK ' and the row texts joined by ' | ') or its error
# ('ERROR ' SQLSTATE message). The exception block is a subtransaction.
sub adv_install {
    my ($node, $db) = @_;
    $node->safe_psql($db // 'postgres', q{
      CREATE EXTENSION pg_memo;
      CREATE FUNCTION public.adv_run(sql text) RETURNS text
      LANGUAGE plpgsql VOLATILE AS $f$
      DECLARE
        r record;
        res text := '';
        n int := 0;
      BEGIN
        FOR r IN EXECUTE sql LOOP
          res := res || CASE WHEN n > 0 THEN ' | ' ELSE '' END || r::text;
          n := n + 1;
        END LOOP;
        RETURN 'OK ' || res;
      EXCEPTION WHEN OTHERS THEN
        RETURN 'ERROR ' || SQLSTATE || ' ' || SQLERRM;
      END
      $f$;
    });
}

# Roles are cluster-wide: drops the probes' roles (adv_...) and what they
# own in the database postgres.
sub adv_drop_roles {
    my ($node) = @_;
    $node->safe_psql('postgres', q{
      SET client_min_messages = warning;
      DO $$
      DECLARE r name;
      BEGIN
        FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'adv\_%' LOOP
          EXECUTE format('DROP OWNED BY %I CASCADE', r);
          EXECUTE format('DROP ROLE %I', r);
        END LOOP;
      END $$;
    });
}

sub lit {
    my ($s) = @_;
    $s =~ s/'/''/g;
    return "'$s'";
}

sub params_sql {
    my ($p) = @_;
    my @params = @{ $p->{params} // [] };
    return "'{}'::text[]" unless @params;
    return 'ARRAY[' . join(', ', map { lit($_) } @params) . ']::text[]';
}

sub cache_name { return 'adv.' . $_[0]->{name}; }

# Calls of the probe's cache name served from the cache on $node: hits,
# remembered errors and older answers.
sub served {
    my ($node, $p, $db) = @_;
    my $names = $ENV{ADV_ADMISSION} ? q{LIKE 'auto:%'} : '= ' . lit(cache_name($p));
    return $node->safe_psql($db // 'postgres',
        "SELECT coalesce(sum(hits + error_hits + stale_hits), 0) FROM memo.stats WHERE cache_name $names");
}

sub expects_caching {
    my ($p) = @_;
    # Automatic admission measures executions that end: a statement that
    # raises every time (what a remembered error serves) is never admitted.
    return 0 if $ENV{ADV_ADMISSION} && ($p->{session} // '') =~ /pg_memo\.error_ttl/;
    return !defined $p->{refuse} && !$p->{uncached};
}

# The warm phase's check that the cache served the probe.
sub served_check {
    my ($session, $before, $after) = @_;
    return { phase => 'warm', session => $session, memo => "served $before -> $after",
             direct => 'served from the cache', verdict => ($after > $before ? 'agree' : 'mismatch'),
             note => 'a warm call was served from the cache' };
}

# The probe's query as a client sends it (its parameters as literals), the
# statement registered for it.
sub statement_sql { return direct_sql($_[0]); }

# The same statement with its parameters as $n (ADV_SHAPES: what is
# registered, while the client sends the literals).
sub parameter_sql {
    my ($p) = @_;
    return $p->{kind} eq 'count' ? "SELECT count(*) FROM ($p->{query}) q" : $p->{query};
}

# Probes registered in their parameter form (ADV_SHAPES), for the test's
# check that the mode tests what it says.
our $registered_by_shape = 0;

# Registers it, with the probe's search path and session settings (the
# identifier depends on what its names resolve to). A statement pg_memo
# refuses is not registered: it then runs as without pg_memo.
# ADV_SHAPES (test/t/023): the statement is registered with its
# parameters as $n where that form has the shape of the literal one the
# client sends (so that every call is served through the registration's
# shape, not its query identifier), else as the client sends it.
sub register_statement {
    my ($node, $p, $db) = @_;
    $db //= 'postgres';
    if ($ENV{ADV_ADMISSION}) {
        # Admitted, not registered: every shape starts afresh.
        $node->safe_psql($db, 'SELECT memo.admission_reset()');
        return 1;
    }
    my $sql = "SET client_min_messages = warning;
";
    $sql .= "SET search_path = $p->{path};
" if $p->{path};
    $sql .= "$p->{session};
" if $p->{session};
    # A session's relaxations do not reach a registered statement: the
    # registration carries them.
    my $options = '';
    for my $o (qw(max_staleness stale_on_error error_ttl)) {
        $options .= ", $o => '$1'" if ($p->{session} // '') =~ /pg_memo\.$o\s*=\s*'([^']+)'/;
    }
    my $register = sub {
        my ($text, $when) = @_;
        my ($rc) = $node->psql($db, $sql . 'SELECT memo.cache_statement($t$' . $text . '$t$, '
                                      . lit(cache_name($p)) . "$options)" . ($when // ''));
        return $rc == 0 && $node->safe_psql($db, 'SELECT count(*) FROM memo.statements WHERE cache_name = '
                                                  . lit(cache_name($p))) > 0;
    };
    my ($literal, $parameters) = (statement_sql($p), parameter_sql($p));
    if ($ENV{ADV_SHAPES} && @{ $p->{params} // [] }
        && $register->($parameters, ' WHERE memo.statement_shape($t$' . $parameters
                                    . '$t$) = memo.statement_shape($t$' . $literal . '$t$)')) {
        $registered_by_shape++;
        return 1;
    }
    return $register->($literal);
}

# The statement at the top level, as psql prints it: 'OK <rows>' or
# 'ERROR <SQLSTATE>'.
sub run_top_level {
    my ($s, $p) = @_;
    return run_statement($s, statement_sql($p));
}

# Any statement at the top level (a FETCH, an EXECUTE), the same way.
sub run_statement {
    my ($s, $sql) = @_;
    $s->{stderr} = '';
    my ($out) = $s->query($sql);
    my $err = $s->{stderr} // '';
    $s->{stderr} = '';
    return "ERROR $1" if $err =~ /ERROR:\s+([0-9A-Z]{5})/;
    die "statement failed: $err\n" if $err =~ /FATAL|PANIC/;
    $out //= '';
    $out =~ s/\n/ | /g;
    return "OK $out";
}

# The registered statement, and then the same statement planned as without
# pg_memo (pg_memo.serve_statements = off), one after the other.
sub compare_registered {
    my ($s, $p) = @_;
    my $memo = run_top_level($s, $p);
    run_sql($s, 'SET pg_memo.serve_statements = off', 'serving off');
    my $direct = run_top_level($s, $p);
    run_sql($s, 'RESET pg_memo.serve_statements', 'serving on');
    return ($memo, $direct);
}

# Portals (portal): the served one and the direct one of a pair ($tag
# tells the pairs of a probe apart).
sub portal_names { my ($tag) = @_; return ("adv_m_$tag", "adv_d_$tag"); }

sub executes { return ($_[0]->{portal} // '') eq 'execute'; }

# A command on the pair's served portal and then on its direct one; the
# direct one's EXECUTE is planned (a prepared statement's plan is made at
# its first EXECUTE) with serving off.
sub portal_commands {
    my ($s, $p, $tag, $format) = @_;
    my ($m, $d) = portal_names($tag);
    my $memo = run_statement($s, sprintf($format, $m));
    run_sql($s, 'SET LOCAL pg_memo.serve_statements = off', 'serving off') if executes($p);
    my $direct = run_statement($s, sprintf($format, $d));
    run_sql($s, 'RESET pg_memo.serve_statements', 'serving on') if executes($p);
    return ($memo, $direct);
}

# Opens a pair in the session's open transaction: DECLARE (the served
# cursor planned with serving on, the direct one with it off) or PREPARE.
# Returns what fetch_first read, as the start of the compared texts.
sub open_portals {
    my ($s, $p, $tag) = @_;
    my ($m, $d) = portal_names($tag);
    my $sql = statement_sql($p);
    if (executes($p)) {
        run_sql($s, "PREPARE $m AS $sql", 'PREPARE (served)');
        run_sql($s, "PREPARE $d AS $sql", 'PREPARE (direct)');
    } else {
        my $declare = 'DECLARE %s ' . ($p->{cursor} // '') . ' CURSOR' . ($p->{hold} ? ' WITH HOLD' : '') . " FOR $sql";
        run_sql($s, sprintf($declare, $m), 'DECLARE (served)');
        run_sql($s, 'SET LOCAL pg_memo.serve_statements = off', 'serving off');
        run_sql($s, sprintf($declare, $d), 'DECLARE (direct)');
        run_sql($s, 'RESET pg_memo.serve_statements', 'serving on');
    }
    return { m => '', d => '' } unless $p->{fetch_first};
    my ($fm, $fd) = portal_commands($s, $p, $tag, $p->{fetch_first});
    return { m => "$fm / ", d => "$fd / " };
}

# Reads a pair opened by open_portals: (memo, direct), each the outputs of
# the probe's fetch commands; then closes it (a cursor WITH HOLD outlives
# its transaction, a prepared statement its session's transactions).
sub read_portals {
    my ($s, $p, $tag, $first) = @_;
    my @fetch = @{ $p->{fetch} // [executes($p) ? 'EXECUTE %s' : 'FETCH ALL FROM %s'] };
    my (@m, @d);
    for my $f (@fetch) {
        my ($m, $d) = portal_commands($s, $p, $tag, $f);
        push @m, $m;
        push @d, $d;
    }
    close_portals($s, $p, $tag);
    return ($first->{m} . join(' / ', @m), $first->{d} . join(' / ', @d));
}

sub close_portals {
    my ($s, $p, $tag) = @_;
    for my $name (portal_names($tag)) {
        # (gone with a transaction that ended: that error is ignored, and
        # ON_ERROR_ROLLBACK keeps an open transaction going)
        $s->query(executes($p) ? "DEALLOCATE $name" : "CLOSE $name");
        $s->{stderr} = '';
    }
}

sub memo_sql {
    my ($p) = @_;
    my $call = sprintf('%s, $q$%s$q$, %s', lit(cache_name($p)), $p->{query}, params_sql($p));
    return $p->{kind} eq 'count'
      ? "SELECT memo.count($call)"
      : "SELECT * FROM memo.list($call) AS t($p->{cols})";
}

# The same text, run plainly: each $n replaced by its parameter as an
# untyped literal, which the parser types exactly as it types $n.
sub direct_sql {
    my ($p) = @_;
    my @params = @{ $p->{params} // [] };
    (my $q = $p->{query}) =~ s/\$(\d+)/lit($params[$1 - 1])/ge;
    return $p->{kind} eq 'count' ? "SELECT count(*) FROM ($q) q" : $q;
}

sub wrap { return 'SELECT public.adv_run($o$' . $_[0] . '$o$)'; }

sub sqlstate_of {
    my ($r) = @_;
    return $r =~ /^ERROR (\w{5})/ ? $1 : undef;
}

# (verdict, note): verdict is 'agree', 'refused' or 'mismatch'.
sub adv_verdict {
    my ($memo, $direct, %o) = @_;
    my $ms = sqlstate_of($memo);
    my $ds = sqlstate_of($direct);
    if (defined $o{must_fail}) {
        return ('agree', "refused $o{must_fail}") if defined $ms && $ms eq $o{must_fail};
        return ('mismatch', "memo must fail with $o{must_fail}");
    }
    return ('agree', '') if $memo eq $direct;
    return ('agree', "both $ms") if defined $ms && defined $ds && $ms eq $ds;
    return ('refused', 'refused 0A000') if defined $ms && $ms eq '0A000';
    return ('refused', "refused $ms") if defined $ms && defined $o{allow} && $ms eq $o{allow};
    if (defined $ds && $ds eq '55P03' && defined $o{before}) {
        return ('agree', "direct blocked by W's lock; memo gave the state before W")
          if $memo eq $o{before};
        return ('agree', 'both blocked by W') if defined $ms && $ms eq '55P03';
    }
    return ('mismatch', '');
}

sub run_sql {
    my ($s, $sql, $what) = @_;
    my ($out) = $s->query($sql);
    my $err = $s->{stderr} // '';
    die "$what failed: $err\n" if $err =~ /ERROR|FATAL|PANIC/;
    return $out;
}

sub become {
    my ($s, $p) = @_;
    return unless $p->{role};
    if (($p->{auth} // '') eq 'session') {
        run_sql($s, "SET SESSION AUTHORIZATION $p->{role}", 'become');
    } else {
        run_sql($s, "SET ROLE $p->{role}", 'become');
    }
}

sub unbecome {
    my ($s, $p) = @_;
    return unless $p->{role};
    run_sql($s, (($p->{auth} // '') eq 'session') ? 'RESET SESSION AUTHORIZATION' : 'RESET ROLE', 'unbecome');
}

sub open_session {
    my ($node, $p, $as_role, $db) = @_;
    my $s = $node->background_psql($db // 'postgres', on_error_stop => 0);
    run_sql($s, 'SET client_min_messages = warning', 'session setup');
    run_sql($s, "SET lock_timeout = '100ms'", 'session setup');
    run_sql($s, "SET search_path = $p->{path}", 'session setup') if $p->{path};
    # ADV_MAX_STALENESS: every session accepts older answers; a probe whose
    # change is not only a write of rows must still agree (no older answer
    # after DDL, privileges, names, functions).
    run_sql($s, "SET pg_memo.max_staleness = '$ENV{ADV_MAX_STALENESS}'", 'session setup')
        if $ENV{ADV_MAX_STALENESS};
    # ADV_ERROR_TTL: every session remembers errors; every probe must agree.
    run_sql($s, "SET pg_memo.error_ttl = '$ENV{ADV_ERROR_TTL}'", 'session setup') if $ENV{ADV_ERROR_TTL};
    run_sql($s, $p->{session}, 'session setup') if $p->{session};
    if ($ENV{ADV_REGISTERED}) {
        # A top-level error must not end W's transaction (adv_run's
        # exception block does that for the direct query), and its SQLSTATE
        # is what is compared.
        run_sql($s, '\\set ON_ERROR_ROLLBACK on', 'session setup');
        run_sql($s, '\\set VERBOSITY sqlstate', 'session setup');
    }
    become($s, $p) if $as_role;
    return $s;
}

# One compare in a session: the memo call, then the direct query.
sub compare_in {
    my ($s, $p, $switch_role) = @_;
    become($s, $p) if $switch_role;
    my ($memo, $direct);
    if ($ENV{ADV_REGISTERED}) {
        ($memo, $direct) = compare_registered($s, $p);
    } else {
        $memo = run_sql($s, wrap(memo_sql($p)), 'memo call');
        $direct = run_sql($s, wrap(direct_sql($p)), 'direct query');
    }
    unbecome($s, $p) if $switch_role;
    return ($memo, $direct);
}

# Ends W's open transaction: COMMIT or ROLLBACK, or with ADV_TWO_PHASE set,
# PREPARE TRANSACTION, then $while_prepared, then COMMIT PREPARED or
# ROLLBACK PREPARED from a new session. Returns false only when PostgreSQL
# refused the PREPARE (the transaction is rolled back then).
my $prepared_count = 0;
sub finish_transaction {
    my ($node, $w, $commit, $while_prepared) = @_;
    if (!$ENV{ADV_TWO_PHASE}) {
        run_sql($w, $commit ? 'COMMIT' : 'ROLLBACK', $commit ? 'COMMIT' : 'ROLLBACK');
        return 1;
    }
    my $gid = sprintf 'adv_%d_%d', $$, ++$prepared_count;
    $w->query("PREPARE TRANSACTION '$gid'");
    if (($w->{stderr} // '') =~ /ERROR/) {
        $w->{stderr} = '';  # (query keeps it: the next step would read it as its own failure)
        return 0;
    }
    $while_prepared->();
    $node->safe_psql('postgres', ($commit ? 'COMMIT' : 'ROLLBACK') . " PREPARED '$gid'");
    return 1;
}

# Runs a probe; returns its checks: hashes with phase, session, memo,
# direct, verdict, note. A step that fails (setup, change) is a check with
# verdict 'broken'.
sub adv_run_probe {
    my ($node, $p) = @_;
    my @checks;
    my ($r, $w, $c);
    my $before;
    if ($p->{portal} && !$ENV{ADV_REGISTERED}) {
        return { phase => 'step', session => '-', memo => '', direct => '', verdict => 'skipped',
                 note => 'a portal probe: registered statements only (memo.list answers as of the call)' };
    }
    my $record = sub {
        my ($phase, $session, $memo, $direct, %o) = @_;
        my ($v, $note) = adv_verdict($memo, $direct, %o, before => $before, allow => $p->{allow});
        push @checks, { phase => $phase, session => $session, memo => $memo,
                        direct => $direct, verdict => $v, note => $note };
    };
    my $round = sub {
        my ($phase, $session, $s, $switch, %o) = @_;
        for my $i (1, 2) {
            my ($m, $d) = compare_in($s, $p, $switch);
            $record->($phase, "$session#$i", $m, $d, %o);
        }
    };
    my $registered_mode = $ENV{ADV_REGISTERED};
    my %refuse = defined $p->{refuse} && !$registered_mode ? (must_fail => $p->{refuse}) : ();
    my %after_change = defined $p->{refuse_after} && !$registered_mode ? (must_fail => $p->{refuse_after}) : %refuse;
    # Portals (see the header): W's and C's transactions, and one pair read.
    my $portal = $registered_mode && $p->{portal};
    my $begin = 'BEGIN' . ($portal && $p->{isolation} ? " ISOLATION LEVEL $p->{isolation}" : '');
    my $portal_check = sub {
        my ($phase, $session, $memo, $direct) = @_;
        $record->("portal $phase", $session, $memo, $direct);
    };
    # C reads a pair it opened in its transaction (with hold, once that
    # transaction committed) and closes it.
    my $c_read = sub {
        my ($tag, $first, $phase, $session) = @_;
        $portal_check->($phase, $session, read_portals($c, $p, $tag, $first));
    };
    # C's transaction ends: before its pairs are read with hold (the
    # commit runs them to their end), after that otherwise.
    my $c_commit = sub {
        my ($held) = @_;
        run_sql($c, 'COMMIT', 'COMMIT (C)') if ($held ? $p->{hold} : !$p->{hold});
    };
    # A pair opened and read at once, in a transaction of its own.
    my $pair_at_once = sub {
        my ($s, $tag) = @_;
        run_sql($s, $begin, 'BEGIN (a pair at once)');
        my $first = open_portals($s, $p, $tag);
        run_sql($s, 'COMMIT', 'COMMIT (a pair at once)') if $p->{hold};
        my @out = read_portals($s, $p, $tag, $first);
        run_sql($s, 'COMMIT', 'COMMIT (a pair at once)') unless $p->{hold};
        return @out;
    };
    eval {
        $node->safe_psql('postgres', "SET client_min_messages = warning;\n$p->{setup}") if $p->{setup};
        my $registered = $registered_mode ? register_statement($node, $p) : 1;
        die "not registered, though a memo call would cache it\n" if !$registered && expects_caching($p);
        $r = open_session($node, $p, 1);
        $w = open_session($node, $p, 0);

        my $served = served($node, $p);
        my ($m, $d) = compare_in($r, $p, 0);
        $record->('warm', 'R#1 (first call)', $m, $d, %refuse);
        for my $i (2 .. 2 + ($p->{learns} // 0) + ($ENV{ADV_ADMISSION} ? 2 : 0)) {
            ($m, $d) = compare_in($r, $p, 0);
            $record->('warm', "R#$i", $m, $d, %refuse);
        }
        $before = $d;
        push @checks, served_check('R', $served, served($node, $p)) if expects_caching($p);
        if ($portal) {
            $c = open_session($node, $p, 1);
            # Twice: the first may compute (a portal's statement may be
            # keyed apart from the top-level one: its text is cut out of
            # the DECLARE or PREPARE).
            my $served_before = served($node, $p);
            $portal_check->('warm', "C#$_ (opened and read at once)", $pair_at_once->($c, "c0_$_")) for 1, 2;
            my $served_after = served($node, $p);
            # (a transaction with one snapshot is computed, never served)
            push @checks, { phase => 'portal warm', session => 'C (served)', memo => "served $served_before -> $served_after",
                            direct => 'served from the cache', verdict => ($served_after > $served_before ? 'agree' : 'mismatch'),
                            note => 'a portal was served from the cache' }
              if expects_caching($p) && !$p->{isolation};
        }
        return unless defined $p->{change};

        if (!$p->{outside}) {
            my ($c1, $w1);
            if ($portal) {
                run_sql($c, $begin, 'BEGIN (C)');
                $c1 = open_portals($c, $p, 'c1');
            }
            run_sql($w, $begin, 'BEGIN');
            $w1 = open_portals($w, $p, 'w1') if $portal;
            run_sql($w, $p->{change}, 'change (during)');
            # (with hold too: the transaction will not commit)
            $portal_check->('during', 'W (opened before its own change)', read_portals($w, $p, 'w1', $w1)) if $portal;
            $round->('during', 'W', $w, 1, %after_change);
            $round->('during', 'R', $r, 0, %refuse);
            # ADV_TWO_PHASE (by hand): the transaction is prepared, compared
            # from R while prepared, and finished from another session.
            finish_transaction($node, $w, 0, sub { $round->('prepared', 'R', $r, 0, %refuse) });
            if ($portal) {
                $c_commit->(1);
                $c_read->('c1', $c1, 'rollback', "C (opened before W's change, read after its rollback)");
                $c_commit->(0);
            }
            $round->('rollback', 'R', $r, 0, %refuse);
            $round->('rollback', 'W', $w, 1, %refuse);
            my ($c2, $c3, $w2);
            if ($portal) {
                run_sql($c, $begin, 'BEGIN (C)');
                $c2 = open_portals($c, $p, 'c2');
                $c3 = open_portals($c, $p, 'c3');
            }
            run_sql($w, $begin, 'BEGIN');
            $w2 = open_portals($w, $p, 'w2') if $portal;
            run_sql($w, $p->{change}, 'change (commit)');
            $portal_check->('commit', 'W (opened before its own change)', read_portals($w, $p, 'w2', $w2))
              if $portal && !$p->{hold};
            if (!finish_transaction($node, $w, 1, sub { $round->('prepared', 'R', $r, 0, %refuse) })) {
                # PostgreSQL refused to prepare it (temporary objects, a
                # cursor WITH HOLD, say): the change commits the ordinary
                # way (W's held cursors opened again before it).
                run_sql($w, $begin, 'BEGIN');
                $w2 = open_portals($w, $p, 'w2') if $portal && $p->{hold};
                run_sql($w, $p->{change}, 'change (commit)');
                run_sql($w, 'COMMIT', 'COMMIT');
            }
            if ($portal) {
                # With hold, W's cursors ran to their end at its commit.
                $portal_check->('commit', 'W (opened before its own change, held past its commit)',
                                read_portals($w, $p, 'w2', $w2))
                  if $p->{hold};
                # C's first pair: W's commit made the entry stale (or deltas
                # carried it forward); nothing newer stored yet (with hold,
                # read after the newer result is stored: C's commit runs
                # both pairs).
                $c_read->('c2', $c2, 'commit', "C#1 (opened before W's commit, read after it)") unless $p->{hold};
                # A newer result stored, and hit (at the top level and
                # through portals): the second pair must not be served it.
                run_top_level($w, $p) for 1, 2;
                $pair_at_once->($w, "n$_") for 1, 2;
                $c_commit->(1);
                $c_read->('c2', $c2, 'commit', "C#1 (opened before W's commit, read after it)") if $p->{hold};
                $c_read->('c3', $c3, 'commit', "C#2 (opened before W's commit, read after a newer result was stored)");
                $c_commit->(0);
            }
        } else {
            run_sql($w, $p->{change}, 'change (outside a transaction)');
        }
        my $old = $before;
        $before = undef;
        $round->('commit', 'R', $r, 0, %after_change);
        # The probe can fail only if the change changes what the query
        # returns: a memo call that kept the old result must disagree.
        unless ($p->{inert} || defined $p->{refuse} || defined $p->{refuse_after}) {
            my ($first) = grep { $_->{phase} eq 'commit' } @checks;
            push @checks, { phase => 'commit', session => 'R (sensitivity)', memo => "before: $old",
                            direct => "after: $first->{direct}",
                            verdict => ($first->{direct} ne $old ? 'agree' : 'mismatch'),
                            note => 'the change changes the result' };
        }
        $round->('commit', 'W', $w, 1, %after_change);
        # Under ADV_MAX_STALENESS a follow-up that only writes rows may
        # legitimately leave an older answer: not compared.
        if (defined $p->{after} && !($ENV{ADV_MAX_STALENESS} && adv_writes_rows_only($p->{after}))) {
            run_sql($w, $p->{after}, 'after');
            $round->('after', 'R', $r, 0, %after_change);
            $round->('after', 'W', $w, 1, %after_change);
        }
    };
    if (my $err = $@) {
        chomp $err;
        push @checks, { phase => 'step', session => '-', memo => $err, direct => '',
                        verdict => 'broken', note => 'a step of the probe failed' };
    }
    for my $s ($r, $w, $c) {
        next unless $s;
        eval { $s->quit; };
    }
    return @checks;
}

# The standby mode (test/t/016_durability_standby_adversarial.pl): the probe's setup
# and change run on the primary, and every compare on each reader, a hot
# standby or a cascading one, once it has replayed what the primary wrote
# ($sync->() waits for that). Phases: warm (twice on each reader, more for
# 'learns' probes, and served from the cache), during (the change open on the
# primary: a reader must not see it, and may find the primary's replayed
# locks in the way), rollback, commit (with the sensitivity check on the
# first reader), after. A probe whose session cannot be opened on a
# standby (what it runs there writes) returns a single check with verdict
# 'skipped', and so does a portal probe (portal: registered statements
# only). %o: db (default postgres).
sub adv_run_probe_on_standbys {
    my ($primary, $readers, $sync, $p, %o) = @_;
    my $db = $o{db} // 'postgres';
    my @checks;
    my (@r, $w);
    my %before;
    # Through registered statements (ADV_REGISTERED), a statement pg_memo
    # refuses runs as without it: no refusal to expect.
    my $registered_mode = $ENV{ADV_REGISTERED};
    my %refuse = defined $p->{refuse} && !$registered_mode ? (must_fail => $p->{refuse}) : ();
    my %after_change = defined $p->{refuse_after} && !$registered_mode ? (must_fail => $p->{refuse_after}) : %refuse;
    # (memo.list answers as of the call; the portal probes' cursors and
    # binds run on a primary, test/t/019)
    return { phase => 'step', session => '-', memo => '', direct => '', verdict => 'skipped',
             note => 'a portal probe: registered statements only, not run on standbys' }
      if $p->{portal};
    my $round = sub {
        my ($phase, %v) = @_;
        for my $i (0 .. $#r) {
            my $name = $readers->[$i]->name;
            for my $k (1, 2) {
                my ($m, $d) = compare_in($r[$i], $p, 0);
                my ($verdict, $note) = adv_verdict($m, $d, %v, before => $before{$name}, allow => $p->{allow});
                push @checks, { phase => $phase, session => "$name#$k", memo => $m, direct => $d,
                                verdict => $verdict, note => $note };
            }
        }
    };
    eval {
        $primary->safe_psql($db, "SET client_min_messages = warning;
$p->{setup}") if $p->{setup};
        # Registered on the primary, replayed by the readers; admitted by
        # each reader on its own (ADV_ADMISSION: its shapes start afresh).
        if ($registered_mode && !$ENV{ADV_ADMISSION}) {
            die "not registered, though a memo call would cache it\n"
              if !register_statement($primary, $p, $db) && expects_caching($p);
        }
        $sync->();
        if ($ENV{ADV_ADMISSION}) { register_statement($_, $p, $db) for @$readers; }
        for my $node (@$readers) {
            my $s = eval { open_session($node, $p, 1, $db) };
            if (!$s) {
                push @checks, { phase => 'step', session => $node->name, memo => $@, direct => '',
                                verdict => 'skipped', note => 'its session cannot run on a standby' };
                die "skipped\n";
            }
            push @r, $s;
        }
        $w = open_session($primary, $p, 0, $db);
        for my $i (0 .. $#r) {
            my $node = $readers->[$i];
            my $served = served($node, $p, $db);
            my ($m, $d);
            for my $k (1 .. 2 + ($p->{learns} // 0) + ($ENV{ADV_ADMISSION} ? 2 : 0)) {
                ($m, $d) = compare_in($r[$i], $p, 0);
                my ($v, $note) = adv_verdict($m, $d, %refuse, allow => $p->{allow});
                push @checks, { phase => 'warm', session => $node->name . "#$k", memo => $m, direct => $d,
                                verdict => $v, note => $note };
            }
            $before{ $node->name } = $d;
            push @checks, served_check($node->name, $served, served($node, $p, $db)) if expects_caching($p);
        }
        return unless defined $p->{change};
        if (!$p->{outside}) {
            run_sql($w, 'BEGIN', 'BEGIN');
            run_sql($w, $p->{change}, 'change (during)');
            $sync->();
            $round->('during', %refuse);
            run_sql($w, 'ROLLBACK', 'ROLLBACK');
            $sync->();
            $round->('rollback', %refuse);
            run_sql($w, 'BEGIN', 'BEGIN');
            run_sql($w, $p->{change}, 'change (commit)');
            run_sql($w, 'COMMIT', 'COMMIT');
        } else {
            run_sql($w, $p->{change}, 'change (outside a transaction)');
        }
        $sync->();
        my $old = $before{ $readers->[0]->name };
        %before = ();
        $round->('commit', %after_change);
        unless ($p->{inert} || defined $p->{refuse} || defined $p->{refuse_after}) {
            my ($first) = grep { $_->{phase} eq 'commit' } @checks;
            push @checks, { phase => 'commit', session => 'sensitivity', memo => "before: $old",
                            direct => "after: $first->{direct}",
                            verdict => ($first->{direct} ne $old ? 'agree' : 'mismatch'),
                            note => 'the change changes the result' };
        }
        if (defined $p->{after}) {
            run_sql($w, $p->{after}, 'after');
            $sync->();
            $round->('after', %after_change);
        }
    };
    if (my $err = $@) {
        chomp $err;
        push @checks, { phase => 'step', session => '-', memo => $err, direct => '',
                        verdict => 'broken', note => 'a step of the probe failed' }
          unless $err eq 'skipped';
    }
    for my $s (@r, $w) {
        next unless $s;
        eval { $s->quit; };
    }
    return @checks;
}

# One test per (phase, session) pair of a probe's checks.
# Whether SQL only writes rows (each statement INSERT, UPDATE, DELETE,
# MERGE, COPY, TRUNCATE, a WITH ... of them, or savepoint and setting
# statements around them), or the probe says so (rows_only: a function
# that writes rows): an older answer is then a legitimate result under
# pg_memo.max_staleness.
sub adv_writes_rows_only {
    my ($sql, $p) = @_;
    return 0 unless defined $sql;
    return 1 if $p && $p->{rows_only};
    for my $stmt (grep { /\S/ } split /;/, $sql) {
        return 0
            unless $stmt =~ /^\s*(INSERT|UPDATE|DELETE|MERGE|COPY|TRUNCATE|WITH|SAVEPOINT|RELEASE|ROLLBACK\s+TO|SET)\b/i;
    }
    return 1;
}

# The end-to-end check that the harness can fail: a function labelled
# IMMUTABLE that reads what pg_memo cannot see (a large object: lo_get
# reads pg_largeobject without a plan, so no executor check reports it)
# lies, a documented limit (docs/reference.md), so pg_memo serves a stale
# count after the object changes. The harness must report it as a stale
# count, not a refusal (a build that refuses everything fails). $n keeps
# the objects of two runs apart.
sub adv_check_canary {
    my ($node, $n) = @_;
    my $canary = {
        name   => 'canary.lying_immutable_function',
        setup  => qq{
          SELECT lo_from_bytea($n, '3');
          CREATE FUNCTION adv_lie_$n() RETURNS bigint IMMUTABLE LANGUAGE plpgsql
            AS 'BEGIN RETURN convert_from(lo_get($n), ''UTF8'')::bigint; END';
          CREATE TABLE adv_lie_t_$n (x int); INSERT INTO adv_lie_t_$n SELECT generate_series(1, 10);
          SELECT memo.watch('adv_lie_t_$n');},
        kind   => 'count', query => "SELECT * FROM adv_lie_t_$n WHERE x <= adv_lie_$n()",
        change => "SELECT lo_put($n, 0, '4');",
    };
    my @checks = adv_run_probe($node, $canary);
    my @stale = grep { $_->{verdict} eq 'mismatch' && $_->{phase} eq 'commit' } @checks;
    my @refused = grep { $_->{verdict} eq 'refused' } @checks;
    my @broken = grep { $_->{verdict} eq 'broken' } @checks;
    diag("canary step failed: $_->{memo}") for @broken;
    ok(!@broken && @stale && !@refused,
        'canary: the harness reports the stale count of a lying IMMUTABLE function '
        . '(memo ' . ($stale[0] ? $stale[0]{memo} : '-') . ', direct ' . ($stale[0] ? $stale[0]{direct} : '-') . ')');
}

sub adv_report {
    my ($p, @checks) = @_;
    my (%group, @order);
    for my $c (@checks) {
        (my $session = $c->{session}) =~ s/#.*//;
        my $k = "$c->{phase} $session";
        push @order, $k unless $group{$k};
        push @{ $group{$k} }, $c;
    }
    note("$p->{name}: $_->{phase} $_->{session}: memo = $_->{memo}; direct = $_->{direct} => $_->{verdict}")
      for @checks;
    if (my ($skip) = grep { $_->{verdict} eq 'skipped' } @checks) {
        SKIP: { skip("$p->{name}: $skip->{note}", 1); }
        return 0;
    }
    my $failed = 0;
    # A probe's registered_todo is about its statement not being served:
    # it marks the served checks only, the others must pass.
    my $served_todo = $ENV{ADV_REGISTERED} ? $p->{registered_todo} : undef;
    for my $k (@order) {
        my @cs = @{ $group{$k} };
        local $TODO = $p->{todo}
          // ((grep { ($_->{note} // '') =~ /served from the cache/ } @cs) ? $served_todo : undef);
        my @bad = grep { $_->{verdict} eq 'mismatch' || $_->{verdict} eq 'broken' } @cs;
        my %notes = map { $_->{note} => 1 } grep { $_->{note} } @cs;
        my $name = "$p->{name}: $k" . (%notes ? ' [' . join('; ', sort keys %notes) . ']' : '');
        ok(!@bad, $name) or do {
            $failed++ unless $TODO;
            diag("  $_->{session}: memo   = $_->{memo}\n  $_->{session}: direct = $_->{direct}") for @bad;
        };
    }
    return $failed;
}

# Runs every probe through top-level statements (ADV_REGISTERED: test/t/019,
# 023, 024), reporting each; notes how many failed and the checks by
# verdict, and returns the checks' counts by verdict (a warm call served
# from the cache counted apart).
sub adv_run_top_level_probes {
    my ($node, @probes) = @_;
    my ($failed_probes, $run_probes) = (0, 0);
    my %verdicts;
    for my $p (@probes) {
        my @checks = adv_run_probe($node, $p);
        $run_probes++;
        $failed_probes++ if adv_report($p, @checks);
        $verdicts{ $_->{note} =~ /served from the cache/ && $_->{verdict} eq 'agree'
                   ? 'served from the cache before the change' : $_->{verdict} }++
          for @checks;
    }
    Test::More::note("probes with a failure: $failed_probes of $run_probes"
                     . ($ENV{ADV_ONLY} ? " (ADV_ONLY $ENV{ADV_ONLY})" : ''));
    Test::More::note('checks: ' . join(', ', map { "$_ $verdicts{$_}" } sort keys %verdicts));
    return %verdicts;
}

1;
