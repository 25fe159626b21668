#!/usr/bin/env bash
# Installs everything pg_memo needs to build, test and demo (Debian 12, root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# postgresql-15 ships the contrib modules (ltree, pg_stat_statements, dblink);
# postgresql-server-dev-15 brings PGXS, pg_regress, the TAP modules and clang;
# dpkg-dev unpacks the PostgreSQL source that scripts/pg-regress-compare.sh
# fetches with apt-get source.
apt-get install -y -qq --no-install-recommends \
  postgresql-15 postgresql-server-dev-15 libboost-dev libipc-run-perl \
  cmake g++ make libgtest-dev libbenchmark-dev libxxhash-dev dpkg-dev >/dev/null
echo "dependencies installed"
