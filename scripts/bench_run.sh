#!/usr/bin/env bash
# The whole run against the bare forward pass, measured together: `ctxsim run` of a short job
# (start-up, model load, store, summary included; wall time of the whole process) against
# `ctxsim bench-model --model` on the same checkpoint, batch size, dtype and threads (the
# forward a plain script would run), measured before and after each run and averaged, so that
# drift of the machine hits both; each of REPEAT pairs gives a ratio (run samples/s over
# forward samples/s), and the median is printed. Also prints the run's peak RSS and where its
# time went: the batches in steady state against the bare forward (what scales with the number
# of samples) and the seconds outside them (start-up to the first batch, store writes, progress
# flushes, the end), so that a job's time extrapolates as fixed + samples / rate.
# Needs scripts/setup.sh.
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
steadies=()
# The median of the numbers on stdin, and how many there were.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], NR }'; }
forward() {
  "$CTXSIM" bench-model --model "$MODEL" --batch "$BATCH" --dtype "$DTYPE" --threads "$THREADS" --rules 1 --seconds 4 \
    | tail -1 | awk '{ sub(",", "", $3); print $3 }'
}
for i in $(seq "$REPEAT"); do
  before=$(forward)
  rm -rf "$OUT/run"
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$OUT/rss" "$CTXSIM" run "$CONFIG" samples.num_samples="$SAMPLES" runtime.batch_size="$BATCH" \
    runtime.threads="$THREADS" model.dtype="$DTYPE" statistics.examples=[] output.report=false output.dir="$OUT/run" \
    "${extra[@]}" > /dev/null 2> "$OUT/log"
  end=$(date +%s.%N)
  # The forward is measured on both sides of the run (the machine drifts over a long one).
  after=$(forward)
  fwd=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.3f", (a + b) / 2 }')
  ratio=$(awk -v n="$SAMPLES" -v s="$start" -v e="$end" -v f="$fwd" 'BEGIN { printf "%.3f", n / (e - s) / f }')
  ratios+=("$ratio")
  awk -v n="$SAMPLES" -v s="$start" -v e="$end" -v f="$fwd" -v r="$ratio" -v m="$(cat "$OUT/rss")" -v fb="$before" -v fa="$after" \
    'BEGIN { printf "pair %d: run %.2f s = %.2f samples/s; forward %.2f samples/s (%s before, %s after); ratio %s; run peak RSS %.0f MB\n", '"$i"', e - s, n / (e - s), f, fb, fa, r, m / 1024 }'
  grep 'first batch' "$OUT/log" | sed 's/^ctxsim: /        /'
  # Where the time went: the batches (median, against the bare forward: what scales with the
  # number of samples; and all of them, spread included), and the seconds outside them: start-up
  # to the first batch, store writes, progress flushes, and the end after the last batch.
  later=$(sed -n 's/.*later batches \([0-9.]*\) s median.*/\1/p' "$OUT/log")
  began=$(sed -n 's/.*first batch began \([0-9.]*\) s after.*/\1/p' "$OUT/log")
  parts=$(sed -n 's/.*(compute \([0-9.]*\) s on rank 0; store writes \([0-9.]*\) s, progress flushes \([0-9.]*\) s).*/\1 \2 \3/p' "$OUT/log")
  if [ -n "$later" ] && [ -n "$began" ] && [ -n "$parts" ]; then
    steady=$(awk -v b="$BATCH" -v l="$later" -v f="$fwd" 'BEGIN { printf "%.3f", b / l / f }')
    steadies+=("$steady")
    awk -v b="$BATCH" -v l="$later" -v f="$fwd" -v st="$steady" -v began="$began" -v parts="$parts" -v n="$SAMPLES" \
        -v wall="$(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }')" 'BEGIN { split(parts, p, " ");
          printf "        batches: median %.2f samples/s = %s of the bare forward, all %.2f samples/s (%.2f s)\n", b / l, st, n / p[1], p[1];
          printf "        outside them: start-up %.2f s, store writes %.2f s, progress flushes %.2f s, the end %.2f s\n",
                 began, p[2], p[3], wall - began - p[1] - p[2] - p[3] }'
  fi
done
read -r m n < <(printf '%s\n' "${ratios[@]}" | median)
echo "median ratio (run / bare forward): $m of $n pairs"
if [ ${#steadies[@]} -gt 0 ]; then
  read -r m n < <(printf '%s\n' "${steadies[@]}" | median)
  echo "median steady-state ratio (run batches / bare forward): $m"
fi
