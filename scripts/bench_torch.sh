#!/usr/bin/env bash
# ctxsim against a plain PyTorch implementation of the same job (scripts/torch_pipeline.py, Debian's
# python3-torch: the same LibTorch and BLAS), measured together, alternating, REPEAT pairs:
#   forward: `ctxsim bench-model` (a) vs `torch_pipeline.py --forward-only` (same checkpoint, T,
#            batch, dtype, threads);
#   run:     `ctxsim run` of SAMPLES Brown samples (whole process: start-up, load, tokenizing,
#            store, summary) vs the script on the same samples (whole process: imports, load).
# Prints each pair and the ratio of medians (ctxsim over PyTorch). Under CTXSIM_ISA the script
# gets the same level (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE), as ctxsim
# sets them for itself. Needs scripts/setup.sh and python3-torch (scripts/setup.sh installs it).
#   bash scripts/bench_torch.sh                          # this CPU's own level
#   CTXSIM_ISA=x86-64-v3 bash scripts/bench_torch.sh     # what an AVX2 node runs
#   SAMPLES=400 REPEAT=5 BATCH=8 THREADS=2 bash scripts/bench_torch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
CONFIG=${CONFIG:-configs/default.yaml}
SAMPLES=${SAMPLES:-200}
BATCH=${BATCH:-8}
THREADS=${THREADS:-$(nproc)}
DTYPE=${DTYPE:-float32}
REPEAT=${REPEAT:-3}
MODEL=${MODEL:-$("$CTXSIM" validate "$CONFIG" | sed -n 's/^ *path: *"\([^"]*\)".*/\1/p' | sed -n 2p)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
case "${CTXSIM_ISA:-}" in
  "") ;;
  x86-64-v4|v4) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx512} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-ALL} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} ;;
  x86-64-v3|v3) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} ;;
  baseline|x86-64) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-default} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-SSE41} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Prescott} ;;
  *) echo "bench_torch: unknown CTXSIM_ISA=$CTXSIM_ISA" >&2; exit 1 ;;
esac
PY=(/usr/bin/python3 scripts/torch_pipeline.py --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS")
echo "bench_torch: $SAMPLES samples of $CONFIG, model $MODEL, $DTYPE, batch $BATCH, $THREADS threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$CTXSIM" bench-model --model "$MODEL" --batch 1 --dtype "$DTYPE" --threads "$THREADS" --seconds 0.01 | grep '^ISA' | sed 's/^/ctxsim /'
run_ctxsim() {
  rm -rf "$OUT/run"
  "$CTXSIM" run "$CONFIG" samples.num_samples="$SAMPLES" runtime.batch_size="$BATCH" runtime.threads="$THREADS" model.dtype="$DTYPE" \
    model.path="$MODEL" statistics.examples=[] output.report=false output.dir="$OUT/run" > /dev/null 2> "$OUT/log"
}
run_ctxsim  # the samples the script reads (and a warm page cache for both)
cp "$OUT/run/store.h5" "$OUT/samples.h5"
fwd=() run=()
for i in $(seq "$REPEAT"); do
  a=$("$CTXSIM" bench-model --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS" --rules 1 --seconds 6 \
      | tail -1 | awk '{ sub(",", "", $3); print $3 }')
  b=$("${PY[@]}" --forward-only --seconds 6 --store "$OUT/samples.h5" | sed -n 's/^forward only: .* = \([0-9.]*\) samples\/s/\1/p')
  fwd+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')")
  start=$(date +%s.%N); run_ctxsim; end=$(date +%s.%N)
  c=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  start=$(date +%s.%N); "${PY[@]}" --store "$OUT/samples.h5" > /dev/null; end=$(date +%s.%N)
  p=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  run+=("$(awk -v c="$c" -v p="$p" 'BEGIN { printf "%.3f", p / c }')")
  echo "pair $i: forward ctxsim $a vs PyTorch $b samples/s (ratio ${fwd[-1]}); run ctxsim $c s vs PyTorch script $p s (speed ratio ${run[-1]})"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median forward ratio (ctxsim / PyTorch): $(median "${fwd[@]}") of $REPEAT pairs"
echo "median run speed ratio (ctxsim / PyTorch script): $(median "${run[@]}") of $REPEAT pairs"
