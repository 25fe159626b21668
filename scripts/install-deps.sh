#!/usr/bin/env bash
# Installs everything pg_memo needs to build, test and demo (Debian 12, root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# postgresql-15 ships the contrib modules (ltree, pg_stat_statements, dblink);
# postgresql-server-dev-15 brings PGXS, pg_regress, the TAP modules and clang;
# dpkg-dev unpacks the PostgreSQL source that scripts/pg-regress-compare.sh
# fetches with apt-get source; debhelper and postgresql-server-dev-all build
# the Debian package (scripts/build-deb.sh); prometheus-postgres-exporter and
# curl serve scripts/test-exporter.sh; gdb makes an unreadable WAL record in
# test/t/015 (skipped without it); prometheus brings promtool, which runs
# the alerting rules' tests (scripts/test-exporter.sh; its server is not
# started). scripts/test-all-versions.sh builds
# PostgreSQL 18 from source (bison, flex, pkgconf to find ICU, libicu-dev,
# libxml2-dev, libxslt1-dev, uuid-dev, libreadline-dev, zlib1g-dev) and
# makes a Debian root for 17 (debootstrap). python3-psycopg,
# python3-sqlalchemy, pgbouncer and node-postgres (npm, into test/clients)
# are the real clients of test/t/018 (registered statements);
# python3-django with python3-psycopg2, ruby-activerecord with ruby-pg, and
# sysbench those of test/t/025 (statements matched by shape and admitted
# automatically; run on PostgreSQL 15 only).
apt-get install -y -qq --no-install-recommends \
  postgresql-15 postgresql-server-dev-15 libboost-dev libipc-run-perl \
  cmake g++ make libgtest-dev libbenchmark-dev libxxhash-dev dpkg-dev \
  debhelper postgresql-server-dev-all prometheus-postgres-exporter prometheus curl gdb \
  bison flex pkgconf libicu-dev libxml2-dev libxslt1-dev uuid-dev libreadline-dev zlib1g-dev debootstrap \
  python3-psycopg python3-sqlalchemy pgbouncer \
  python3-django python3-psycopg2 ruby-activerecord ruby-pg sysbench >/dev/null
# Debian starts no PgBouncer service in a container; where it does, the
# tests start their own on a free port anyway.
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# node-postgres (test/t/018, 020): the machine's Node.js and npm, or
# Debian's where there are none (020 fails under CI without them).
command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
if command -v npm >/dev/null; then
  (cd "$SRC/test/clients" && npm ci --no-audit --no-fund --silent >/dev/null)
fi
echo "dependencies installed"
