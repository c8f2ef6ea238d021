#!/usr/bin/env bash
# docs/FINDINGS.md "Real trained models": the study's claims on all-MiniLM-L6-v2 (a trained BERT
# encoder) and SmolLM2-135M-Instruct (a trained Llama-architecture decoder), each against a random
# model of its shape (setup writes both: data/models/*-random), and the BERT trained here on its
# own held-out windows. Writes under OUT (default runs/real_models) the stores, their summaries and
# compare pages, and results/real_models/numbers.md (scripts/real_models.py: every table with its
# 95% bootstrap intervals) and times.txt (each run's seconds on this machine).
#   bash scripts/real_models.sh [OUT]
#   MINILM_SAMPLES=20000 SMOLLM_SAMPLES=2000 (the defaults) set the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
OUT=${1:-runs/real_models}
RESULTS=results/real_models
MINILM_SAMPLES=${MINILM_SAMPLES:-20000}
SMOLLM_SAMPLES=${SMOLLM_SAMPLES:-2000}
SMOLLM=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
for m in data/models/all-MiniLM-L6-v2 data/models/all-MiniLM-L6-v2-random data/models/SmolLM2-135M-Instruct-random "$SMOLLM" models/brown-bert; do
  [ -e "$m" ] || { echo "real_models.sh: $m is missing: scripts/setup.sh writes it"; exit 1; }
done
mkdir -p "$OUT" "$RESULTS"
: > "$RESULTS/times.txt"
run() {  # run NAME OVERRIDES...: one store, timed
  local name=$1; shift
  local t0; t0=$(date +%s)
  "$CTXSIM" run configs/default.yaml statistics.examples=[] output.report=false output.dir="$OUT/$name" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.log"
  echo "$name: $(( $(date +%s) - t0 )) s ($*)" >> "$RESULTS/times.txt"
}
# The encoders: MiniLM and its random control on the study's 20,000 windows of 128 tokens. Brown is
# not MiniLM's training data, so every window is held out for it: sentence-start windows over the
# whole corpus (57,000 candidates). The Brown BERT on the 5,642 windows of its 50 held-out documents.
run minilm model.path=data/models/all-MiniLM-L6-v2 corpus.split=all samples.num_samples="$MINILM_SAMPLES"
run minilm-random model.path=data/models/all-MiniLM-L6-v2-random corpus.split=all samples.num_samples="$MINILM_SAMPLES"
run brown-bert model.path=models/brown-bert model.vocab=models/brown-bert/vocab.txt samples.num_samples=5642 'statistics.separators=[".", ",", "[SEP]"]'
# The decoder: SmolLM2 and its random control (causal attention, no [SEP]: separators . and ,).
run smollm2 model.path="$SMOLLM" samples.num_samples="$SMOLLM_SAMPLES" 'statistics.separators=[".", ","]'
run smollm2-random model.path=data/models/SmolLM2-135M-Instruct-random samples.num_samples="$SMOLLM_SAMPLES" 'statistics.separators=[".", ","]'
for name in minilm minilm-random brown-bert smollm2 smollm2-random; do "$CTXSIM" summary "$OUT/$name/store.h5" > "$RESULTS/summary_$name.txt"; done
"$CTXSIM" compare "$OUT/minilm/store.h5" "$OUT/minilm-random/store.h5" "$OUT/brown-bert/store.h5" --labels minilm,random,brown-bert \
  --out "$RESULTS/encoders" --title "Real encoders: all-MiniLM-L6-v2 against its random control and the Brown BERT" \
  --note "MiniLM and random: $MINILM_SAMPLES windows of 128 tokens from all of Brown; brown-bert: the 5,642 windows of its held-out documents." > /dev/null
"$CTXSIM" compare "$OUT/smollm2/store.h5" "$OUT/smollm2-random/store.h5" --labels smollm2,random --out "$RESULTS/decoder" \
  --title "A real decoder: SmolLM2-135M-Instruct against its random control" \
  --note "$SMOLLM_SAMPLES windows of 128 tokens from the 50 held-out Brown documents; causal attention." > /dev/null
/usr/bin/python3 scripts/real_models.py "$RESULTS" minilm="$OUT/minilm/store.h5" random="$OUT/minilm-random/store.h5" \
  brown-bert="$OUT/brown-bert/store.h5" smollm2="$OUT/smollm2/store.h5" smollm2-random="$OUT/smollm2-random/store.h5"
echo "wrote $RESULTS/numbers.md, times.txt, summaries and the compare pages $RESULTS/{encoders,decoder}"
