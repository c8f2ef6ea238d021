#!/usr/bin/env bash
# docs/FINDINGS.md "Real trained models", segmentation: Choi's benchmark (configs/segment/choi.yaml,
# regenerated from the 50 held-out Brown documents) with all-MiniLM-L6-v2 and SmolLM2-135M-Instruct
# beside their random controls; TextTiling, C99 and the Brown BERT's numbers are in every summary
# and in results/segment/. SmolLM2 (30 layers) costs about 11 times the Brown BERT per document (3.7 s here), so
# by default it and its control segment a subset: SMOLLM_DOCUMENTS per length group (and as many
# dev documents), 0 for Choi's full 700. Writes results/real_models/segment/: the summaries,
# times.txt, and a compare page per pair.
#   bash scripts/segment_real_models.sh [RUNS]     (RUNS default runs/real_models/segment)
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
RUNS=${1:-runs/real_models/segment}
OUT=results/real_models/segment
SMOLLM_DOCUMENTS=${SMOLLM_DOCUMENTS:-25}
SMOLLM=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$OUT" "$RUNS"
: > "$OUT/times.txt"
segment() {  # segment NAME OVERRIDES...
  local name=$1; shift
  local start=$SECONDS
  "$CTXSIM" segment configs/segment/choi.yaml output.dir="$RUNS/$name" output.report=false "$@" > "$OUT/summary_$name.txt" 2> "$RUNS/$name.log"
  echo "$name: $((SECONDS - start)) s ($*)" >> "$OUT/times.txt"
}
segment minilm model.path=data/models/all-MiniLM-L6-v2
segment minilm-random model.path=data/models/all-MiniLM-L6-v2-random
small=(segment.documents="$SMOLLM_DOCUMENTS" segment.dev_documents="$SMOLLM_DOCUMENTS")
[ "$SMOLLM_DOCUMENTS" = 0 ] && small=()
segment smollm2 model.path="$SMOLLM" "${small[@]}"
segment smollm2-random model.path=data/models/SmolLM2-135M-Instruct-random "${small[@]}"
"$CTXSIM" compare "$RUNS/minilm/store.h5" "$RUNS/minilm-random/store.h5" --labels minilm,random --out "$OUT/minilm" \
  --title "Segmentation: all-MiniLM-L6-v2 vs random" --note "Choi's benchmark from the 50 held-out Brown documents." > /dev/null
"$CTXSIM" compare "$RUNS/smollm2/store.h5" "$RUNS/smollm2-random/store.h5" --labels smollm2,random --out "$OUT/smollm2" \
  --title "Segmentation: SmolLM2-135M-Instruct vs random" \
  --note "Choi's benchmark from the 50 held-out Brown documents; $SMOLLM_DOCUMENTS test documents per group (0: Choi's counts)." > /dev/null
echo "wrote $OUT/summary_{minilm,minilm-random,smollm2,smollm2-random}.txt, times.txt and the compare pages"
