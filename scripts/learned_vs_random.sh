#!/usr/bin/env bash
# The study's claims measured on the model trained here, its step-0 init and another random seed
# (docs/FINDINGS.md): runs configs/sweeps/learned_vs_random.yaml (6 runs, a few minutes on 2 cores),
# draws each convention's runs together with `ctxsim compare`, and writes the numbers FINDINGS.md
# quotes into results/learned_vs_random/numbers.md (scripts/learned_vs_random.py, python3 with h5py, reads the stores).
#   bash scripts/learned_vs_random.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
SWEEP=runs/sweeps/learned_vs_random
OUT=results/learned_vs_random
[ -f models/brown-bert/model.safetensors ] || { echo "models/brown-bert is missing: ctxsim pretrain configs/pretrain/brown.yaml"; exit 1; }
[ -f data/models/brown-bert-seed1/model.safetensors ] || bash scripts/make_control_models.sh
"$CTXSIM" run configs/sweeps/learned_vs_random.yaml > /dev/null
mkdir -p "$OUT"
/usr/bin/python3 scripts/learned_vs_random.py "$SWEEP" "$OUT"
for convention in sentences documents; do
  split=$([ $convention = sentences ] && echo heldout || echo all)
  stores=()
  for m in brown-bert brown-bert-init brown-bert-seed1; do stores+=("$SWEEP/model.path-${m}__samples.windows-${convention}__corpus.split-$split/store.h5"); done
  note="2,000 windows of 128 tokens from the 50 held-out Brown documents (never trained on)"
  [ $convention = documents ] && note="one window per Brown document (500), truncated to 128 tokens: the study group's convention; 450 of the documents were trained on"
  "$CTXSIM" compare "${stores[@]}" --labels trained,init,seed1 --out "$OUT/$convention" \
    --title "Learned vs random: $convention" --note "$note. trained: models/brown-bert; init: its step-0 weights; seed1: a random init of another seed."
  for m in brown-bert brown-bert-init brown-bert-seed1; do
    "$CTXSIM" summary "$SWEEP/model.path-${m}__samples.windows-${convention}__corpus.split-$split/store.h5" > "$OUT/$convention/summary_$m.txt"
  done
done
# The two conventions drawn together, for the trained model and its init.
stores=()
for m in brown-bert brown-bert-init; do
  for c in "sentences__corpus.split-heldout" "documents__corpus.split-all"; do stores+=("$SWEEP/model.path-${m}__samples.windows-$c/store.h5"); done
done
"$CTXSIM" compare "${stores[@]}" --labels trained/sentences,trained/documents,init/sentences,init/documents --out "$OUT/conventions" \
  --title "Learned vs random: the two window conventions" --note "$(cat "$OUT/conventions.txt")"
echo "wrote $OUT/{sentences,documents,conventions}/compare.html, figures, summaries, $OUT/numbers.md and $OUT/conventions.txt"
