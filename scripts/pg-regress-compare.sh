#!/usr/bin/env bash
# PostgreSQL's own regression suite, twice: on a plain temporary cluster and
# on one that only preloads pg_memo (no CREATE EXTENSION, nothing watched).
# Loading pg_memo must change nothing PostgreSQL does outside pg_memo's own
# objects, so the two runs must fail the same tests with the same diffs,
# and neither server may log a crash.
#
#   scripts/pg-regress-compare.sh            # as root; pg_memo installed
#   PG_CONFIG=/path/to/pg_config PG_REGRESS_SOURCE=/path/to/postgresql-NN \
#     scripts/pg-regress-compare.sh          # another server, a given suite
#
# The suite comes from the Debian source package of the installed major
# version (apt-get source, with a deb-src line derived from the system's
# apt sources, in a private sources list: the system's is not changed),
# kept in a cache folder outside the checkout ($PG_MEMO_CACHE, default
# /var/cache/pg_memo) between runs; PG_REGRESS_SOURCE names a PostgreSQL
# source tree of the same major version to take it from instead
# (scripts/test-all-versions.sh: the tree a version was built from). The
# source's minor version may differ from the server's: tests that fail for
# that reason fail in both runs.
# regress.so, refint.so and autoinc.so are built with PGXS. Each run takes
# a minute or two on 2 cores. Exits 0 when the runs agree, 1 otherwise.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
BINDIR=$("$PG_CONFIG" --bindir)
PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")/../..
CACHE=${PG_MEMO_CACHE:-/var/cache/pg_memo}/pg-regress-$MAJOR
WORK=$(mktemp -d /tmp/pg_memo_pg_regress.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

[ "$(id -u)" = 0 ] || { echo "run as root (the temporary clusters run as the postgres OS user)" >&2; exit 2; }
[ -f "$("$PG_CONFIG" --pkglibdir)/pg_memo.so" ] || { echo "pg_memo is not installed: run scripts/build.sh" >&2; exit 2; }

# ---- the suite's sources, once ----------------------------------------------
source_dir() {
  if [ -n "${PG_REGRESS_SOURCE:-}" ]; then echo "$PG_REGRESS_SOURCE"; return; fi
  find "$CACHE" -maxdepth 1 -type d -name "postgresql-$MAJOR-*" 2>/dev/null | sort | tail -1
}
if [ -z "$(source_dir)" ]; then
  mkdir -p "$CACHE/lists/partial"
  uris=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources 2>/dev/null | sort -u)
  [ -n "$uris" ] || uris=$(awk '$1 == "deb" {print $2}' /etc/apt/sources.list 2>/dev/null | sort -u)
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  : >"$CACHE/sources.list"
  for uri in $uris; do
    case $uri in *security*) continue ;; esac  # the security pool keeps no source of the point releases
    printf 'deb-src %s %s main\ndeb-src %s %s-updates main\n' "$uri" "$codename" "$uri" "$codename" >>"$CACHE/sources.list"
  done
  apt_private=(-q -o "Dir::Etc::SourceList=$CACHE/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$CACHE/lists")
  apt-get "${apt_private[@]}" update >/dev/null
  (cd "$CACHE" && apt-get "${apt_private[@]}" source "postgresql-$MAJOR" >/dev/null 2>&1)
fi
PGSRC=$(source_dir)
[ -d "$PGSRC/src/test/regress" ] || { echo "no PostgreSQL $MAJOR source under $CACHE" >&2; exit 1; }

# ---- the suite's C functions, with PGXS ------------------------------------
MODS=$WORK/modules
mkdir -p "$MODS"
cp "$PGSRC/src/test/regress/regress.c" "$PGSRC/contrib/spi/refint.c" "$PGSRC/contrib/spi/autoinc.c" "$MODS/"
printf 'MODULES = regress refint autoinc\nPG_CONFIG = %s\nPGXS := $(shell $(PG_CONFIG) --pgxs)\ninclude $(PGXS)\n' \
  "$PG_CONFIG" >"$MODS/Makefile"
make -s -C "$MODS" >"$WORK/modules.log" 2>&1 || { cat "$WORK/modules.log" >&2; exit 1; }

# ---- two runs ------------------------------------------------------------------
cp -r "$PGSRC/src/test/regress" "$WORK/suite"
chown -R postgres "$WORK"
run() {  # NAME CONFIG_LINE: the schedule on a temporary instance
  local dir=$WORK/run_$1
  mkdir -p "$dir" && chown postgres "$dir"
  printf '%s\n' "$2" >"$dir/extra.conf"
  # A run takes a minute or two; one that hangs is stopped after 20 (and
  # its instance with it), and the comparison fails.
  local rc=0
  (cd "$dir" && timeout -k 30 1200 runuser -u postgres -- "$PGXS_DIR/src/test/regress/pg_regress" \
      --bindir="$BINDIR" --inputdir="$WORK/suite" --outputdir="$dir" --dlpath="$MODS" \
      --temp-instance="$dir/instance" --temp-config="$dir/extra.conf" \
      --schedule="$WORK/suite/parallel_schedule" --max-concurrent-tests=20 >"$dir/output.txt" 2>&1) || rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "$1: pg_regress did not finish in 20 minutes" >"$dir/timed_out.txt"
    runuser -u postgres -- "$BINDIR/pg_ctl" -D "$dir/instance/data" stop -m immediate >/dev/null 2>&1 || true
  fi
  # Failed tests, and each one's diff without its file names and dates.
  grep -E '^(not ok|test |     |parallel group).*FAILED|^not ok' "$dir/output.txt" |
    sed -E 's/^(not ok [0-9]+ +[-+] +|test +| +)//; s/ .*//' | sort -u >"$dir/failed.txt" || true
  [ -f "$dir/regression.diffs" ] && sed -E '/^(diff|---|\+\+\+) /d' "$dir/regression.diffs" >"$dir/diffs.txt" || : >"$dir/diffs.txt"
  # Tests run: "test x ... ok" / "     x ... ok" (15), "ok 1 - x" / "not ok 2 + x" (16+).
  grep -cE '^(not )?ok [0-9]+ |^(test | +)[a-z0-9_]+ +\.\.\. ' "$dir/output.txt" >"$dir/ran.txt" || true
  grep -E 'terminated by signal|was terminated|PANIC|server process .* exited' "$dir/log/postmaster.log" \
    >"$dir/crashes.txt" 2>/dev/null || true
}
run plain "# plain"
run preloaded "shared_preload_libraries = 'pg_memo'"

plain=$WORK/run_plain preloaded=$WORK/run_preloaded
echo "PostgreSQL $("$PG_CONFIG" --version | awk '{print $2}'), regression suite of $(basename "$PGSRC")"
echo "plain:     $(cat "$plain/ran.txt") tests, $(wc -l <"$plain/failed.txt") failed: $(paste -sd' ' "$plain/failed.txt")"
echo "preloaded: $(cat "$preloaded/ran.txt") tests, $(wc -l <"$preloaded/failed.txt") failed: $(paste -sd' ' "$preloaded/failed.txt")"
status=0
if [ "$(cat "$plain/ran.txt")" -lt 100 ] || [ "$(cat "$plain/ran.txt")" != "$(cat "$preloaded/ran.txt")" ]; then
  echo "the runs did not both run the whole schedule:"; tail -20 "$plain/output.txt" "$preloaded/output.txt"; status=1
fi
if ! diff -q "$plain/failed.txt" "$preloaded/failed.txt" >/dev/null; then
  echo "DIFFERENT failures:"; diff "$plain/failed.txt" "$preloaded/failed.txt" || true; status=1
elif ! diff -q "$plain/diffs.txt" "$preloaded/diffs.txt" >/dev/null; then
  echo "the same failures, DIFFERENT diffs:"; diff "$plain/diffs.txt" "$preloaded/diffs.txt" | head -60 || true; status=1
else
  echo "the same failures with the same diffs"
fi
for r in plain preloaded; do
  if [ -f "$WORK/run_$r/timed_out.txt" ]; then cat "$WORK/run_$r/timed_out.txt"; status=1; fi
  if [ -s "$WORK/run_$r/crashes.txt" ]; then echo "$r: the server logged a crash:"; cat "$WORK/run_$r/crashes.txt"; status=1; fi
done
exit $status
