#!/usr/bin/env bash
# docs/FINDINGS.md "Pruning": the model trained here and its step-0 weights through `ctxsim prune`
# (configs/prune/brown.yaml: 500 held-out Brown windows), each with one more order from a ctxsim
# score (prune.score, default noise) measured by `ctxsim run` on the same held-out windows. Writes
# under OUT (default runs/prune_findings): the run stores, the pruning stores with their reports and
# summaries, and a compare page of the two. About 35 minutes on 2 cores.
#   bash scripts/prune_findings.sh [OUT] [SCORE]
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
OUT=${1:-runs/prune_findings}
SCORE=${2:-noise}
mkdir -p "$OUT"
for m in brown-bert brown-bert-init; do
  "$CTXSIM" run configs/default.yaml model.path=models/$m corpus.heldout_every=10 corpus.split=heldout samples.num_samples=500 \
    statistics.examples=[] output.report=false output.dir="$OUT/run-$m" > "$OUT/run-$m.txt"
  "$CTXSIM" prune configs/prune/brown.yaml model.path=models/$m prune.scores_from="$OUT/run-$m/store.h5" prune.score="$SCORE" \
    output.dir="$OUT/prune-$m" > "$OUT/prune-$m.txt"
done
"$CTXSIM" compare "$OUT/prune-brown-bert/store.h5" "$OUT/prune-brown-bert-init/store.h5" --labels trained,init --out "$OUT/compare" > /dev/null
cat "$OUT/prune-brown-bert.txt" "$OUT/prune-brown-bert-init.txt"
