#!/usr/bin/env bash
# Sets up (packages, data, build) and runs the whole test suite with CTest.
#   bash scripts/test.sh                 # everything (README: the test command)
#   bash scripts/test.sh -LE long        # the quick suite (ctest arguments pass through)
#   BUSY=1 bash scripts/test.sh          # the same with a CPU burner beside it, as on a shared
#                                        # machine (the suite must pass that way too)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${BUILD_DIR:-build}
burner=""
if [ "${BUSY:-0}" = 1 ]; then
  (while :; do :; done) &
  burner=$!
  trap 'kill "$burner" 2> /dev/null' EXIT
  echo "[test] a CPU burner (pid $burner) runs beside the suite"
fi
echo "[test] ctest in $BUILD"
start=$(date +%s)
rc=0
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@" || rc=$?
echo "[test] $(( $(date +%s) - start )) s"
exit $rc
