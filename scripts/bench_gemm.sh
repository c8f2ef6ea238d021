#!/usr/bin/env bash
# The GEMM libraries a forward could run on, on BERT-base's layer shapes (SHAPES=smollm2:
# SmolLM2-135M's) (scripts/bench_gemm.cpp):
# OpenBLAS (what LibTorch calls through libblas.so.3), BLIS (Debian's libblis4-openmp, installed
# here when missing) and oneDNN's sgemm (LibTorch's libdnnl), each with OMP_NUM_THREADS threads.
# Under CTXSIM_ISA=x86-64-v3 each is capped at AVX2 as ctxsim caps them (OpenBLAS Haswell, BLIS
# haswell, oneDNN AVX2). Prints GF/s per shape and over all four.
#   bash scripts/bench_gemm.sh
#   CTXSIM_ISA=x86-64-v3 BATCH=16 bash scripts/bench_gemm.sh
#   SHAPES=smollm2 bash scripts/bench_gemm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
dpkg-query -W -f='${Status}' libblis4-openmp 2> /dev/null | grep -q "install ok installed" \
  || { $SUDO apt-get install -y -qq --no-install-recommends libblis4-openmp > /dev/null; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
g++ -O2 -std=c++17 scripts/bench_gemm.cpp -o "$OUT/bench_gemm" -ldl
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
BATCH=${BATCH:-8}
SHAPES=${SHAPES:-bert-base}
LIB=/usr/lib/x86_64-linux-gnu
echo "bench_gemm: $SHAPES, batch $BATCH (M = $((BATCH * 128))), $OMP_NUM_THREADS threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), CTXSIM_ISA=${CTXSIM_ISA:-unset}"
case "${CTXSIM_ISA:-}" in
  x86-64-v3|v3) export OPENBLAS_CORETYPE=Haswell BLIS_ARCH_TYPE=3 ONEDNN_MAX_CPU_ISA=AVX2 ;;  # BLIS 0.9: 3 = haswell
  "") unset BLIS_ARCH_TYPE ;;
esac
OPENBLAS_VERBOSE=2 "$OUT/bench_gemm" openblas "$LIB/openblas-openmp/libopenblas.so.0" "$BATCH" "$SHAPES" 2>&1 | grep -E "^Core|all four" | tr "\n" " "; echo
BLIS_ARCH_DEBUG=1 "$OUT/bench_gemm" blis "$LIB/blis-openmp/libblis.so.4" "$BATCH" "$SHAPES" 2>&1 | grep -E "sub-configuration|all four" | tr '\n' ' '; echo
"$OUT/bench_gemm" dnnl "$LIB/libdnnl.so.2" "$BATCH" "$SHAPES" | tail -1
