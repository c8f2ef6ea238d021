#!/usr/bin/env bash
# Sets up (packages, data, build) and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${BUILD_DIR:-build}
echo "[test] ctest in $BUILD"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
