#!/usr/bin/python3
"""The tables of docs/FINDINGS.md "Real trained models" from the stores scripts/real_models.sh
writes: real_models.py OUT_DIR MODEL=STORE ... writes OUT_DIR/numbers.md. Every number is a layer's
value with its 95% bootstrap interval over the store's work units (SPEC §5.1: 1000 replicates,
units drawn by SplitMix64 seeded 20260514, the percentile interval), computed here from /units
independently of ctxsim's own bootstrap (the same definition, so the same bounds)."""
import sys
import h5py
import numpy as np

M64 = 2 ** 64
REPLICATES, SEED, LEVEL = 1000, 20260514, 0.95
RULE = "top_fraction=0.01"


def weights(units):
    """[REPLICATES, units]: how often each unit is drawn in each replicate (SplitMix64(SEED))."""
    state, w = SEED, np.zeros((REPLICATES, units))
    for r in range(REPLICATES):
        for _ in range(units):
            state = (state + 0x9E3779B97F4A7C15) % M64
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M64
            w[r, (z ^ (z >> 31)) % units] += 1
    return w


class Store:
    """A store's per-unit sums: layer-level values and their intervals."""

    def __init__(self, path):
        f = h5py.File(path, "r")
        self.f, self.u, self.b = f, f[f"units/{RULE}"], f["units/baseline"]
        self.L, self.H = f[f"stats/{RULE}/high_pairs"].shape
        self.U = self.b["samples"].shape[0]
        self.w = np.vstack([np.ones((1, self.U)), weights(self.U)])  # row 0: the store itself
        toks = f["stats/attention"].attrs["separator_tokens"]
        self.separators = (toks.decode() if isinstance(toks, bytes) else toks).split("\n")

    def per_layer(self, name, group=None):
        """[U, L] the unit sums of a per-head dataset, over the layer's heads."""
        d = (group or self.u)[name][...].astype(float)
        return d.reshape(self.U, self.L, -1).sum(2) if d.ndim == 3 else d

    def scalar(self, name):
        return self.b[name][...].astype(float)  # [U]

    def ratio(self, num, den):
        """Value and interval of sum(num) / sum(den) per layer: num, den [U, L] or [U]."""
        n, d = self.w @ num, self.w @ den
        v = n / np.where(d == 0, np.nan, d)
        return v  # [1 + B, L]

    def table(self, v):
        """(value, lo, hi) per layer from ratio()'s rows (a row of [1 + B] per layer)."""
        B = REPLICATES
        rep = np.sort(v[1:], axis=0)
        lo, hi = int(np.floor(B * (1 - LEVEL) / 2)), int(np.ceil(B * (1 + LEVEL) / 2)) - 1
        return v[0], rep[lo], rep[hi]

    def metrics(self):
        hist = self.u["distance_hist"][...].astype(float)  # [U, L, H, T]
        T = hist.shape[-1]
        d = np.arange(T)
        pairs = self.per_layer("high_pairs")
        samples = self.scalar("samples")
        heads_samples = np.repeat(samples[:, None], self.L, 1) * self.H
        out = {
            "d<=5 %": (100 * self.ratio(hist[..., 1:6].sum((2, 3)), pairs)),
            "d>=32 %": (100 * self.ratio(hist[..., 32:].sum((2, 3)), pairs)),
            "mean distance": self.ratio((hist * d).sum((2, 3)), pairs),
            "same-sentence %": 100 * self.ratio(self.per_layer("same_sentence"), self.per_layer("sentence_eligible")),
            "repeat %": 100 * self.ratio(self.per_layer("same_token"), pairs),
            "distinct anchors": self.ratio(self.per_layer("distinct_anchors"), samples[:, None].repeat(self.L, 1)),
            "in-attention %": 100 * self.ratio(self.per_layer("in_attention"), pairs),
            "noise %": 100 * self.ratio(self.per_layer("noise"), pairs),
            "effective rank": self.ratio(self.per_layer("effective_rank") / 2 ** 32, self.per_layer("effective_rank_samples")),
            "first-token attention": self.ratio(self.per_layer("first_token_mass") / 2 ** 32, heads_samples),
        }
        # lifts: the rate over the chance rate of the same resampled units
        ss_chance = self.ratio(self.scalar("same_sentence_all"), self.scalar("sentence_eligible_all"))
        rep_chance = self.ratio(self.scalar("same_token_all"), self.scalar("valid_pairs"))
        out["same-sentence lift"] = out["same-sentence %"] / 100 / ss_chance[:, None]
        out["repetition lift"] = out["repeat %"] / 100 / rep_chance[:, None]
        by_token = self.b["separator_mass_by_token"][...].astype(float) / 2 ** 32  # [U, L, H, S]
        for k, t in enumerate(self.separators):
            out[f"attention on {t}"] = self.ratio(by_token[..., k].sum(2), heads_samples)
        all_d = self.b["distance_all"][...].astype(float)
        self.chance = {
            "d<=5 %": 100 * all_d[:, 1:6].sum() / all_d.sum(), "d>=32 %": 100 * all_d[:, 32:].sum() / all_d.sum(),
            "mean distance": (all_d.sum(0) * d).sum() / all_d.sum(),
            "same-sentence %": 100 * ss_chance[0], "repeat %": 100 * rep_chance[0],
            "same-sentence lift": 1.0, "repetition lift": 1.0,
        }
        return {k: self.table(v) for k, v in out.items()}

    def best_late_repetition_head(self):
        """The head of the last third of the layers with the highest repetition lift, its lift and mean distance."""
        g = self.f[f"stats/{RULE}"]
        b = self.f["stats/baseline"]
        lift = (g["same_token"][...] / g["high_pairs"][...]) / (b["same_token_all"][()] / b["valid_pairs"][()])
        hist = g["distance_hist"][...]
        first = self.L - max(1, self.L // 3)
        l, h = np.unravel_index(np.nanargmax(lift[first:]), lift[first:].shape)
        l += first
        mean_d = (hist[l, h] * np.arange(hist.shape[-1])).sum() / hist[l, h].sum()
        return l, h, lift[l, h], mean_d, np.nanmax(lift)


def cell(t, l, digits):
    v, lo, hi = t
    if not np.isfinite(v[l]):
        return "-"
    return f"{v[l]:.{digits}f} [{lo[l]:.{digits}f}, {hi[l]:.{digits}f}]"


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    models = [(s.split("=", 1)[0], Store(s.split("=", 1)[1])) for s in specs]
    sys.stdout = open(f"{out}/numbers.md", "w")
    print("# Real trained models: the numbers (scripts/real_models.sh)\n")
    print("Each cell: the layer's value and its 95% bootstrap interval over the store's work units (SPEC §5.1).")
    results = {name: s.metrics() for name, s in models}
    rows = [("a. distance", ["d<=5 %", "d>=32 %", "mean distance"], 1),
            ("b. same sentence", ["same-sentence %", "same-sentence lift"], 2),
            ("c. separators and the first position (mean attention mass per query row)",
             sorted({k for r in results.values() for k in r if k.startswith("attention on ")}) + ["first-token attention"], 3),
            ("d. specialisation", ["repetition lift", "distinct anchors"], 2),
            ("attention overlap and noise", ["in-attention %", "noise %"], 1),
            ("effective rank of the heads' outputs (SPEC §9)", ["effective rank"], 2)]
    for title, keys, digits in rows:
        for key in keys:
            have = [(n, s) for n, s in models if key in results[n]]
            if not have:
                continue
            L = max(s.L for _, s in have)
            chance = {n: s.chance.get(key) for n, s in have}
            note = ""
            if any(c is not None for c in chance.values()):
                note = " (chance: " + ", ".join(f"{n} {c:.{digits}f}" for n, c in chance.items() if c is not None) + ")"
            print(f"\n### {title}: {key}{note}\n")
            print("| layer | " + " | ".join(n for n, _ in have) + " |\n|" + "---|" * (len(have) + 1))
            for l in range(L):
                print(f"| {l} | " + " | ".join(cell(results[n][key], l, digits) if l < s.L else "" for n, s in have) + " |")
    print("\n### e. the late head with the highest repetition lift (last third of the layers)\n")
    print("| model | head | repetition lift | mean distance of its pairs | highest lift of any head |\n|---|---|---|---|---|")
    for n, s in models:
        l, h, lift, mean_d, top = s.best_late_repetition_head()
        print(f"| {n} | L{l} H{h} | {lift:.2f} | {mean_d:.1f} | {top:.2f} |")


if __name__ == "__main__":
    main()
