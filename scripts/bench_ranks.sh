#!/usr/bin/env bash
# Ranks vs threads on this machine: the default job's model (random BERT-base) on 200 samples,
# as 1 rank x 2 threads and as 2 ranks x 1 thread. Prints samples/s and the share of the run
# spent writing the store and flushing progress. Units of 20 samples, so that both ranks get
# the same work. Needs scripts/setup.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${SAMPLES:-200}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {  # run NAME RANKS THREADS
  local start end
  start=$(date +%s.%N)
  mpiexec --bind-to none -n "$2" build/ctxsim run configs/default.yaml samples.num_samples="$N" runtime.threads="$3" \
    output.dir="$OUT/$1" statistics.examples=[0] runtime.unit_size=20 > /dev/null 2> "$OUT/$1.log"
  end=$(date +%s.%N)
  line=$(grep 'done:' "$OUT/$1.log")
  store=$(sed -n 's/.*store writes \([0-9.e-]*\) s.*/\1/p' <<< "$line")
  flush=$(sed -n 's/.*progress flushes \([0-9.e-]*\) s.*/\1/p' <<< "$line")
  total=$(sed -n 's/.*in \([0-9.e+-]*\) s on.*/\1/p' <<< "$line")
  awk -v n="$N" -v t="$total" -v s="$store" -v f="$flush" -v name="$1" \
    'BEGIN { printf "%-22s %7.2f samples/s  (run %.1f s; store writes %.2f%%, progress flushes %.2f%%)\n", name, n / t, t, 100 * s / t, 100 * f / t }'
}
echo "bench_ranks: $N samples, BERT-base (random), T=128, float32"
run "1 rank x 2 threads" 1 2
run "2 ranks x 1 thread" 2 1
