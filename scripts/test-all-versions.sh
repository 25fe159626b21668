#!/usr/bin/env bash
# pg_memo's tests on PostgreSQL 17 and 18 (scripts/test.sh stays the fast,
# 15-only command): the core's unit tests once, then for each version the
# pg_regress and TAP suites of pg_memo and of pg_memo_directory (the TAP
# suites include the upgrade test and the consistency checker's CI mode) on
# temporary instances of that version, PostgreSQL's own regression suite
# plain and with pg_memo preloaded (scripts/pg-regress-compare.sh) and the
# Debian package (scripts/build-deb.sh) where that version has what each
# needs (below). Ends with "N passed, N failed" over all versions, after
# each skip with its reason; exits non-zero on any failure. Run as root.
#
#   scripts/test-all-versions.sh            # 17 and 18
#   scripts/test-all-versions.sh 18         # one version
#
# Each PostgreSQL comes from its Debian source package (apt-get source, with
# deb-src lines derived from the system's apt sources in a private sources
# list: the system's apt configuration is not changed), built with
# --enable-tap-tests (the TAP suites use PostgreSQL::Test::Cluster), ICU and
# the contrib modules, into $PG_MEMO_CACHE/pgNN (default
# /var/cache/pg_memo), kept between runs: a cached build is reused. Every
# compile runs under nice -n 19 with -j2 (other work shares the machine).
#
# Where the mirror serves a version's binary packages but not its source
# (PostgreSQL 17 from trixie, on the mirror this project uses today), the
# version runs instead in a Debian root of that suite kept in the cache
# ($PG_MEMO_CACHE/root-NN, made with debootstrap, with Debian's own
# postgresql-NN and postgresql-server-dev-NN): pg_memo is built and
# installed there, never into the system's PostgreSQL.
#
# PostgreSQL's regression suite comes from the source a version is built
# from, so it is compared only there; the Debian package is built only where
# pg_buildext finds the version, that is in a root with Debian's packages
# (scripts/test.sh does both for the system's 15).
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PG_MEMO_CACHE:-/var/cache/pg_memo}
mkdir -p "$CACHE"
# One run at a time per cache: runs share its builds and roots.
exec 9>"$CACHE/.lock"
flock -w 7200 9 || { echo "another run holds $CACHE/.lock" >&2; exit 2; }
VERSIONS=("$@")
[ $# -eq 0 ] && VERSIONS=(17 18)
WORK=$(mktemp -d /tmp/pg_memo_versions.XXXXXX)
chmod 755 "$WORK"
passed=0
failed=0
SKIPPED=()
section() { printf '\n=== %s\n' "$*"; }
count() { passed=$((passed + $1)); failed=$((failed + $2)); }
skip() { echo "skipped: $*"; SKIPPED+=("$*"); }
[ "$(id -u)" = 0 ] || { echo "run as root (the temporary clusters run as the postgres OS user)" >&2; exit 2; }

suite_of() {  # the Debian suite whose source package has PostgreSQL $1
  case $1 in 17) echo trixie ;; *) echo sid ;; esac
}

# ---- sources ------------------------------------------------------------------
# A private apt setup: deb-src lines for the suites above, on the URIs of the
# system's sources (the security pool included: a point release may be there).
APT_DIR=$CACHE/apt
apt_private() {
  apt-get -q -o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o "Dir::State::Lists=$APT_DIR/lists" "$@"
}
apt_setup() {
  [ -f "$APT_DIR/updated" ] && [ -n "$(find "$APT_DIR/updated" -mmin -1440)" ] && return 0
  mkdir -p "$APT_DIR/lists/partial"
  local uris uri suite
  uris=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources 2>/dev/null | sort -u)
  [ -n "$uris" ] || uris=$(awk '$1 == "deb" {print $2}' /etc/apt/sources.list 2>/dev/null | sort -u)
  : >"$APT_DIR/sources.list"
  for uri in $uris; do
    for suite in trixie sid; do
      case $uri in
        *security*) [ $suite = sid ] || printf 'deb-src %s %s-security main\n' "$uri" "$suite" >>"$APT_DIR/sources.list" ;;
        *) printf 'deb-src %s %s main\n' "$uri" "$suite" >>"$APT_DIR/sources.list" ;;
      esac
    done
  done
  apt_private update >/dev/null 2>&1 && touch "$APT_DIR/updated"
}
source_dir() { find "$CACHE/src" -maxdepth 1 -type d -name "postgresql-$1-*" 2>/dev/null | sort | tail -1; }
fetch_source() {  # MAJOR: prints the source folder, or fails
  local d
  d=$(source_dir "$1")
  if [ -z "$d" ]; then
    apt_setup
    mkdir -p "$CACHE/src"
    (cd "$CACHE/src" && apt_private source "postgresql-$1" >"$WORK/source-$1.log" 2>&1) || return 1
    d=$(source_dir "$1")
  fi
  [ -n "$d" ] && [ -f "$d/configure" ] && echo "$d"
}

# ---- PostgreSQL from source ---------------------------------------------------
# libxml: the privileges suite caches xmlelement and xmlparse calls;
# libxslt and uuid for the contrib modules that need them (xml2, uuid-ossp).
CONFIGURE_OPTS=(--enable-tap-tests --without-llvm --enable-debug --with-libxml --with-libxslt --with-uuid=e2fs)
build_pg() {  # MAJOR SOURCE_DIR: installs into $CACHE/pgMAJOR once
  local major=$1 srcdir=$2 prefix=$CACHE/pg$1 opts
  opts=("${CONFIGURE_OPTS[@]}")
  if pkg-config --exists icu-uc 2>/dev/null; then opts+=(--with-icu); else opts+=(--without-icu); fi
  local stamp="$(basename "$srcdir") ${opts[*]}"
  if [ -x "$prefix/bin/pg_config" ] && [ "$(cat "$prefix/.built" 2>/dev/null)" = "$stamp" ]; then
    echo "PostgreSQL $major: cached in $prefix"
    return 0
  fi
  for f in /usr/include/libxml2/libxml/parser.h /usr/include/libxslt/xslt.h /usr/include/uuid/uuid.h; do
    [ -f "$f" ] || { echo "PostgreSQL $major needs libxml2-dev, libxslt1-dev and uuid-dev" >&2; return 1; }
  done
  for tool in bison flex; do
    command -v $tool >/dev/null || { echo "PostgreSQL $major needs $tool (apt-get install bison flex)" >&2; return 1; }
  done
  # Debian's packaging patches hard-code /usr/lib/postgresql/NN/lib as the
  # library folder (50-per-version-dirs, libpgport-pkglibdir): undone, so
  # that everything goes under $prefix and nothing next to the system's.
  local p
  for p in libpgport-pkglibdir 50-per-version-dirs.patch; do
    if [ -f "$srcdir/debian/patches/$p" ] &&
       (cd "$srcdir" && patch -R -p1 --dry-run -s <"debian/patches/$p") >/dev/null 2>&1; then
      (cd "$srcdir" && patch -R -p1 -s <"debian/patches/$p") || return 1
    fi
  done
  if grep -q '/usr/lib/postgresql' "$srcdir/src/Makefile.global.in"; then
    echo "PostgreSQL $major: $srcdir still installs into /usr/lib/postgresql: not built" >&2
    return 1
  fi
  echo "PostgreSQL $major: building $(basename "$srcdir") into $prefix (about 5 minutes on 2 cores)"
  local start=$SECONDS log=$CACHE/pg$major-build.log
  rm -rf "$prefix"
  (cd "$srcdir" && make distclean >/dev/null 2>&1
   nice -n 19 ./configure --prefix="$prefix" "${opts[@]}" &&
   nice -n 19 make -j2 world-bin && nice -n 19 make install-world-bin) >"$log" 2>&1 ||
    { tail -30 "$log"; return 1; }
  echo "$stamp" >"$prefix/.built"
  echo "PostgreSQL $major: built in $((SECONDS - start)) s"
}

# ---- PostgreSQL from Debian's binary packages, in a root of its own ------------
ROOT_MOUNTED=()
unmount_roots() {
  local r
  for r in "${ROOT_MOUNTED[@]}"; do
    umount -R "$r/dev" 2>/dev/null; umount "$r/proc" 2>/dev/null
  done
}
trap unmount_roots EXIT
make_root() {  # MAJOR: $CACHE/root-MAJOR with Debian's postgresql-MAJOR
  local major=$1 root=$CACHE/root-$1 uri
  # What the suites need there (gdb: test/t/015; the real clients of
  # test/t/018: psycopg, SQLAlchemy, PgBouncer, Node.js for node-postgres,
  # which is copied in with test/clients), and the Debian package's build
  # dependencies (debian/control.in).
  local packages="postgresql-$major,postgresql-server-dev-$major,libicu-dev,libboost-dev,libipc-run-perl,g++,make,libxxhash-dev,gdb,debhelper,dpkg-dev,postgresql-server-dev-all,python3-psycopg,python3-sqlalchemy,pgbouncer,nodejs"
  if [ ! -f "$root/.ready" ]; then
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
    uri=$(awk '/^URIs:/ && !/security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
    [ -n "$uri" ] || uri=$(awk '$1 == "deb" && !/security/ {print $2; exit}' /etc/apt/sources.list)
    echo "PostgreSQL $major: making a $(suite_of "$major") root with Debian's packages in $root"
    # A root left mounted by an interrupted run: its /dev is the system's.
    umount -R "$root/dev" 2>/dev/null; umount "$root/proc" 2>/dev/null
    if findmnt -rn -o TARGET | grep "^$root/" >/dev/null; then
      echo "PostgreSQL $major: $root still has file systems mounted: not removed" >&2; return 1
    fi
    rm -rf --one-file-system "$root"
    nice -n 19 debootstrap --variant=minbase \
      --include="$packages" \
      "$(suite_of "$major")" "$root" "$uri" >"$CACHE/root-$major.log" 2>&1 || { tail -20 "$CACHE/root-$major.log"; return 1; }
    echo "$packages" >"$root/.ready"
  fi
  if ! mountpoint -q "$root/proc"; then
    mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" || return 1
    ROOT_MOUNTED+=("$root")
  fi
  # A root made by an older version of this script: what it lacks.
  if [ "$(cat "$root/.ready")" != "$packages" ]; then
    echo "PostgreSQL $major: installing ${packages//,/ } in $root"
    if chroot "$root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${packages//,/ }" \
         >"$CACHE/root-$major.log" 2>&1; then
      echo "$packages" >"$root/.ready"
    else
      tail -20 "$CACHE/root-$major.log"; return 1
    fi
  fi
}

# ---- pg_memo on one version -----------------------------------------------------
# The summary lines of one "make installcheck" log: its counts.
count_installcheck() {  # LOG RC
  local out=$1 rc=$2 n f t before=$failed
  grep -E '^(ok|not ok) |All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed|^t/|^test/t/|Result:|Failed [0-9]+/' "$out"
  n=$(grep -oE 'All [0-9]+ tests passed' "$out" | grep -oE '[0-9]+')
  [ -n "$n" ] && count "$n" 0
  # PostgreSQL 16+ pg_regress prints TAP lines: "ok 1 - name" / "not ok 2 - name".
  if [ -z "$n" ] && ! grep -qE '[0-9]+ of [0-9]+ tests failed' "$out"; then
    local ok bad
    ok=$(grep -cE '^ok [0-9]+ +[-+] ' "$out") bad=$(grep -cE '^not ok [0-9]+ +[-+] ' "$out")
    count "$ok" "$bad"
  fi
  if grep -qE '[0-9]+ of [0-9]+ tests failed' "$out"; then
    f=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $1}')
    t=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $3}')
    count $((t - f)) "$f"
  fi
  local tap_total tap_failed
  tap_total=$(grep -oE 'Tests=[0-9]+' "$out" | grep -oE '[0-9]+' | awk '{s+=$1} END {if (NR) print s}')
  tap_failed=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$out" | awk -F'[ /]' '{s+=$2} END {print s+0}')
  [ -n "$tap_total" ] && count $((tap_total - tap_failed)) "$tap_failed"
  if [ "$rc" -ne 0 ] && [ "$failed" -eq "$before" ]; then tail -40 "$out"; count 0 1; fi
}

# RUN prefixes a command so that it runs where that version is: nothing, or
# chroot ROOT.
test_version() {  # MAJOR PG_CONFIG ROOT(or empty)
  local major=$1 pgc=$2 root=$3 run=() copy dir label rc
  [ -n "$root" ] && run=(chroot "$root")
  copy=$WORK/pg$major
  [ -n "$root" ] && copy=$root/tmp/pg_memo_pg$major
  rm -rf "$copy" && mkdir -p "$copy"
  tar -C "$SRC" --exclude=./.git --exclude=./build --exclude=./.pgdata --exclude=./.pgrun \
      --exclude='tmp_check*' --exclude=results --exclude=regression.diffs --exclude=regression.out \
      --exclude='*.o' --exclude='*.so' --exclude='*.d' --exclude='*.bc' -cf - . | tar -C "$copy" -xf -
  local inner=$copy
  [ -n "$root" ] && inner=/tmp/pg_memo_pg$major
  "${run[@]}" chown -R postgres "$inner"
  section "PostgreSQL $major: build and install pg_memo ($("${run[@]}" "$pgc" --version))"
  if ! ("${run[@]}" runuser -u postgres -- nice -n 19 make -C "$inner" -j2 PG_CONFIG="$pgc" &&
        "${run[@]}" runuser -u postgres -- nice -n 19 make -C "$inner/directory" -j2 PG_CONFIG="$pgc" &&
        "${run[@]}" make -C "$inner" install PG_CONFIG="$pgc" &&
        "${run[@]}" make -C "$inner/directory" install PG_CONFIG="$pgc") >"$WORK/build-$major.log" 2>&1; then
    grep -E 'error|Error' "$WORK/build-$major.log" | head -40
    count 0 1
    return 1
  fi
  echo "installed"
  # pg_regress, then TAP, apart: a failing pg_regress suite would stop
  # "make installcheck" before prove.
  local kind args log
  for dir in "" directory; do
    for kind in pg_regress TAP; do
      if [ $kind = TAP ]; then
        grep -q '^TAP_TESTS' "$copy/$dir/Makefile" || continue
        args=(REGRESS=)
      else
        args=(TAP_TESTS=)
      fi
      label="PostgreSQL $major: pg_memo${dir:+_$dir} $kind"
      log=$WORK/check-$major-${dir:-main}-$kind.log
      section "$label"
      "${run[@]}" runuser -u postgres -- make -C "$inner/$dir" installcheck PG_CONFIG="$pgc" "${args[@]}" >"$log" 2>&1
      rc=$?
      count_installcheck "$log" $rc
      if [ $rc -ne 0 ]; then
        [ $kind = pg_regress ] && find "$copy/$dir" -maxdepth 1 -name regression.diffs -exec head -150 {} \;
        [ $kind = TAP ] && find "$copy/$dir" -path '*tmp_check/log/*' -name 'regress_log_*' \
          -exec grep -H -B4 -E '^\[[0-9:.]+\]\([0-9.]+s\) not ok|Looks like your test exited' {} \; 2>/dev/null | head -150
      fi
    done
  done
}

# PostgreSQL's regression suite, plain and preloaded, from the source tree a
# version was built from.
regress_compare() {  # MAJOR PG_CONFIG SOURCE_DIR
  local log=$WORK/pg-regress-$1.log
  section "PostgreSQL $1: PostgreSQL's regression suite, plain and with pg_memo preloaded"
  PG_CONFIG=$2 PG_REGRESS_SOURCE=$3 PG_MEMO_CACHE=$CACHE bash "$SRC/scripts/pg-regress-compare.sh" >"$log" 2>&1
  local rc=$?
  cat "$log"
  if [ $rc -eq 0 ]; then count 1 0; else count 0 1; fi
}

# The Debian package, built, installed and tested in a root where pg_buildext
# finds the version: from the tracked files, as scripts/build-deb.sh does.
deb_in_root() {  # MAJOR ROOT
  local major=$1 root=$2 tree=/tmp/pg_memo_deb_src log=$WORK/deb-$1.log
  section "PostgreSQL $major: the Debian package (scripts/build-deb.sh in $root)"
  # this and earlier runs' copies and build folders (build-deb.sh keeps its logs)
  rm -rf "${root:?}$tree" "$root"/tmp/pg_memo_deb.* && mkdir -p "$root$tree"
  if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$root$tree" -xf -
  else
    tar -C "$SRC" -cf - . | tar -C "$root$tree" -xf -
  fi
  chroot "$root" bash "$tree/scripts/build-deb.sh" /tmp/pg_memo_dist >"$log" 2>&1
  local rc=$? summary
  grep -E '^(ok|not ok) |^dpkg-deb: building' "$log"
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  if [ -n "$summary" ]; then
    count "${summary%% *}" "$(awk '{print $3}' <<<"$summary")"
  fi
  if [ $rc -ne 0 ]; then
    tail -30 "$log"
    [ -n "$summary" ] || count 0 1
  fi
}

# --- 1. the core, without PostgreSQL -------------------------------------------
section "core unit tests (ctest), once for every version"
if cmake -S "$SRC" -B "$WORK/core" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$WORK/core.log" 2>&1 &&
   nice -n 19 cmake --build "$WORK/core" -j2 >>"$WORK/core.log" 2>&1; then
  (cd "$WORK/core" && ctest --output-on-failure 2>&1) | tee "$WORK/ctest.log" | tail -3
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$WORK/ctest.log" | tail -1)
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  bad=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$summary")
  if [ -n "$total" ]; then count $((total - bad)) "$bad"; else count 0 1; fi
else
  tail -30 "$WORK/core.log"
  count 0 1
fi

# --- 2. each version -------------------------------------------------------------
for major in "${VERSIONS[@]}"; do
  section "PostgreSQL $major"
  if pgsrc=$(fetch_source "$major"); then
    if build_pg "$major" "$pgsrc"; then
      test_version "$major" "$CACHE/pg$major/bin/pg_config" ""
      regress_compare "$major" "$CACHE/pg$major/bin/pg_config" "$pgsrc"
      skip "PostgreSQL $major: the Debian package (built from source here, not installed from Debian's packages: pg_buildext does not find it)"
    else
      count 0 1
    fi
  else
    echo "PostgreSQL $major: no Debian source package reachable ($(grep -E '^E:' "$WORK/source-$major.log" 2>/dev/null | head -1)); Debian's binary packages in a root of their own instead"
    if make_root "$major"; then
      test_version "$major" "/usr/lib/postgresql/$major/bin/pg_config" "$CACHE/root-$major"
      skip "PostgreSQL $major: PostgreSQL's regression suite (it comes from the postgresql-$major source package, which this mirror does not serve)"
      deb_in_root "$major" "$CACHE/root-$major"
    else
      count 0 1
    fi
  fi
done

section "summary"
echo "logs in $WORK"
[ ${#SKIPPED[@]} -eq 0 ] || printf 'skipped: %s\n' "${SKIPPED[@]}"
echo "${#SKIPPED[@]} skipped (above)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
