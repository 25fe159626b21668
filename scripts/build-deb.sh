#!/usr/bin/env bash
# Builds the Debian packages of pg_memo from debian/ (postgresql-NN-pg-memo
# and postgresql-NN-pg-memo-directory, one pair per PostgreSQL version that
# pg_buildext supports here, built with pg_buildext and debhelper), installs them,
# checks that their files are where PostgreSQL looks for them, and runs the
# pg_regress suites of both extensions against the installed files.
#
# Usage (root, Debian 12, or 13 for PostgreSQL 17):
#   scripts/build-deb.sh [--build-only] [OUTPUT_DIR]
# OUTPUT_DIR receives the .deb files (default: dist/ in the checkout).
# --build-only: build and copy the packages, install nothing, run nothing.
#
# The build uses the git-tracked files of the checkout as they are in the
# working tree (uncommitted edits to tracked files included, untracked files
# left out), copied to a temporary folder; a source tree that is not a git
# checkout (an export of the tracked files: scripts/test-all-versions.sh in
# a Debian root of another release) is copied whole. debian/control is
# generated there for the versions `pg_buildext supported-versions` gives:
# debian/pgversions (15+) against the versions this Debian release supports
# (postgresql-common: 15 on Debian 12, 17 on 13, 18 on sid). Missing build dependencies are
# installed with apt-get build-dep. The packages stay installed afterwards
# (remove with apt-get remove postgresql-NN-pg-memo; that also removes the
# same paths if a later `make install` wrote them). The TAP suites are not
# run here (scripts/test.sh runs them). Ends with "N passed, M failed";
# exits non-zero on any failure.
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ONLY=
if [ "${1:-}" = --build-only ]; then BUILD_ONLY=1; shift; fi
OUT=${1:-$SRC/dist}
START=$(date +%s)
passed=0
failed=0

section() { printf '\n=== %s\n' "$*"; }
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() {  # check "description" command...
  local what=$1; shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}
finish() {
  section "summary"
  echo "logs in $WORK; packages in $OUT; $(($(date +%s) - START)) s"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit
}
apt_get() {  # other work on the machine may hold the dpkg lock for a while
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"
}

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/build-deb.sh: run as root (it installs packages)" >&2
  exit 2
fi
WORK=$(mktemp -d /tmp/pg_memo_deb.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# --- 1. a clean copy of the tracked files -------------------------------------
TREE="$WORK/pg-memo"
mkdir "$TREE"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  section "source: tracked files of $SRC"
  (cd "$SRC" && git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
    tar -C "$TREE" -xf -
else
  section "source: $SRC (not a git checkout: every file)"
  tar -C "$SRC" -cf - . | tar -C "$TREE" -xf -
fi
if [ ! -f "$TREE/debian/control.in" ]; then
  echo "no debian/control.in in $SRC"
  not_ok "source copied"
  finish
fi
ok "source copied ($(find "$TREE" -type f | wc -l) files, version $(cd "$TREE" && dpkg-parsechangelog -SVersion 2>/dev/null))"

# --- 2. build dependencies and build ---------------------------------------
section "build dependencies"
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dpkg-checkbuilddeps >/dev/null; then
  apt_get update -qq && apt_get install -y -qq --no-install-recommends dpkg-dev >/dev/null
fi
if (cd "$TREE" && dpkg-checkbuilddeps) 2>/dev/null; then
  ok "build dependencies present"
else
  (cd "$TREE" && dpkg-checkbuilddeps) 2>&1 | sed 's/^/  /'
  echo "installing them (apt-get build-dep)"
  if (apt_get update -qq && cd "$TREE" && apt_get build-dep -y -qq ./) >"$WORK/build-dep.log" 2>&1 &&
     (cd "$TREE" && dpkg-checkbuilddeps); then
    ok "build dependencies installed"
  else
    tail -20 "$WORK/build-dep.log"
    not_ok "build dependencies installed"
    finish
  fi
fi

section "debian/control for the PostgreSQL versions here"
# pg_buildext: debian/pgversions (15+) against the versions this release
# supports; the committed debian/control is the one for Debian 12 (15).
VERSIONS=$(cd "$TREE" && pg_buildext supported-versions | paste -sd' ')
if [ -n "$VERSIONS" ] && (cd "$TREE" && pg_buildext updatecontrol) >"$WORK/control.log" 2>&1; then
  ok "debian/control for PostgreSQL $VERSIONS: $(cd "$TREE" && dh_listpackages 2>/dev/null | paste -sd' ')"
else
  cat "$WORK/control.log" 2>/dev/null
  not_ok "debian/control for the versions pg_buildext supports here (none of debian/pgversions)"
  finish
fi

section "dpkg-buildpackage -us -uc -b"
if (cd "$TREE" && dpkg-buildpackage -us -uc -b -J"$(nproc)") >"$WORK/build.log" 2>&1; then
  grep -E "^dpkg-deb: building package" "$WORK/build.log"
  ok "packages built"
else
  tail -40 "$WORK/build.log"
  not_ok "packages built (log: $WORK/build.log)"
  finish
fi
mapfile -t DEBS < <(cd "$WORK" && ls -1 ./*.deb | sed 's,^\./,,')
cp "${DEBS[@]/#/$WORK/}" "$OUT/"
echo "copied to $OUT: ${DEBS[*]}"
# the packages to install: all but the debug symbols
mapfile -t INSTALL < <(printf '%s\n' "${DEBS[@]}" | grep -v -- '-dbgsym_')
[ -n "$BUILD_ONLY" ] && finish

# --- 3. install ------------------------------------------------------------
section "apt-get install"
if apt_get install -y -q --reinstall "${INSTALL[@]/#/$OUT/}" >"$WORK/install.log" 2>&1; then
  grep -E '^(Unpacking|Setting up) postgresql-[0-9]+-pg-memo' "$WORK/install.log"
  ok "packages installed"
else
  tail -30 "$WORK/install.log"
  not_ok "packages installed"
  finish
fi

# --- 4. the installed files are where PostgreSQL looks -------------------
section "installed files"
# check_package PACKAGE PG_VERSION EXTENSION SOURCE_DIR
check_package() {
  local pkg=$1 v=$2 ext=$3 dir=$4
  local pgc=/usr/lib/postgresql/$v/bin/pg_config
  local libdir extdir
  libdir=$("$pgc" --pkglibdir)
  extdir=$("$pgc" --sharedir)/extension
  local version
  version=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$pkg" 2>/dev/null)
  check "$pkg: $version" test "$version" = "installed $(cd "$TREE" && dpkg-parsechangelog -SVersion)"
  local expected=("$libdir/$ext.so" "$extdir/$ext.control")
  local f
  for f in "$TREE/$dir/$ext"--*.sql; do expected+=("$extdir/$(basename "$f")"); done
  if "$pgc" --configure | grep -q -- --with-llvm; then
    expected+=("$libdir/bitcode/$ext.index.bc")
  fi
  local missing=()
  for f in "${expected[@]}"; do
    dpkg-query -S "$f" 2>/dev/null | grep -q "^$pkg: " && [ -f "$f" ] || missing+=("$f")
  done
  printf '  %s\n' "${expected[@]}"
  check "$pkg: ${#expected[@]} files in $libdir and $extdir, owned by the package${missing:+ (missing: ${missing[*]})}" \
    test ${#missing[@]} -eq 0
  local stray
  stray=$(dpkg -L "$pkg" | while read -r f; do
            [ -f "$f" ] || continue
            case $f in "$libdir"/*|"$extdir"/*|/usr/share/doc/*) ;; *) echo "$f" ;; esac
          done)
  check "$pkg: no file elsewhere${stray:+ ($stray)}" test -z "$stray"
  check "$pkg: files as packaged (dpkg --verify)" test -z "$(dpkg --verify "$pkg")"
}
PKGS=()
for deb in "${INSTALL[@]}"; do
  pkg=${deb%%_*}
  PKGS+=("$pkg")
  v=$(sed -E 's/^postgresql-([0-9]+)-.*/\1/' <<<"$pkg")
  case $pkg in
    *-pg-memo-directory) check_package "$pkg" "$v" pg_memo_directory directory ;;
    *-pg-memo) check_package "$pkg" "$v" pg_memo . ;;
  esac
done

# --- 5. the regression suites against the installed files ---------------
# debian/tests/installcheck: for each installed PostgreSQL version, both
# pg_regress suites (REGRESS of Makefile and of directory/Makefile), as
# postgres from a copy it owns, each on a temporary instance (REGRESS_OPTS).
section "pg_regress suites on the installed packages (debian/tests/installcheck)"
(cd "$TREE" && debian/tests/installcheck) >"$WORK/installcheck.log" 2>&1
rc=$?
grep -E '^### |^(ok|not ok) |^test |^ *(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed)' "$WORK/installcheck.log"
suites=$(grep -c '^### ' "$WORK/installcheck.log")
summaries=0
while read -r line; do
  summaries=$((summaries + 1))
  if [[ $line =~ All\ ([0-9]+)\ tests\ passed ]]; then
    passed=$((passed + BASH_REMATCH[1]))
  elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ tests\ failed ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
  fi
done < <(grep -oE 'All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed' "$WORK/installcheck.log")
# Every suite must reach its summary, and the run must succeed: a non-zero
# exit with every summary passed (make failing after the suites) fails too.
check "every suite ran to its summary ($summaries of $suites; log: $WORK/installcheck.log)" \
  test "$summaries" -eq "$suites" -a "$suites" -gt 0
if [ "$rc" -ne 0 ]; then
  # the diffs (from each "**** ...: regression.diffs" to the next suite)
  awk '/^\*\*\*\* /{p=1} /^### /{p=0} p' "$WORK/installcheck.log" | head -200
  tail -30 "$WORK/installcheck.log"
  not_ok "debian/tests/installcheck exited with $rc"
fi
# Other work on this machine may `make install` over the same paths: the
# suites tested the packaged files only if these are still the same.
for pkg in "${PKGS[@]}"; do
  check "$pkg: files still as packaged after the suites" test -z "$(dpkg --verify "$pkg")"
done

finish
