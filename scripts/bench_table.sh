#!/usr/bin/env bash
# The statistics' cost across sample lengths and rule counts: `ctxsim bench-model` for
# T in {64, 128, 256, 512} and 1, 3 and 7 selection rules, printed as one Markdown table of
# (c) samples/s and c/a (the full pipeline over the plain forward, measured in one process).
#   bash scripts/bench_table.sh                 # BERT-base shape, float32, batch 8
#   PRESET=bert-mini DTYPE=float32 bash scripts/bench_table.sh
#   CTXSIM=/path/to/other/ctxsim bash scripts/bench_table.sh   # another build, for before/after
#   CTXSIM_ISA=x86-64-v3 bash scripts/bench_table.sh   # what an AVX2 node runs (also baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
PRESET=${PRESET:-bert-base}
DTYPE=${DTYPE:-float32}
BATCH=${BATCH:-8}
SECONDS_PER=${SECONDS_PER:-2}
LENGTHS=${LENGTHS:-"64 128 256 512"}
RULES=${RULES:-"1 3 7"}
echo "bench_table: $PRESET, $DTYPE, batch $BATCH, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$CTXSIM" bench-model --preset "$PRESET" --seq-len 8 --batch 1 --dtype "$DTYPE" --seconds 0.01 | grep '^ISA' 
printf '| T | rules | (a) samples/s | (c) samples/s | c/a |\n|---|---|---|---|---|\n'
for T in $LENGTHS; do
  for R in $RULES; do
    line=$("$CTXSIM" bench-model --preset "$PRESET" --seq-len "$T" --rules "$R" --batch "$BATCH" --dtype "$DTYPE" \
             --seconds "$SECONDS_PER" | tail -1)
    # dtype batch "a, gf" "b, gf" b/a "c, gf" c/a "(g) gf" a/g
    read -r _ _ a _ _ _ _ c _ ca _ <<< "${line//,/ }"
    printf '| %s | %s | %s | %s | %s |\n' "$T" "$R" "$a" "$c" "$ca"
  done
done
