#!/usr/bin/env bash
# Configures, builds and installs ctxsim in a container's build stage (jobs/container/Containerfile
# and ctxsim.def run this same script): build.sh SRC PREFIX [JOBS]
#   SRC     the source tree (the repository's CMakeLists.txt, cmake, stages, pipeline, configs,
#           jobs, docs, README.md, LICENSE, CITATION.cff)
#   PREFIX  where `cmake --install` puts bin/ctxsim, share/ctxsim and share/doc/ctxsim
#   JOBS    compile jobs (default: every core)
# CTXSIM_GIT_REVISION, when set, is the revision --version prints (a SRC without .git); unset,
# CMake asks git in SRC. BUILD_DIR, when set, is the build folder, kept, so that a second call
# with another revision recompiles only what prints it; unset, a temporary folder. INSTALL=0
# compiles only (SRC may then lack the configs, jobs and docs). No tests are built: the runtime
# stage gets the installed prefix only.
set -euo pipefail
SRC=${1:?usage: build.sh SRC PREFIX [JOBS]}
PREFIX=${2:?usage: build.sh SRC PREFIX [JOBS]}
JOBS=${3:-$(nproc)}
BUILD=${BUILD_DIR:-$(mktemp -d)}
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCTXSIM_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCTXSIM_GIT_REVISION="${CTXSIM_GIT_REVISION:-}"
cmake --build "$BUILD" -j "$JOBS"
if [ "${INSTALL:-1}" != 0 ]; then
  cmake --install "$BUILD" --strip
  "$PREFIX/bin/ctxsim" --version
fi
[ -n "${BUILD_DIR:-}" ] || rm -rf "$BUILD"
