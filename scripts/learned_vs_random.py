#!/usr/bin/python3
"""The numbers of docs/FINDINGS.md from the stores of configs/sweeps/learned_vs_random.yaml (run by
scripts/learned_vs_random.sh): learned_vs_random.py SWEEP_DIR OUT_DIR writes OUT_DIR/numbers.md and
OUT_DIR/conventions.txt (where the two window conventions disagree)."""
import sys, h5py, numpy as np

def measure(path):
    """One store's numbers (rule top_fraction=0.01): per layer (and head) arrays, the chance
    values, and the attention a uniform map puts on each separator. tests/learned_test.sh uses it."""
    f = h5py.File(path, "r"); g = f["stats/top_fraction=0.01"]; b = f["stats/baseline"]
    L, H = g["high_pairs"].shape; T = b["distance_all"].shape[0]
    pairs = g["high_pairs"][...].astype(float)
    d = np.arange(T)
    hist = g["distance_hist"][...].astype(float)                          # [L, H, T]
    all_d = b["distance_all"][...].astype(float)
    samples = float(b["samples"][()])
    ss_chance = b["same_sentence_all"][()] / b["sentence_eligible_all"][()]
    rep_chance = b["same_token_all"][()] / b["valid_pairs"][()]
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
    return dict(
        L=L, H=H,
        mean_d=(hist.sum(1) * d).sum(1) / hist.sum((1, 2)),
        short=hist.sum(1)[:, 1:6].sum(1) / hist.sum((1, 2)),
        long=hist.sum(1)[:, 100:].sum(1) / hist.sum((1, 2)),
        # the window's first and last token ([CLS] ... [SEP] of a full window): how often that
        # one pair is among a head's selected pairs, over the full windows
        ends=hist[:, :, T - 1].sum(1) / (H * (nv == T).sum()),
        short_chance=all_d[1:6].sum() / all_d.sum(), long_chance=all_d[100:].sum() / all_d.sum(),
        chance_mean_d=(all_d * d).sum() / all_d.sum(),
        ss=g["same_sentence"][...].sum(1) / g["sentence_eligible"][...].sum(1), ss_chance=ss_chance,
        rep_lift_layer=(g["same_token"][...].sum(1) / pairs.sum(1)) / rep_chance,
        rep_lift_head=(g["same_token"][...] / pairs) / rep_chance,
        head_mean_d=(hist * d).sum(2) / hist.sum(2),
        distinct=g["distinct_anchors"][...] / samples,
        # each head's top anchor: its share of the samples with pairs, and which token it is
        top_share=(g["anchor_counts"][...].max(2) / g["samples_with_pairs"][...]).mean(1),
        top_tokens=[[vocab[t] for t in g["anchor_counts"][l].argmax(1)] for l in range(L)],
        in_att=g["in_attention"][...].sum(1) / pairs.sum(1),
        in_att_chance=g["high_attention_all"][...].sum(1) / (b["valid_pairs"][()] * H),
        noise=g["noise"][...].sum(1) / pairs.sum(1),
        sep=by_tok.mean(1), sep_tokens=sep_tokens, uniform=uniform)


if __name__ == "__main__":
    sweep, out = sys.argv[1], sys.argv[2]
    sys.stdout = open(f"{out}/numbers.md", "w")
    print("# Learned vs random: the numbers (scripts/learned_vs_random.sh)")
    results = {}
    models = [("trained", "brown-bert"), ("init", "brown-bert-init"), ("seed1", "brown-bert-seed1")]
    def store_path(m, conv):
        split = "heldout" if conv == "sentences" else "all"
        return f"{sweep}/model.path-{m}__samples.windows-{conv}__corpus.split-{split}/store.h5"
    def table(title, header, rows):
        print(f"\n### {title}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for r in rows: print("| " + " | ".join(r) + " |")
    for conv in ["sentences", "documents"]:
        print(f"\n## {conv}")
        data = results[conv] = {}
        for label, m in models:
            data[label] = measure(store_path(m, conv))
        L = data["trained"]["L"]; labels = [l for l, _ in models]
        fmt = lambda v, p=1: f"{v:.{p}f}"
        table("a. distance: mean j - i of the selected pairs, their share at d <= 5 and at d >= 100 (chance: mean "
              + fmt(data['trained']['chance_mean_d']) + ", d <= 5 " + fmt(100 * data['trained']['short_chance']) + "%, d >= 100 "
              + fmt(100 * data['trained']['long_chance']) + "%), and the share of a full window's heads that select its ends, "
              "the pair (0, T - 1) (chance about " + fmt(100 * 0.01) + "%)",
              ["layer"] + [f"{l} mean" for l in labels] + [f"{l} d<=5 %" for l in labels] + [f"{l} d>=100 %" for l in labels]
              + [f"{l} ends %" for l in labels],
              [[str(l)] + [fmt(data[x]["mean_d"][l]) for x in labels] + [fmt(100 * data[x]["short"][l]) for x in labels]
               + [fmt(100 * data[x]["long"][l]) for x in labels] + [fmt(100 * data[x]["ends"][l]) for x in labels] for l in range(L)])
        table("b. same sentence: % of the selected pairs (chance " + fmt(100 * data['trained']['ss_chance']) + "%) and lift",
              ["layer"] + [f"{l} %" for l in labels] + [f"{l} lift" for l in labels],
              [[str(l)] + [fmt(100 * data[x]["ss"][l]) for x in labels] + [fmt(data[x]["ss"][l] / data[x]["ss_chance"], 2) for x in labels] for l in range(L)])
        toks = data["trained"]["sep_tokens"]
        table("c. attention on each separator: mean mass per query row, over the layer's heads (uniform attention: "
              + ", ".join(f"{t} {data['trained']['uniform'][u]:.3f}" for u, t in enumerate(toks)) + ")",
              ["layer"] + [f"{x} {t}" for x in labels for t in toks],
              [[str(l)] + [fmt(data[x]["sep"][l][u], 3) for x in labels for u in range(len(toks))] for l in range(L)])
        table("c'. the same as multiples of each token's uniform share",
              ["layer"] + [f"{x} {t}" for x in labels for t in toks],
              [[str(l)] + [fmt(data[x]["sep"][l][u] / data[x]["uniform"][u], 2) for x in labels for u in range(len(toks))] for l in range(L)])
        table("d. repetition lift (all heads); anchors: distinct among a sample's " + str(data['trained']['H'])
              + " heads (mean), and the share of samples whose anchor is the head's most common one (mean over heads)",
              ["layer"] + [f"{l} rep. lift" for l in labels] + [f"{l} distinct" for l in labels] + [f"{l} top-anchor share %" for l in labels],
              [[str(l)] + [fmt(data[x]["rep_lift_layer"][l], 2) for x in labels] + [fmt(data[x]["distinct"][l], 2) for x in labels]
               + [fmt(100 * data[x]["top_share"][l]) for x in labels] for l in range(L)])
        table("d'. each head's most common anchor token",
              ["layer"] + labels,
              [[str(l)] + [" ".join(f"`{t}`" for t in data[x]["top_tokens"][l]) for x in labels] for l in range(L)])
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

    # Where the two window conventions disagree: per statistic and model, the layers on which they put
    # the value on different sides of its control (chance, or uniform attention) by more than 2% of it,
    # and the largest relative difference between them.
    def relative(d, conv):
        u = np.array(d["uniform"])
        return {
            "mean distance vs chance": d["mean_d"] / d["chance_mean_d"],
            "same-sentence lift": d["ss"] / d["ss_chance"],
            "repetition lift": d["rep_lift_layer"],
            "distinct anchors (of 8 heads) / 8": d["distinct"] / d["H"],
            **{f"attention on {t} vs uniform": d["sep"][:, u_] / u[u_] for u_, t in enumerate(d["sep_tokens"])},
        }
    lines, gaps = [], []
    for x in [l for l, _ in models]:
        s_rel, d_rel = relative(results["sentences"][x], "sentences"), relative(results["documents"][x], "documents")
        for name in s_rel:
            a, b = s_rel[name], d_rel[name]
            control = 0.0 if name.startswith("distinct") else 1.0
            flipped = [str(l) for l in range(len(a)) if control and (a[l] - control) * (b[l] - control) < 0
                       and min(abs(a[l] - control), abs(b[l] - control)) > 0.02]
            gap = np.abs(a - b) / np.maximum(np.abs(a), 1e-12)
            gaps.append((gap.max(), f"{x} {name} layer {gap.argmax()}: {a[gap.argmax()]:.3g} vs {b[gap.argmax()]:.3g}"))
            if flipped or gap.max() > 0.10:
                lines.append(f"{x}: {name}: " + (f"on opposite sides of the control in layer(s) {', '.join(flipped)}; " if flipped else "")
                             + f"differ by up to {100 * gap.max():.0f}%")
    gaps.sort(reverse=True)
    with open(f"{out}/conventions.txt", "w") as f:
        f.write("Sentence windows (held-out documents) vs one window per document: where they disagree (a value on opposite sides of "
                "chance or uniform attention by more than 2%, or more than 10% apart): " + ("; ".join(lines) if lines else "nowhere")
                + ". Largest differences (sentences vs documents, relative to chance or uniform): "
                + "; ".join(f"{text} ({100 * g:.0f}%)" for g, text in gaps[:3]) + ".\n")
