#!/usr/bin/env bash
# Builds pg_memo (and pg_memo_directory) and installs them into PostgreSQL 15.
# Usage: scripts/build.sh [SOURCE_DIR]   (root, after scripts/install-deps.sh)
set -euo pipefail
SRC=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
JOBS=$(nproc)
make -C "$SRC" -j"$JOBS" >/dev/null
make -C "$SRC" install >/dev/null
if [ -f "$SRC/directory/Makefile" ]; then
  make -C "$SRC/directory" install >/dev/null
fi
echo "pg_memo built and installed from $SRC"
