#!/usr/bin/env bash
# Threads on a shared machine: a job at its default thread count (runtime.threads=0) against the
# same job with runtime.threads=1, while another process keeps one core busy. Prints each time
# and the ratio default / one thread (goal: at most 1.15). Alternates the two, ROUNDS times each.
#   bash scripts/bench_busy_threads.sh                 # segment (20 Choi documents)
#   JOB=run bash scripts/bench_busy_threads.sh         # run (192 samples of the default model)
#   JOB=pretrain bash scripts/bench_busy_threads.sh    # pretrain (8 steps)
#   BUSY=0 bash scripts/bench_busy_threads.sh          # the same on an idle machine
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
JOB=${JOB:-segment}
ROUNDS=${ROUNDS:-2}
BUSY=${BUSY:-1}
OUT=$(mktemp -d)
burner=""
cleanup() { [ -n "$burner" ] && kill "$burner" 2> /dev/null; rm -rf "$OUT"; }
trap cleanup EXIT
case "$JOB" in
  segment) ARGS=(segment configs/segment/choi.yaml segment.documents=20 segment.dev_documents=6) ;;
  run) ARGS=(run configs/default.yaml samples.num_samples=192 statistics.examples=[]) ;;
  pretrain) ARGS=(pretrain configs/pretrain/brown.yaml pretrain.steps=8 pretrain.warmup_steps=1) ;;
  *) echo "JOB is segment, run or pretrain" >&2; exit 2 ;;
esac
if [ "$BUSY" = 1 ]; then
  sh -c 'while :; do :; done' &
  burner=$!
fi
seconds() {  # seconds THREADS: one timed job into a fresh folder
  local dir="$OUT/t$1.$RANDOM"
  local start end
  start=$(date +%s.%N)
  "$CTXSIM" "${ARGS[@]}" runtime.threads="$1" output.report=false output.dir="$dir" > "$dir.log" 2>&1 || { tail -3 "$dir.log" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "[bench] $JOB on $(nproc) cores ($cpu), $([ "$BUSY" = 1 ] && echo "one core kept busy" || echo "idle"), level ${CTXSIM_ISA:-native}"
total0=0 total1=0
for r in $(seq 1 "$ROUNDS"); do
  t0=$(seconds 0)
  t1=$(seconds 1)
  echo "[bench] round $r: default threads ${t0} s, runtime.threads=1 ${t1} s"
  total0=$(echo "$total0 + $t0" | bc) total1=$(echo "$total1 + $t1" | bc)
done
echo "[bench] $JOB: default / one thread = $(echo "scale=3; $total0 / $total1" | bc)"
