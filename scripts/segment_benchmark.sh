#!/usr/bin/env bash
# The study's segmentation suggestion measured (docs/FINDINGS.md "Segmentation"): Choi's benchmark
# regenerated from the held-out Brown documents (configs/segment/choi.yaml), with the model trained
# here, its step-0 weights and a random model of another seed, each a full `ctxsim segment` (about
# 5 min each on 2 cores), drawn together with `ctxsim compare`; the summaries and the page go to
# results/segment/.
#   bash scripts/segment_benchmark.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
RUNS=${RUNS:-results/segment/runs}
OUT=results/segment
[ -f models/brown-bert/model.safetensors ] || { echo "models/brown-bert is missing: ctxsim pretrain configs/pretrain/brown.yaml"; exit 1; }
[ -f data/models/brown-bert-seed1/model.safetensors ] || bash scripts/make_control_models.sh
mkdir -p "$OUT"
stores=()
for m in trained init seed1; do
  path=models/brown-bert
  [ $m = init ] && path=models/brown-bert-init
  [ $m = seed1 ] && path=data/models/brown-bert-seed1
  start=$SECONDS
  "$CTXSIM" segment configs/segment/choi.yaml model.path=$path output.dir="$RUNS/$m" > "$OUT/summary_$m.txt"
  echo "$m: $((SECONDS - start)) s" | tee -a "$OUT/times.txt"
  stores+=("$RUNS/$m/store.h5")
done
"$CTXSIM" compare "${stores[@]}" --labels trained,init,seed1 --out "$OUT/compare" --title "Segmentation: trained vs random" \
  --note "Choi's benchmark from the 50 held-out Brown documents. trained: models/brown-bert; init: its step-0 weights; seed1: a random init of another seed."
echo "wrote $OUT/summary_{trained,init,seed1}.txt and $OUT/compare/compare.html"
