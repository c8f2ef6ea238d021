#!/usr/bin/env bash
# The CUDA build, on any x86-64 Linux with or without a GPU (CI runs it on a GPU-less machine):
# a venv of its own with PyPI's CUDA torch (the LibTorch ctxsim links) and NVIDIA's CUDA 13.0
# wheels (nvcc, the runtime headers and libraries, NCCL), pinned with hashes in
# scripts/requirements-cuda.txt; then ctxsim with -DCTXSIM_CUDA=ON in build-cuda/, warnings as
# errors; then tests/cuda_build_test.sh on that binary.
#   bash scripts/cuda_build.sh
# The venv lives outside the checkout (CTXSIM_CUDA_VENV, default ~/.cache/ctxsim/cuda-venv, about
# 5.6 GB) and is reused while requirements-cuda.txt is unchanged; the first install takes
# minutes (most files from pip's local find-links where the machine has them, else PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "[cuda-build] $*"; }
VENV=${CTXSIM_CUDA_VENV:-$HOME/.cache/ctxsim/cuda-venv}
REQ=scripts/requirements-cuda.txt
BUILD=${CUDA_BUILD_DIR:-build-cuda}
start=$(date +%s)

want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.requirements.sha256" 2> /dev/null)" = "$want" ]; then
  say "venv present: $VENV"
else
  say "venv: $VENV from $REQ (pip, hash-checked)"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  /usr/bin/python3 -m venv "$VENV"
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary :all: -r "$REQ" 2> "$VENV/pip.log"; then
    grep -v '^WARNING: Location' "$VENV/pip.log" | tail -5 >&2
    say "ERROR: pip could not install $REQ into $VENV (the whole log: $VENV/pip.log); fix: check that PyPI is reachable (pip config list) and that the disk has 6 GB free"
    exit 1
  fi
  echo "$want" > "$VENV/.requirements.sha256"
fi
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
CUDA_ROOT=$SITE/nvidia/cu13
NCCL_ROOT=$SITE/nvidia/nccl
TORCH_CMAKE=$("$VENV/bin/python" -W ignore -c 'import torch; print(torch.utils.cmake_prefix_path)')

# NVIDIA's wheels ship a toolkit's files without its developer links: no lib64 (which nvcc's own
# profile and FindCUDA look in) and no unversioned libX.so for the linker. Add them in the venv.
ln -sfn lib "$CUDA_ROOT/lib64"
for lib in "$CUDA_ROOT"/lib/lib*.so.* "$NCCL_ROOT"/lib/lib*.so.*; do
  dev=${lib%%.so.*}.so
  [ -e "$dev" ] || ln -s "$(basename "$lib")" "$dev"
done
say "LibTorch: $TORCH_CMAKE; CUDA: $("$CUDA_ROOT/bin/nvcc" --version | tail -1); NCCL: $NCCL_ROOT"

# No GPU code of ctxsim's own is compiled (LibTorch's kernels are in its libraries), so one
# architecture keeps LibTorch's CMake from probing for a device. Figures on, so that the CPU
# suite's cases run unchanged (they write reports).
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCTXSIM_CUDA=ON -DCTXSIM_FIGURES=ON -DCTXSIM_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT" -DCMAKE_CUDA_COMPILER="$CUDA_ROOT/bin/nvcc" \
  -DTORCH_CUDA_ARCH_LIST=9.0 -DNCCL_INCLUDE_DIR="$NCCL_ROOT/include" -DNCCL_LIBRARY="$NCCL_ROOT/lib/libnccl.so" \
  > "$BUILD/configure.log" 2>&1 || { tail -30 "$BUILD/configure.log" >&2; say "ERROR: cmake could not configure the CUDA build (log: $BUILD/configure.log)"; exit 1; }
grep -E "LibTorch|PyTorch: CUDA detected|Found CUDAToolkit" "$BUILD/configure.log" | sed 's/^-- /[cuda-build] /'
cmake --build "$BUILD" -j "$(nproc)" --target ctxsim
say "linked: $(ls -la "$BUILD/ctxsim")"
say "built in $(( $(date +%s) - start )) s"
# With the CPU build beside it (scripts/test.sh makes build/), their float64 counts must agree.
cpu=""
[ -x build/ctxsim ] && cpu=build/ctxsim
bash tests/cuda_build_test.sh "$BUILD/ctxsim" $cpu
say "done in $(( $(date +%s) - start )) s"
