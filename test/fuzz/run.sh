#!/usr/bin/env bash
# Builds the libFuzzer target core_fuzz (key and result encodings, with
# AddressSanitizer and UBSan) with clang and runs it.
#   test/fuzz/run.sh [seconds=60] [build dir=/tmp/pg_memo_fuzz]
# The corpus is kept in <build dir>/corpus; a failing input is saved as
# <build dir>/crash-* and the script exits non-zero.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_TO_RUN=${1:-60}
BUILD=${2:-/tmp/pg_memo_fuzz}

cmake -S "$SRC" -B "$BUILD" -DPG_MEMO_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD.cmake.log" 2>&1 ||
  { cat "$BUILD.cmake.log"; exit 1; }
cmake --build "$BUILD" --target core_fuzz -j2 >>"$BUILD.cmake.log" 2>&1 ||
  { cat "$BUILD.cmake.log"; exit 1; }

# Seeds: a key with a text, a NULL and an empty field; a count result; a
# one-row result (the fuzzer learns the rest from coverage).
mkdir -p "$BUILD/corpus"
printf '\x01\x00\x00\x00L\xff\xff\xff\xff\x00\x00\x00\x00' >"$BUILD/corpus/seed-key"
printf '\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00' \
  >"$BUILD/corpus/seed-count"
printf '\x02\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x00\x00\xff\xff\xff\xff\x03\x00\x00\x00\x00\x00\x00\x00abc\x00\x00\x00\x00\x00' \
  >"$BUILD/corpus/seed-rows"

cd "$BUILD"
./core_fuzz -max_total_time="$SECONDS_TO_RUN" -max_len=8192 -print_final_stats=1 \
  -artifact_prefix="$BUILD/" corpus 2>&1 | tee "$BUILD/run.log" | grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^Done|ERROR|property broken|stat::number_of_executed_units|stat::peak_rss'
