#!/usr/bin/python3
"""Which of a run store's per-head statistics track what a head is worth? Spearman's rho (ranks,
ties averaged, as `ctxsim prune` computes it) of each head statistic of a run store with the
importance (SPEC §8: sum of |dL/dxi| over the windows) and with the loss rise when the head alone
is removed, from a pruning store of the same model:
    prune_scores.py PRUNE_STORE RUN_STORE [RULE]
RULE is the run store's selection rule (default its first). `ctxsim prune` reports rho only for
the scores it ordered heads by (prune.score); this gives every statistic the store holds, so that
a score worth an order can be found before paying for its curve. A pruning store still running
gives the units of its first pass done so far, and says so.

Then the curves (once any unit of the second pass is done): each order's loss (nats a predicted
token) and accuracy at half the heads removed, each in standard deviations from the random
orders' mean (the 2-sd bar of docs/FINDINGS.md), and its mean loss over the curve; from the units
done so far on a running store (every order over the same windows)."""
import sys
import h5py
import numpy as np


def ranks(x):
    """0-based ranks, ties given their mean rank (as prune::spearman)."""
    order = np.argsort(x, kind="stable")
    r, xs, i = np.empty(len(x)), x[order], 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and xs[j + 1] == xs[i]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    a, b = np.ravel(a).astype(float), np.ravel(b).astype(float)
    keep = np.isfinite(a) & np.isfinite(b)
    ra, rb = ranks(a[keep]), ranks(b[keep])
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def ratio(num, den):
    num, den = np.asarray(num, float), np.asarray(den, float)
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def fail(message):
    sys.exit(f"prune_scores.py: {message}")


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: prune_scores.py PRUNE_STORE RUN_STORE [RULE]")
    prune_path, run_path = sys.argv[1:3]
    try:
        p, r = h5py.File(prune_path, "r"), h5py.File(run_path, "r")
    except OSError as e:
        fail(f"cannot open a store: {e}")
    if "prune" not in p:
        fail(f"{prune_path} is not a pruning store (no /prune): give the store `ctxsim prune` wrote")
    rules = [k for k in r.get("stats", {}) if k not in ("baseline", "attention")]
    if not rules:
        fail(f"{run_path} is not a run store (no /stats/<rule>): give the store `ctxsim run` wrote")
    rule = sys.argv[3] if len(sys.argv) == 4 else rules[0]
    if rule not in rules:
        fail(f"{run_path} has no rule {rule!r}; it has: {', '.join(rules)}")
    s = r[f"stats/{rule}"]
    L, H = s["high_pairs"].shape
    if p["prune/importance"].shape != (L, H):
        fail(f"{prune_path} has {p['prune/importance'].shape} heads, {run_path} {(L, H)}: stores of two models")
    complete = bool(p.attrs.get("complete", 0))
    u = p["prune/units"]
    if complete:
        importance, rise = p["prune/importance"][:], p["prune/ablation_loss"][:] - p.attrs["full_loss"]
        windows = "every window"
    else:  # the first pass's units done so far: their sums (ranks are the same as of their means)
        done = [i for i in range(u["predicted"].shape[0]) if u["predicted"][i] > 0]
        if len(done) < 1:
            fail(f"{prune_path} has no unit of its first pass done yet")
        importance = u["importance"][done].sum(0)
        rise = u["ablation_loss"][done].sum(0) - u["loss"][done].sum()
        total = u["predicted"].shape[0]
        windows = ("the first pass complete, the curves still running" if len(done) == total else
                   f"partial: {len(done)} of {total} units of the first pass")
    pairs = s["high_pairs"][:]
    samples = float(r["stats/baseline/samples"][()])
    distance = s["distance_hist"][:].astype(float)  # [L, H, T]: selected pairs by j - i
    stats = {
        "noise share": ratio(s["noise"][:], pairs),
        "anchor share": ratio(s["anchor_pairs"][:], pairs),
        "same-sentence rate": ratio(s["same_sentence"][:], s["sentence_eligible"][:]),
        "repeated-token rate": ratio(s["same_token"][:], pairs),
        "same-word rate": ratio(s["same_word"][:], pairs),
        "in-attention share": ratio(s["in_attention"][:], pairs),
        "mean distance": ratio((distance * np.arange(distance.shape[2])).sum(2), distance.sum(2)),
        "effective rank": ratio(s["effective_rank"][:], s["effective_rank_samples"][:]),
        "first-token attention": s["first_token_mass"][:] / 2.0 ** 32 / samples,
        "separator attention": s["separator_mass"][:] / 2.0 ** 32 / samples,
    }
    print(f"Spearman's rho over {L} x {H} heads: {run_path} (rule {rule}) against {prune_path} ({windows})")
    print(f"{'statistic':24s} {'importance':>10s} {'loss rise':>10s}")
    for name, v in sorted(stats.items(), key=lambda kv: -abs(spearman(kv[1], importance))):
        print(f"{name:24s} {spearman(v, importance):+10.3f} {spearman(v, rise):+10.3f}")
    print(f"{'(loss rise itself)':24s} {spearman(rise, importance):+10.3f}")
    curves(p)


def curves(p):
    """The curve table from the units' sums: loss and correct predictions by order and fraction."""
    u = p["prune/units"]
    orders = [o.decode() if isinstance(o, bytes) else str(o) for o in u["order"][:]]
    fractions = list(u["fraction"][:])
    loss, correct, predicted = u["curve_loss"][:], u["curve_correct"][:], u["predicted"][:].astype(float)
    done = [i for i in range(loss.shape[0]) if predicted[i] > 0 and np.abs(loss[i]).sum() > 0]
    if not done or 50 not in fractions:
        return
    n = predicted[done].sum()
    mean_loss, accuracy = loss[done].sum(0) / n, correct[done].sum(0) / n  # [orders, fractions]
    half = fractions.index(50)
    rand = [k for k, o in enumerate(orders) if o.startswith("random:")]
    what = "every window" if len(done) == loss.shape[0] else f"partial: {len(done)} of {loss.shape[0]} units"
    print(f"\ncurves at 50% of the heads removed ({what}, {int(n)} predicted tokens): loss (nats a predicted token) and accuracy, "
          f"each with its distance from the {len(rand)} random orders' mean in their sd (-: no spread)")
    print(f"{'order':28s} {'loss':>8s} {'sd':>6s} {'accuracy':>9s} {'sd':>6s} {'mean loss over the curve':>25s}")
    rl, ra = mean_loss[rand, half], 100 * accuracy[rand, half]
    sl, sa = (rl.std(ddof=1), ra.std(ddof=1)) if len(rand) > 1 else (0.0, 0.0)

    def sd(x, mean, spread):
        return f"{(x - mean) / spread:+6.1f}" if spread > 0 else f"{'-':>6s}"

    for k, o in enumerate(orders):
        if k not in rand:
            print(f"{o:28s} {mean_loss[k, half]:8.3f} {sd(mean_loss[k, half], rl.mean(), sl)} {100 * accuracy[k, half]:8.2f}% "
                  f"{sd(100 * accuracy[k, half], ra.mean(), sa)} {mean_loss[k].mean():25.3f}")
    if rand:
        print(f"{'random orders':28s} {rl.mean():8.3f} {'+-' + format(sl, '.3f'):>6s} {ra.mean():8.2f}% {'+-' + format(sa, '.2f'):>6s} "
              f"{mean_loss[rand].mean():25.3f}")

if __name__ == "__main__":
    main()
