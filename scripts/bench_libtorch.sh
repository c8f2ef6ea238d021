#!/usr/bin/env bash
# ctxsim built against two LibTorch builds, measured together, alternating, REPEAT pairs: Debian's
# 1.13 (build/, OpenBLAS) and the CPU LibTorch of the project venv's torch 2.13.0 (BUILD2, MKL;
# configured and built here if absent). Per pair: `bench-model --model` (a: the forward, c: forward
# and statistics, one rule) and a whole `ctxsim run` of SAMPLES Brown samples; prints each pair and
# the medians of BUILD2's speed over build/'s. Under CTXSIM_ISA both run at that level (ctxsim sets
# OpenBLAS's kernels, ATen's, oneDNN's and MKL's from it).
#   bash scripts/bench_libtorch.sh
#   CTXSIM_ISA=x86-64-v3 MODEL=data/models/bert-base-seed0 SAMPLES=200 REPEAT=3 bash scripts/bench_libtorch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
A=${A:-build/ctxsim}
BUILD2=${BUILD2:-build-torch2}
B=$BUILD2/ctxsim
CONFIG=${CONFIG:-configs/default.yaml}
SAMPLES=${SAMPLES:-200}
BATCH=${BATCH:-8}
THREADS=${THREADS:-$(nproc)}
DTYPE=${DTYPE:-float32}
REPEAT=${REPEAT:-3}
MODEL=${MODEL:-$("$A" validate "$CONFIG" | sed -n 's/^ *path: *"\([^"]*\)".*/\1/p' | sed -n 2p)}
if [ ! -x "$B" ]; then
  prefix=$(.venv/bin/python -W ignore -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cmake -S . -B "$BUILD2" -DCTXSIM_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
  cmake --build "$BUILD2" -j "$(nproc)" --target ctxsim > /dev/null
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "bench_libtorch: model $MODEL, $DTYPE, batch $BATCH, $THREADS threads, $SAMPLES samples a run, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for bin in "$A" "$B"; do
  echo "$bin: $("$bin" --version | sed -n 2p); $("$bin" bench-model --model "$MODEL" --batch 1 --dtype "$DTYPE" --threads "$THREADS" --seconds 0.01 | grep '^ISA')"
done
forward() {  # forward BIN: "a c" samples/s of bench-model's last line
  "$1" bench-model --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS" --rules 1 --seconds 6 \
    | tail -1 | awk '{ gsub(",", ""); print $3, $8 }'
}
run() {  # run BIN: wall seconds of a whole job
  rm -rf "$OUT/run"
  local start end
  start=$(date +%s.%N)
  "$1" run "$CONFIG" samples.num_samples="$SAMPLES" runtime.batch_size="$BATCH" runtime.threads="$THREADS" model.dtype="$DTYPE" \
    model.path="$MODEL" statistics.examples=[] output.report=false output.dir="$OUT/run" > /dev/null 2> "$OUT/log"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }'
}
fa=() fc=() rr=()
for i in $(seq "$REPEAT"); do
  read -r a1 c1 <<< "$(forward "$A")"
  read -r a2 c2 <<< "$(forward "$B")"
  t1=$(run "$A")
  t2=$(run "$B")
  fa+=("$(awk -v x="$a2" -v y="$a1" 'BEGIN { printf "%.3f", x / y }')")
  fc+=("$(awk -v x="$c2" -v y="$c1" 'BEGIN { printf "%.3f", x / y }')")
  rr+=("$(awk -v x="$t1" -v y="$t2" 'BEGIN { printf "%.3f", x / y }')")
  echo "pair $i: forward a $a1 vs $a2, c $c1 vs $c2 samples/s; run $t1 s vs $t2 s (build/ first)"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median speed ratio ($BUILD2 / build/): forward a $(median "${fa[@]}"), forward c $(median "${fc[@]}"), whole run $(median "${rr[@]}") of $REPEAT pairs"
