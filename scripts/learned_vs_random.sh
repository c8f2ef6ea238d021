#!/usr/bin/env bash
# The study's claims measured on the model trained here, its step-0 init and another random seed
# (docs/FINDINGS.md): runs configs/sweeps/learned_vs_random.yaml (6 runs, a few minutes on 2 cores),
# draws each convention's runs together with `ctxsim compare`, and writes the numbers FINDINGS.md
# quotes into results/learned_vs_random/numbers.md (python3 with h5py reads the stores).
#   bash scripts/learned_vs_random.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
SWEEP=results/sweeps/learned_vs_random
OUT=results/learned_vs_random
[ -f models/brown-bert/model.safetensors ] || { echo "models/brown-bert is missing: ctxsim pretrain configs/pretrain/brown.yaml"; exit 1; }
[ -f data/models/brown-bert-seed1/model.safetensors ] || bash scripts/make_control_models.sh
"$CTXSIM" run configs/sweeps/learned_vs_random.yaml > /dev/null
mkdir -p "$OUT"
for convention in sentences documents; do
  split=$([ $convention = sentences ] && echo heldout || echo all)
  stores=()
  for m in brown-bert brown-bert-init brown-bert-seed1; do stores+=("$SWEEP/model.path=$m,samples.windows=$convention,corpus.split=$split/store.h5"); done
  note="2,000 windows of 128 tokens from the 50 held-out Brown documents (never trained on)"
  [ $convention = documents ] && note="one window per Brown document (500), truncated to 128 tokens: the study group's convention; 450 of the documents were trained on"
  "$CTXSIM" compare "${stores[@]}" --labels trained,init,seed1 --out "$OUT/$convention" \
    --title "Learned vs random: $convention" --note "$note. trained: models/brown-bert; init: its step-0 weights; seed1: a random init of another seed."
  rm -f "$OUT/$convention/figures/"*.svg.tmp
  for m in brown-bert brown-bert-init brown-bert-seed1; do
    "$CTXSIM" summary "$SWEEP/model.path=$m,samples.windows=$convention,corpus.split=$split/store.h5" > "$OUT/$convention/summary_$m.txt"
  done
done
/usr/bin/python3 - "$SWEEP" > "$OUT/numbers.md" <<'PY'
import sys, h5py, numpy as np
sweep = sys.argv[1]
models = [("trained", "brown-bert"), ("init", "brown-bert-init"), ("seed1", "brown-bert-seed1")]
def open_store(m, conv):
    split = "heldout" if conv == "sentences" else "all"
    return h5py.File(f"{sweep}/model.path={m},samples.windows={conv},corpus.split={split}/store.h5", "r")
def table(title, header, rows):
    print(f"\n### {title}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows: print("| " + " | ".join(r) + " |")
for conv in ["sentences", "documents"]:
    print(f"\n## {conv}")
    data = {}
    for label, m in models:
        f = open_store(m, conv); g = f["stats/top_fraction=0.01"]; b = f["stats/baseline"]
        L, H = g["high_pairs"].shape; T = b["distance_all"].shape[0]
        pairs = g["high_pairs"][...].astype(float)
        d = np.arange(T)
        hist = g["distance_hist"][...].astype(float)                          # [L, H, T]
        all_d = b["distance_all"][...].astype(float)
        samples = float(b["samples"][()])
        ss_chance = b["same_sentence_all"][()] / b["sentence_eligible_all"][()]
        rep_chance = b["same_token_all"][()] / b["valid_pairs"][()]
        toks = f["stats/attention"].attrs["separators"]
        sep_tokens = f["stats/attention"].attrs["separator_tokens"]
        sep_tokens = (sep_tokens.decode() if isinstance(sep_tokens, bytes) else sep_tokens).split("\n")
        by_tok = b["separator_mass_by_token"][...].astype(float) / 2**32 / samples   # [L, H, S] mean per sample
        # attention a uniform map would put on each separator: its share of the valid tokens
        ids = f["samples/token_ids"][...]; nv = f["samples/n_valid"][...]
        vocab = f["vocab/text"][...].tobytes().decode().split("\n")
        uniform = []
        for t in sep_tokens:
            tid = vocab.index(t)
            uniform.append(np.mean([(ids[i, :nv[i]] == tid).sum() / nv[i] for i in range(len(nv))]))
        data[label] = dict(
            L=L, H=H,
            mean_d=(hist.sum(1) * d).sum(1) / hist.sum((1, 2)),
            short=hist.sum(1)[:, 1:6].sum(1) / hist.sum((1, 2)),
            long=hist.sum(1)[:, 32:].sum(1) / hist.sum((1, 2)),
            short_chance=all_d[1:6].sum() / all_d.sum(), long_chance=all_d[32:].sum() / all_d.sum(),
            chance_mean_d=(all_d * d).sum() / all_d.sum(),
            ss=g["same_sentence"][...].sum(1) / g["sentence_eligible"][...].sum(1), ss_chance=ss_chance,
            rep_lift_layer=(g["same_token"][...].sum(1) / pairs.sum(1)) / rep_chance,
            rep_lift_head=(g["same_token"][...] / pairs) / rep_chance,
            head_mean_d=(hist * d).sum(2) / hist.sum(2),
            distinct=g["distinct_anchors"][...] / samples,
            in_att=g["in_attention"][...].sum(1) / pairs.sum(1),
            in_att_chance=g["high_attention_all"][...].sum(1) / (b["valid_pairs"][()] * H),
            noise=g["noise"][...].sum(1) / pairs.sum(1),
            sep=by_tok.mean(1), sep_tokens=sep_tokens, uniform=uniform)
    L = data["trained"]["L"]; labels = [l for l, _ in models]
    fmt = lambda v, p=1: f"{v:.{p}f}"
    table("a. distance: mean j - i of the selected pairs, and their share at d <= 5 (chance: mean "
          + fmt(data['trained']['chance_mean_d']) + ", d <= 5 " + fmt(100 * data['trained']['short_chance']) + "%)",
          ["layer"] + [f"{l} mean" for l in labels] + [f"{l} d<=5 %" for l in labels],
          [[str(l)] + [fmt(data[x]["mean_d"][l]) for x in labels] + [fmt(100 * data[x]["short"][l]) for x in labels] for l in range(L)])
    table("b. same sentence: % of the selected pairs (chance " + fmt(100 * data['trained']['ss_chance']) + "%) and lift",
          ["layer"] + [f"{l} %" for l in labels] + [f"{l} lift" for l in labels],
          [[str(l)] + [fmt(100 * data[x]["ss"][l]) for x in labels] + [fmt(data[x]["ss"][l] / data[x]["ss_chance"], 2) for x in labels] for l in range(L)])
    toks = data["trained"]["sep_tokens"]
    table("c. attention on each separator: mean mass per query row, over the layer's heads (uniform attention: "
          + ", ".join(f"{t} {data['trained']['uniform'][u]:.3f}" for u, t in enumerate(toks)) + ")",
          ["layer"] + [f"{x} {t}" for x in labels for t in toks],
          [[str(l)] + [fmt(data[x]["sep"][l][u], 3) for x in labels for u in range(len(toks))] for l in range(L)])
    table("d. repetition lift (all heads) and distinct anchors among the " + str(data['trained']['H']) + " heads of a layer",
          ["layer"] + [f"{l} rep. lift" for l in labels] + [f"{l} distinct" for l in labels],
          [[str(l)] + [fmt(data[x]["rep_lift_layer"][l], 2) for x in labels] + [fmt(data[x]["distinct"][l], 2) for x in labels] for l in range(L)])
    rows = []
    for x in labels:
        r = data[x]["rep_lift_head"]; late = r[L // 2:]
        l, h = np.unravel_index(np.nanargmax(late), late.shape); l += L // 2
        rows.append([x, f"L{l} H{h}", fmt(r[l, h], 2), fmt(data[x]["head_mean_d"][l, h]), fmt(np.nanmax(r[: L // 2]), 2)])
    table("e. the late head (layers " + str(L // 2) + "-" + str(L - 1) + ") with the highest repetition lift",
          ["model", "head", "repetition lift", "mean distance of its pairs", "highest lift in layers 0-" + str(L // 2 - 1)], rows)
    table("attention overlap (selected pairs that are high-attention, % vs chance) and noise (%)",
          ["layer"] + [f"{l} in-attn" for l in labels] + ["chance (trained)"] + [f"{l} noise" for l in labels],
          [[str(l)] + [fmt(100 * data[x]["in_att"][l]) for x in labels] + [fmt(100 * data["trained"]["in_att_chance"][l])]
           + [fmt(100 * data[x]["noise"][l]) for x in labels] for l in range(L)])
PY
echo "wrote $OUT/{sentences,documents}/compare.html, figures, summaries and $OUT/numbers.md"
