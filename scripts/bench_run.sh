#!/usr/bin/env bash
# The whole run against the bare forward pass, measured together: `ctxsim run` of a short job
# (start-up, model load, store, summary included; wall time of the whole process) against
# `ctxsim bench-model --model` on the same checkpoint, batch size, dtype and threads (the
# forward a plain script would run). They alternate, REPEAT pairs, so that drift of the machine
# hits both; each pair gives a ratio (run samples/s over forward samples/s) and the median is
# printed. Also prints the run's peak RSS and its first-batch line. Needs scripts/setup.sh.
#   bash scripts/bench_run.sh                       # 200 Brown samples, BERT-base, float32, batch 8
#   SAMPLES=1000 THREADS=2 REPEAT=5 bash scripts/bench_run.sh
#   CONFIG=configs/default.yaml EXTRA="model.dtype=bfloat16" bash scripts/bench_run.sh
#   CTXSIM_ISA=x86-64-v3 bash scripts/bench_run.sh     # what an AVX2 node runs
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
read -r -a extra <<< "${EXTRA:-}"
echo "bench_run: $SAMPLES samples of $CONFIG, model $MODEL, $DTYPE, batch $BATCH, $THREADS threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
# The instruction-set level and BLAS kernel set both sides run (CTXSIM_ISA lowers the level).
"$CTXSIM" bench-model --model "$MODEL" --batch 1 --dtype "$DTYPE" --threads "$THREADS" --seconds 0.01 | grep '^ISA' 
ratios=()
for i in $(seq "$REPEAT"); do
  fwd=$("$CTXSIM" bench-model --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS" --rules 1 --seconds 4 \
        | tail -1 | awk '{ sub(",", "", $3); print $3 }')
  rm -rf "$OUT/run"
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$OUT/rss" "$CTXSIM" run "$CONFIG" samples.num_samples="$SAMPLES" runtime.batch_size="$BATCH" \
    runtime.threads="$THREADS" model.dtype="$DTYPE" statistics.examples=[] output.report=false output.dir="$OUT/run" \
    "${extra[@]}" > /dev/null 2> "$OUT/log"
  end=$(date +%s.%N)
  ratio=$(awk -v n="$SAMPLES" -v s="$start" -v e="$end" -v f="$fwd" 'BEGIN { printf "%.3f", n / (e - s) / f }')
  ratios+=("$ratio")
  awk -v n="$SAMPLES" -v s="$start" -v e="$end" -v f="$fwd" -v r="$ratio" -v m="$(cat "$OUT/rss")" \
    'BEGIN { printf "pair %d: run %.2f s = %.2f samples/s; forward %.2f samples/s; ratio %s; run peak RSS %.0f MB\n", '"$i"', e - s, n / (e - s), f, r, m / 1024 }'
  grep 'first batch' "$OUT/log" | sed 's/^ctxsim: /        /'
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median ratio (run / bare forward): %s of %d pairs\n", v[int((NR + 1) / 2)], NR }'
