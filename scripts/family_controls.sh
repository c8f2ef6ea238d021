#!/usr/bin/env bash
# Random controls of three families on the same Brown text (docs/FINDINGS.md, "Other families"):
# a seeded random BERT-base (bidirectional, WordPiece), RoBERTa-base (bidirectional, byte-level
# BPE) and GPT-2 (causal, byte-level BPE), 500 windows of 128 tokens each, rule top_fraction 0.01.
# What a causal mask alone does to the selected pairs, before any learning. Writes the stores,
# each summary and a compare page under OUT (default runs/family_controls) and prints the table
# the findings quote. Rerunning reuses what is there (stores are resumed or already complete).
#   bash scripts/family_controls.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
OUT=${1:-runs/family_controls}
mkdir -p "$OUT/models"
[ -f data/vocab/gpt2/merges.txt ] || { echo "needs data/vocab/gpt2: run scripts/setup.sh" >&2; exit 1; }
[ -d data/models/bert-base-seed0 ] || { echo "needs data/models/bert-base-seed0: run scripts/setup.sh" >&2; exit 1; }
[ -d "$OUT/models/gpt2" ] || "$CTXSIM" init-model --family gpt2 --preset gpt2 --seed 0 --vocab data/vocab/gpt2 --out "$OUT/models/gpt2"
[ -d "$OUT/models/roberta" ] ||
  "$CTXSIM" init-model --family roberta --preset roberta-base --seed 0 --vocab data/vocab/gpt2 --out "$OUT/models/roberta"
stores=()
for m in bert roberta gpt2; do
  path="$OUT/models/$m"
  [ $m = bert ] && path=data/models/bert-base-seed0
  "$CTXSIM" run configs/default.yaml model.path="$path" samples.num_samples=500 statistics.examples=[0] output.dir="$OUT/$m" \
    > "$OUT/$m.summary.txt"
  stores+=("$OUT/$m/store.h5")
done
"$CTXSIM" compare "${stores[@]}" --out "$OUT/compare" > /dev/null
/usr/bin/python3 - "${stores[@]}" <<'PY'
import sys, h5py, numpy as np
print("| model | layer | pairs d<=5 % | d>=32 % | mean d | same-sentence % (chance) | repeated-token % (chance) |")
print("|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    f = h5py.File(path, "r")
    g, b = f["stats/top_fraction=0.01"], f["stats/baseline"]
    name = f.attrs["model_family"].decode() + (" (causal)" if f.attrs["causal"] else "")
    hist = g["distance_hist"][...].astype(float)  # [L, H, T]
    d = np.arange(hist.shape[2])
    allh = b["distance_all"][...].astype(float)
    chance_ss = b["same_sentence_all"][()] / b["sentence_eligible_all"][()]
    chance_tok = b["same_token_all"][()] / b["valid_pairs"][()]
    L = hist.shape[0]
    rows = [("chance", allh, None, None)]
    for l in sorted({0, L // 2, L - 1}):
        h = hist[l].sum(0)
        ss = g["same_sentence"][l].sum() / g["sentence_eligible"][l].sum()
        tok = g["same_token"][l].sum() / g["high_pairs"][l].sum()
        rows.append((f"{l}", h, ss, tok))
    for label, h, ss, tok in rows:
        n = h.sum()
        cell = lambda x, c: f"{100 * x:.1f} ({100 * c:.1f})" if x is not None else f"({100 * c:.1f})"
        print(f"| {name} | {label} | {100 * h[1:6].sum() / n:.1f} | {100 * h[32:].sum() / n:.1f} | {(h * d).sum() / n:.1f} | "
              f"{cell(ss, chance_ss)} | {cell(tok, chance_tok)} |")
PY
