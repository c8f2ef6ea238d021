#!/usr/bin/env bash
# ctxsim against a PyTorch peer doing the same job, measured together, alternating, REPEAT pairs.
# PEER=plain (default): scripts/torch_pipeline.py, a plain PyTorch implementation on Debian's
# python3-torch (the same LibTorch and BLAS as build/ctxsim), every statistic.
# PEER=transformers: the tool users would pick, Hugging Face transformers on the project venv's
# torch 2.13 (oneDNN, MKL): the model's own forward with the per-head context vectors and maps
# taken by hooks, then the similarities, the first rule's selection and its distance and
# same-sentence counts (torch_pipeline.py --transformers --minimal). Before timing, a float64 run
# of CHECK samples checks the peer's counts against ctxsim's store (exactly).
#   forward: `ctxsim bench-model` (a) vs `torch_pipeline.py --forward-only` (same checkpoint, T,
#            batch, dtype, threads);
#   run:     `ctxsim run` of SAMPLES Brown samples (whole process: start-up, load, tokenizing,
#            store, summary) vs the script on the same samples (whole process: imports, load).
# Prints each pair and the ratio of medians (ctxsim over PyTorch). Under CTXSIM_ISA the script
# gets the same level (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE,
# MKL_ENABLE_INSTRUCTIONS), as ctxsim sets them for itself. Needs scripts/setup.sh.
#   bash scripts/bench_torch.sh                          # this CPU's own level
#   CTXSIM_ISA=x86-64-v3 bash scripts/bench_torch.sh     # what an AVX2 node runs
#   SAMPLES=400 REPEAT=5 BATCH=8 THREADS=2 bash scripts/bench_torch.sh
#   PEER=transformers SAMPLES=500 MODEL=data/models/bert-base-seed0 bash scripts/bench_torch.sh
#   PEER=transformers CHECK=0 MODEL=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf bash scripts/bench_torch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
CONFIG=${CONFIG:-configs/default.yaml}
SAMPLES=${SAMPLES:-200}
BATCH=${BATCH:-8}
THREADS=${THREADS:-$(nproc)}
DTYPE=${DTYPE:-float32}
REPEAT=${REPEAT:-3}
PEER=${PEER:-plain}
CHECK=${CHECK:-40}
MODEL=${MODEL:-$("$CTXSIM" validate "$CONFIG" | sed -n 's/^ *path: *"\([^"]*\)".*/\1/p' | sed -n 2p)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
case "${CTXSIM_ISA:-}" in
  "") ;;
  x86-64-v4|v4) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx512} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-ALL} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} MKL_ENABLE_INSTRUCTIONS=${MKL_ENABLE_INSTRUCTIONS:-AVX512} ;;
  x86-64-v3|v3) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} MKL_ENABLE_INSTRUCTIONS=${MKL_ENABLE_INSTRUCTIONS:-AVX2} ;;
  baseline|x86-64) export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-default} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-SSE41} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Prescott} MKL_ENABLE_INSTRUCTIONS=${MKL_ENABLE_INSTRUCTIONS:-SSE4_2} ;;
  *) echo "bench_torch: unknown CTXSIM_ISA=$CTXSIM_ISA" >&2; exit 1 ;;
esac
case "$PEER" in
  plain) PY=(/usr/bin/python3 scripts/torch_pipeline.py) ;;
  transformers) PY=(.venv/bin/python scripts/torch_pipeline.py --transformers --minimal) ;;
  *) echo "bench_torch: unknown PEER=$PEER (plain or transformers)" >&2; exit 1 ;;
esac
PY+=(--model "$MODEL" --batch "$BATCH" --threads "$THREADS")
echo "bench_torch: $SAMPLES samples of $CONFIG, model $MODEL, $DTYPE, batch $BATCH, $THREADS threads, peer $PEER, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$CTXSIM" bench-model --model "$MODEL" --batch 1 --dtype "$DTYPE" --threads "$THREADS" --seconds 0.01 | grep '^ISA' | sed 's/^/ctxsim /'
run_ctxsim() {
  rm -rf "$OUT/run"
  "$CTXSIM" run "$CONFIG" samples.num_samples="$SAMPLES" runtime.batch_size="$BATCH" runtime.threads="$THREADS" model.dtype="$DTYPE" \
    model.path="$MODEL" statistics.examples=[] output.report=false output.dir="$OUT/run" > /dev/null 2> "$OUT/log"
}
# The peer's counts against ctxsim's, in float64 (count for count: SPEC §4), on CHECK samples
# (CHECK=0 skips it: transformers computes rotary angles in float32 even in a float64 model, so a
# rotary model's near-ties differ).
DTYPE_TIMED=$DTYPE SAMPLES_TIMED=$SAMPLES
if [ "$CHECK" -gt 0 ]; then
  DTYPE=float64 SAMPLES=$CHECK
  run_ctxsim
  "${PY[@]}" --dtype float64 --store "$OUT/run/store.h5" --check > "$OUT/check.log" 2>&1 || { cat "$OUT/check.log"; echo "bench_torch: the peer's counts differ from ctxsim's" >&2; exit 1; }
  echo "counts: the peer equals ctxsim's float64 store on $CHECK samples ($(grep -c ': equal' "$OUT/check.log") datasets); $(sed -n 2p "$OUT/check.log")"
fi
DTYPE=$DTYPE_TIMED SAMPLES=$SAMPLES_TIMED
PY+=(--dtype "$DTYPE")
run_ctxsim  # the samples the script reads (and a warm page cache for both)
cp "$OUT/run/store.h5" "$OUT/samples.h5"
fwd=() run=() loop=()
for i in $(seq "$REPEAT"); do
  a=$("$CTXSIM" bench-model --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS" --rules 1 --seconds 6 \
      | tail -1 | awk '{ sub(",", "", $3); print $3 }')
  b=$("${PY[@]}" --forward-only --seconds 6 --store "$OUT/samples.h5" | sed -n 's/^forward only: .* = \([0-9.]*\) samples\/s/\1/p')
  fwd+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')")
  start=$(date +%s.%N); run_ctxsim; end=$(date +%s.%N)
  c=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  start=$(date +%s.%N); "${PY[@]}" --store "$OUT/samples.h5" > "$OUT/peer.log"; end=$(date +%s.%N)
  p=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  run+=("$(awk -v c="$c" -v p="$p" 'BEGIN { printf "%.3f", p / c }')")
  # the compute alone: ctxsim's batches (its done: line) against the peer's loop over them
  cc=$(sed -n 's/.*(compute \([0-9.]*\) s on rank 0.*/\1/p' "$OUT/log")
  pc=$(sed -n 's/^compute loop: .* in \([0-9.]*\) s .*/\1/p' "$OUT/peer.log")
  loop+=("$(awk -v c="$cc" -v p="$pc" 'BEGIN { printf "%.3f", p / c }')")
  echo "pair $i: forward ctxsim $a vs peer $b samples/s (ratio ${fwd[-1]}); run ctxsim $c s vs peer $p s (speed ratio ${run[-1]});" \
       "compute ctxsim $cc s vs peer $pc s (ratio ${loop[-1]})"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median forward ratio (ctxsim / PyTorch): $(median "${fwd[@]}") of $REPEAT pairs"
echo "median run speed ratio (ctxsim / PyTorch script): $(median "${run[@]}") of $REPEAT pairs"
echo "median compute speed ratio (ctxsim's batches / the peer's loop): $(median "${loop[@]}") of $REPEAT pairs"
