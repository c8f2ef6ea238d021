#!/usr/bin/env bash
# `ctxsim prune` (SPEC §8) through its command line, run by ctest: prune_test.sh CTXSIM CASE.
#   invariants   the curves at 0% are the full model, each head's ablation is the curve that removes
#                it alone, the random orders are SPEC's Fisher-Yates, summary and report, the results'
#                digest (label cli)
#   ranks_resume the same store bytes on 1, 2 and 3 ranks, and after a SIGKILL and a resume (mpi)
#   families     DistilBERT, RoBERTa (masked-LM) and GPT-2 (next-token) prune (cli)
#   bad_input    a model without its language-model head, a vocabulary without the mask token, a
#                score store that does not fit: one error each, nothing written (cli)
set -uo pipefail
CTXSIM=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BG=""
. "$(dirname "$0")/kill_job.sh"
cleanup() { [ -n "$BG" ] && kill_job "$BG"; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
MPI="mpiexec --bind-to none"
VOCAB=data/vocab/bert-base-uncased.txt

# A random BertForMaskedLM of 2 layers x 2 heads: 10% of its 4 heads removes none, 20% one head,
# so that the 20% point of an order is that order's first head alone.
"$CTXSIM" init-model --preset bert-tiny --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 64 --mlm --seed 3 --vocab "$VOCAB" \
  --out "$TMP/m" > /dev/null || fail "init-model --mlm"
ARGS=(configs/prune/brown.yaml model.path="$TMP/m" model.dtype=float64 samples.seq_len=48 samples.num_samples=30 runtime.unit_size=4
      runtime.batch_size=3 prune.random_seeds=3)
prune() {  # prune NP OUT [overrides…]
  local np=$1 out=$2; shift 2
  timeout 300 $MPI -n "$np" "$CTXSIM" prune "${ARGS[@]}" output.dir="$out" "$@" > "$out.log" 2>&1
}

case "$CASE" in
  invariants)
    prune 1 "$TMP/a" || fail "prune: $(tail -3 "$TMP/a.log")"
    contains "$(cat "$TMP/a.log")" "pass 2 of 2"
    contains "$(cat "$TMP/a.log")" "ctxsim summary of $TMP/a/store.h5 (prune"
    /usr/bin/python3 - "$TMP/a/store.h5" > "$TMP/py" 2>&1 <<'PY' || fail "store: $(cat "$TMP/py")"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
p, u = f["prune"], f["prune/units"]
assert f.attrs["kind"] == b"prune" and f.attrs["complete"] == 1
orders = p.attrs["unit_orders"].decode().split("\n")
curves = p.attrs["orders"].decode().split("\n")
assert orders == ["importance", "ablation", "entropy", "random:1", "random:2", "random:3"], orders
assert curves == ["importance", "ablation", "entropy", "random"], curves
L, H = p["importance"].shape
assert (L, H) == (2, 2)
P = u["predicted"][...].sum()
full = u["loss"][...].sum() / P
assert abs(f.attrs["full_loss"] - full) <= 1e-12 * full
# The curve at 0% removed is the full model, in every order and every unit.
assert (u["curve_loss"][:, :, 0] == u["loss"][...][:, None]).all(), "0% is not the full model"
assert (u["curve_correct"][:, :, 0] == u["correct"][...][:, None]).all()
# At 20% (round(0.8) = 1 head) each order removes only its first head: that head's ablation, unit by unit.
heads = p["order_heads"][...]
abl, ablc = u["ablation_loss"][...].reshape(len(u["loss"]), L * H), u["ablation_correct"][...].reshape(len(u["loss"]), L * H)
for o in range(len(orders)):
    k = heads[o, 0]
    assert (u["curve_loss"][:, o, 2] == abl[:, k]).all(), (orders[o], k)
    assert (u["curve_correct"][:, o, 2] == ablc[:, k]).all()
    assert (u["curve_loss"][:, o, 1] == u["loss"][...]).all(), "10% of 4 heads removes none"
# The sums are the unit rows' in unit order; the results follow SPEC §8.
imp = u["importance"][...].sum(0)
assert np.array_equal(p["importance"][...], imp)
norm = np.sqrt((imp ** 2).sum(1, keepdims=True))
assert np.allclose(p["importance_normalised"][...], imp / norm, rtol=1e-15, atol=0)
assert np.allclose(p["ablation_loss"][...], abl.sum(0).reshape(L, H) / P - full, rtol=0, atol=1e-12 * full)
assert list(heads[0]) == sorted(range(L * H), key=lambda k: (imp.reshape(-1)[k], k)), "importance order"
assert list(heads[1]) == sorted(range(L * H), key=lambda k: (p["ablation_loss"][...].reshape(-1)[k], k)), "ablation order"
ent = p["entropy"][...].reshape(-1)
assert list(heads[2]) == sorted(range(L * H), key=lambda k: (-ent[k], k)), "entropy order"
assert ((0 < ent) & (ent <= np.log(48))).all()
# Random orders: SPEC §1's Fisher-Yates driven by SplitMix64(seed).
M = 2 ** 64
def splitmix(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) % M
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % M
        yield z ^ (z >> 31)
for r in (1, 2, 3):
    a, rng = list(range(L * H)), splitmix(r)
    for i in range(L * H - 1, 0, -1):
        j = next(rng) % (i + 1)
        a[i], a[j] = a[j], a[i]
    assert list(heads[orders.index(f"random:{r}")]) == a, r
ca = p["curve_accuracy"][...]
assert np.allclose(ca[3], p["curve_accuracy_random"][...].mean(0), rtol=1e-15, atol=0)
assert ((0 <= ca) & (ca <= 1)).all()
print("store ok")
PY
    grep -q "<svg" "$TMP/a/figures/prune_curves.svg" || fail "no curves figure"
    [ -s "$TMP/a/report.html" ] || fail "no report"
    out=$("$CTXSIM" summary "$TMP/a/store.h5") || fail "summary"
    contains "$out" "accuracy (%) with a fraction of the heads removed"
    contains "$out" "random (mean of 3)"
    # The results carry their digest: status vouches for the intact store, and a changed value is
    # refused by every reader; collect (for run sweeps) says what the store is.
    "$CTXSIM" status "$TMP/a/store.h5" > "$TMP/o" 2> "$TMP/e" || fail "status: $(cat "$TMP/e")"
    [ "$(cat "$TMP/o")" = complete ] || fail "status printed $(cat "$TMP/o")"
    contains "$(cat "$TMP/e")" "pruning store: 2 layers x 2 heads, 4 curves; every check passed"
    mkdir -p "$TMP/changed" && cp "$TMP/a/store.h5" "$TMP/changed/store.h5"
    /usr/bin/python3 -c "import h5py; f = h5py.File('$TMP/changed/store.h5', 'r+'); assert len(f.attrs['results_sha256']) == 64
f['prune/curve_loss'][0, 5] += 0.125; f.close()" || fail "crafting the changed store"
    for cmd in status summary report; do
      "$CTXSIM" $cmd "$TMP/changed/store.h5" > "$TMP/o" 2> "$TMP/e" && fail "$cmd took a changed pruning store"
      contains "$(cat "$TMP/e")" "do not match the SHA-256 written with them (results_sha256)"
    done
    [ ! -e "$TMP/changed/report.html" ] || fail "a report was written from a changed store"
    # Without its digest (as a store written before it), the values themselves are checked: an
    # order that removes a head twice, a negative importance, curves that are not the orders'
    # own, an order ctxsim does not make (issue 46 goal 1).
    for edit in "o = f['prune/order_heads'][...]; o[1, 1] = o[1, 0]; f['prune/order_heads'][...] = o|removes head" \
                "f['prune/importance'][0, 0] = -1.0|/prune/importance holds a negative value" \
                "f['prune'].attrs['orders'] = np.bytes_('importance\nentropy\nablation\nrandom')|does not name the curves of its unit_orders" \
                "f['prune'].attrs['unit_orders'] = np.bytes_(f['prune'].attrs['unit_orders'].replace(b'entropy', b'magic'))|names an order ctxsim does not make: 'magic'"; do
      cp "$TMP/a/store.h5" "$TMP/changed/store.h5"
      /usr/bin/python3 -c "import h5py, numpy as np; f = h5py.File('$TMP/changed/store.h5', 'r+'); del f.attrs['results_sha256']; ${edit%%|*}; f.close()" ||
        fail "crafting: ${edit%%|*}"
      "$CTXSIM" status "$TMP/changed/store.h5" > "$TMP/o" 2> "$TMP/e" && fail "status took a store with ${edit%%|*}"
      [ "$(cat "$TMP/o")" != complete ] || fail "status said complete for ${edit%%|*}"
      contains "$(cat "$TMP/e")" "${edit#*|}"
    done
    "$CTXSIM" collect "$TMP/changed" > "$TMP/o" 2> "$TMP/e" && fail "collect took a pruning store"
    contains "$(cat "$TMP/e")" "is a pruning store (ctxsim prune); collect gathers the run stores of a sweep"
    # Rerunning a complete job answers from its store, also from the config.yaml written beside it
    # (which spells out prune.score's default without prune.scores_from).
    prune 1 "$TMP/a" || fail "rerun"
    contains "$(cat "$TMP/a.log")" "is already complete for this config"
    "$CTXSIM" prune "$TMP/a/config.yaml" > "$TMP/a2.log" 2>&1 || fail "prune of its own config.yaml: $(tail -2 "$TMP/a2.log")"
    contains "$(cat "$TMP/a2.log")" "is already complete for this config"
    # An interrupted store of an older schema (before schema 6's datasets) starts over.
    cp -r "$TMP/a" "$TMP/old"
    /usr/bin/python3 -c "import h5py; f = h5py.File('$TMP/old/store.h5', 'r+'); f.attrs['complete'] = 0; f.attrs['schema_version'] = 5" ||
      fail "making an old interrupted store"
    prune 1 "$TMP/old" output.report=false || fail "over an old interrupted store: $(tail -3 "$TMP/old.log")"
    contains "$(cat "$TMP/old.log")" "was started by an older ctxsim (store schema 5, this one writes 6): starting it over"
    /usr/bin/python3 -c "import h5py; f = h5py.File('$TMP/old/store.h5', 'r'); assert f.attrs['complete'] == 1 and f.attrs['schema_version'] == 6" ||
      fail "the old store was not remade"
    # Several ctxsim scores of a run store, an order each: the effective rank lowest and highest
    # first (SPEC §9), their values in /prune/score [S, L, H], a Spearman line and figures each.
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" model.dtype=float64 samples.seq_len=48 samples.num_samples=30 \
      statistics.examples=[] output.report=false output.dir="$TMP/run" > /dev/null 2>&1 || fail "run for the scores"
    prune 1 "$TMP/s" prune.scores_from="$TMP/run/store.h5" 'prune.score=[noise, effective_rank, effective_rank_high]' ||
      fail "prune with three scores: $(tail -3 "$TMP/s.log")"
    /usr/bin/python3 - "$TMP/s/store.h5" "$TMP/run/store.h5" > "$TMP/py" 2>&1 <<'PY' || fail "scores: $(cat "$TMP/py")"
import sys, h5py, numpy as np
p, r = h5py.File(sys.argv[1], "r")["prune"], h5py.File(sys.argv[2], "r")["stats/top_fraction=0.01"]
orders = p.attrs["unit_orders"].decode().split("\n")
assert orders[3:6] == ["score:noise", "score:effective_rank", "score:effective_rank_high"], orders
assert [x.decode() for x in p["ctxsim_score"][...]] == ["noise", "effective_rank", "effective_rank_high"]
score = p["score"][...]
rank = r["effective_rank"][...] / 2.0 ** 32 / r["effective_rank_samples"][...]
assert score.shape == (3, 2, 2) and np.allclose(score[1], rank, rtol=1e-15, atol=0) and np.array_equal(score[1], score[2])
heads = p["order_heads"][...]
v = rank.reshape(-1)
assert list(heads[4]) == sorted(range(4), key=lambda k: (v[k], k)), "effective_rank: lowest first"
assert list(heads[5]) == sorted(range(4), key=lambda k: (-v[k], k)), "effective_rank_high: highest first"
print("scores ok")
PY
    # scripts/prune_scores.py gives every statistic of the run store the rho `ctxsim summary` gives
    # the ordered scores: the same values for those, from an independent reading of both stores.
    out=$("$CTXSIM" summary "$TMP/s/store.h5") || fail "summary of three scores"
    py=$(/usr/bin/python3 scripts/prune_scores.py "$TMP/s/store.h5" "$TMP/run/store.h5") || fail "prune_scores.py: $py"
    from_summary() { grep -E -- "^  $1 *[-+]?[0-9]" <<< "$out" | grep -oE -- '-?[0-9]+\.[0-9]+$'; }
    from_py() { grep -F -- "$1 " <<< "$py" | awk '{print $(NF-'"$2"')}' | sed 's/^+//'; }
    for pair in "score noise|noise share|1" "score effective_rank|effective rank|1" "ablation loss|(loss rise itself)|0"; do
      IFS='|' read -r ours theirs column <<< "$pair"
      a=$(from_summary "$ours") b=$(from_py "$theirs" "$column")
      [ -n "$a" ] && [ "$a" = "$b" ] || fail "rho of $ours: ctxsim summary '$a', prune_scores.py '$b'"
    done
    contains "$py" "first-token attention"
    # Its curve table, from the units' sums, gives each order's loss and accuracy at 50% removed,
    # each with its distance from the random orders in their sd, as the summary does from the
    # store's curves (the loss spreads even on a random model; the accuracy may not).
    contains "$py" "curves at 50% of the heads removed (every window"
    for order in importance ablation entropy score:noise score:effective_rank score:effective_rank_high "random orders"; do
      a=$(grep -E -- "^  $order +[0-9]" <<< "$out" | awk -v n="$(wc -w <<< "$order")" '{print $(n+1), $(n+2), $(n+3), $(n+4)}')
      b=$(grep -E -- "^$order +[0-9]" <<< "$py" | awk -v n="$(wc -w <<< "$order")" '{print $(n+1), $(n+2), $(n+3), $(n+4)}')
      [ -n "$a" ] && [ "$a" = "$b" ] || fail "loss, accuracy and their sd of $order at 50%: ctxsim summary '$a', prune_scores.py '$b'"
      [ "$order" = "random orders" ] || grep -qE -- "^$order +[0-9.]+ +[-+][0-9]" <<< "$py" || fail "no spread in the loss at 50%: $py"
    done
    # The scores' contents are part of what the store must match: the same run store path over
    # another run of the model (other samples, other scores) is other inputs, never "complete".
    prune 1 "$TMP/s" prune.scores_from="$TMP/run/store.h5" 'prune.score=[noise, effective_rank, effective_rank_high]' ||
      fail "rerun with three scores"
    contains "$(cat "$TMP/s.log")" "is already complete for this config"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" model.dtype=float64 samples.seq_len=48 samples.num_samples=20 \
      statistics.examples=[] output.report=false output.dir="$TMP/run2" > /dev/null 2>&1 || fail "second run for the scores"
    cp "$TMP/run2/store.h5" "$TMP/run/store.h5"
    before=$(sha256sum < "$TMP/s/store.h5")
    prune 1 "$TMP/s" prune.scores_from="$TMP/run/store.h5" 'prune.score=[noise, effective_rank, effective_rank_high]' &&
      fail "a replaced score store was taken"
    contains "$(cat "$TMP/s.log")" "was made from other inputs: the scores of prune.scores_from ($TMP/run/store.h5"
    [ "$before" = "$(sha256sum < "$TMP/s/store.h5")" ] || fail "a refused prune changed the store"
    out=$("$CTXSIM" summary "$TMP/s/store.h5") || fail "summary of three scores"
    contains "$out" "score effective_rank_high"
    for stem in prune_score prune_score_effective_rank prune_importance_vs_score_effective_rank_high; do
      [ -s "$TMP/s/figures/$stem.svg" ] || fail "no $stem figure"
    done
    # The attention sink as an order (prune.score=first_token_mass, SPEC §8): the most first.
    prune 1 "$TMP/sink" prune.scores_from="$TMP/run2/store.h5" prune.score=first_token_mass output.report=false ||
      fail "prune by first_token_mass: $(tail -3 "$TMP/sink.log")"
    /usr/bin/python3 - "$TMP/sink/store.h5" "$TMP/run2/store.h5" > "$TMP/py" 2>&1 <<'PY' || fail "first_token_mass: $(cat "$TMP/py")"
import sys, h5py
p, r = h5py.File(sys.argv[1], "r")["prune"], h5py.File(sys.argv[2], "r")["stats/top_fraction=0.01"]
v = r["first_token_mass"][...].reshape(-1).astype(float)
assert v.min() > 0 and len(set(v)) == len(v), v
assert [x.decode() for x in p["ctxsim_score"][...]] == ["first_token_mass"]
assert list(p["order_heads"][3]) == sorted(range(4), key=lambda k: (-v[k], k)), "first_token_mass: the most first"
PY
    ;;
  families)
    # Every family with a language-model head prunes (SPEC §8): DistilBERT and RoBERTa with their
    # masked-LM heads, GPT-2 with the next-token objective, whose predicted positions are every
    # valid one but the last of each sample.
    "$CTXSIM" init-model --family distilbert --preset bert-tiny --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 64 --seed 3 \
      --vocab "$VOCAB" --out "$TMP/distilbert" > /dev/null || fail "init-model distilbert"
    for family in roberta gpt2; do
      "$CTXSIM" init-model --family "$family" --preset "$family-tiny" --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 66 --mlm \
        --seed 3 --vocab data/vocab/gpt2 --out "$TMP/$family" > "$TMP/init.log" || fail "init-model --mlm $family"
      contains "$(cat "$TMP/init.log")" "layout ($( [ $family = gpt2 ] && echo GPT2LMHeadModel || echo RobertaForMaskedLM))"
    done
    for family in distilbert roberta gpt2; do
      prune 1 "$TMP/p-$family" model.path="$TMP/$family" samples.num_samples=12 output.report=false ||
        fail "prune $family: $(tail -3 "$TMP/p-$family.log")"
      # The run of the same config draws the same held-out windows: its /samples/n_valid says
      # which positions the objective predicts.
      "$CTXSIM" run "${ARGS[@]}" model.path="$TMP/$family" samples.num_samples=12 output.report=false \
        statistics.examples=[] output.dir="$TMP/r-$family" > "$TMP/r.log" 2>&1 || fail "run $family: $(tail -3 "$TMP/r.log")"
      /usr/bin/python3 - "$TMP/p-$family/store.h5" "$TMP/r-$family/store.h5" "$family" > "$TMP/py" 2>&1 <<'PY' ||
import sys, h5py, numpy as np
f, run, family = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), sys.argv[3]
assert f.attrs["complete"] == 1 and f.attrs["model_family"].decode() == family
n_valid = run["samples/n_valid"][...].astype(np.int64)
assert len(n_valid) == 12
predicted = int(f["prune/units/predicted"][...].sum())
ca = f["prune/curve_accuracy"][...]
assert np.isfinite(f["prune/curve_loss"][...]).all() and ((0 <= ca) & (ca <= 1)).all()
assert (f["prune/importance"][...] > 0).all(), "every head of a random model moves its loss a little"
if family == "gpt2":  # next-token: every valid position but the last of each sample
    assert f.attrs["causal"] == 1 and predicted == int((n_valid - 1).sum()), (predicted, n_valid)
else:  # masked: about 15% of the non-special positions, at least one a sample
    assert f.attrs["causal"] == 0 and 12 <= predicted < int(0.3 * n_valid.sum()), (predicted, n_valid.sum())
print(f"{family}: {predicted} predicted positions of {int(n_valid.sum())} valid, full loss {f.attrs['full_loss']:.3f}")
PY
        fail "$family store: $(cat "$TMP/py")"
      cat "$TMP/py"
    done
    out=$("$CTXSIM" summary "$TMP/p-gpt2/store.h5") || fail "summary gpt2"
    contains "$out" "accuracy (%) with a fraction of the heads removed"
    ;;
  ranks_resume)
    for np in 1 2 3; do prune "$np" "$TMP/r$np" output.report=false || fail "prune on $np ranks: $(tail -3 "$TMP/r$np.log")"; done
    for np in 2 3; do
      /usr/bin/python3 "$HERE/compare_stores.py" --bytes "$TMP/r1/store.h5" "$TMP/r$np/store.h5" || fail "1 and $np ranks differ"
    done
    CTXSIM_UNIT_DELAY_MS=300 setsid $MPI -n 2 "$CTXSIM" prune "${ARGS[@]}" output.dir="$TMP/k" output.report=false > "$TMP/k1.log" 2>&1 &
    BG=$!
    for _ in $(seq 1 600); do
      s=$("$CTXSIM" status "$TMP/k/store.h5" 2>/dev/null)
      n=$(sed -n 's/^units done: \([0-9]*\) of.*/\1/p' <<< "$s")
      [ -n "$n" ] && [ "$n" -ge 10 ] && break
      [[ $s == complete* ]] && fail "finished before it could be interrupted"
      sleep 0.1
    done
    kill_job "$BG"; BG=""
    prune 3 "$TMP/k" output.report=false || fail "resume: $(tail -3 "$TMP/k.log")"
    contains "$(cat "$TMP/k.log")" "resuming"
    /usr/bin/python3 "$HERE/compare_stores.py" --bytes "$TMP/r1/store.h5" "$TMP/k/store.h5" || fail "the resumed store differs"
    [ ! -e "$TMP/k/store.h5.progress" ] || fail "resume state left behind"
    ;;
  bad_input)
    one_error() {  # one_error EXPECTED OUT [overrides…]: exit 1, one error line, no store
      local expect=$1 out=$2; shift 2
      "$CTXSIM" prune "${ARGS[@]}" output.dir="$out" "$@" > "$TMP/stdout" 2> "$TMP/stderr" && fail "accepted: $*"
      [ "$(grep -c '^ctxsim: error: ' "$TMP/stderr")" -eq 1 ] || fail "not one error line: $(cat "$TMP/stderr")"
      contains "$(cat "$TMP/stderr")" "$expect"
      [ ! -e "$out/store.h5" ] || fail "a refused job left $out/store.h5"
    }
    "$CTXSIM" init-model --preset bert-tiny --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 64 --seed 3 --vocab "$VOCAB" \
      --out "$TMP/bare" > /dev/null || fail "init-model"
    one_error "has no BERT language-model head (cls.predictions.bias is missing): the masked-LM loss needs one" "$TMP/o1" \
      model.path="$TMP/bare"
    "$CTXSIM" init-model --family distilbert --preset bert-tiny --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 64 --seed 3 \
      --vocab "$VOCAB" --out "$TMP/distil" > /dev/null || fail "init-model distilbert"
    # A RoBERTa without its lm_head, and a vocabulary without the family's mask token.
    "$CTXSIM" init-model --family roberta --preset roberta-tiny --positions 66 --seed 3 --vocab data/vocab/gpt2 --out "$TMP/rob" > /dev/null ||
      fail "init-model roberta"
    one_error "has no RoBERTa language-model head (lm_head.bias is missing)" "$TMP/o2" model.path="$TMP/rob"
    head -n 103 "$VOCAB" | grep -v MASK > "$TMP/nomask.txt"
    one_error "has no [MASK] token, which the masked-LM loss needs" "$TMP/o2" model.vocab="$TMP/nomask.txt"
    one_error "prune.score: expected one of noise, anchor_share, same_sentence_lift, repetition_lift, effective_rank, effective_rank_high, first_token_mass, got 'quality'" "$TMP/o3" prune.score=quality prune.scores_from=x
    # A score store of another model's shape, and one that is not a run's.
    "$CTXSIM" run configs/default.yaml model.path="$TMP/distil" samples.num_samples=4 samples.seq_len=32 statistics.examples=[] \
      output.report=false output.dir="$TMP/run3" > /dev/null 2>&1 || fail "run"
    "$CTXSIM" init-model --preset bert-tiny --layers 3 --heads 2 --hidden 32 --ffn 64 --positions 64 --seed 3 --vocab "$VOCAB" \
      --out "$TMP/three" > /dev/null || fail "init-model 3 layers"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/three" samples.num_samples=4 samples.seq_len=32 statistics.examples=[] \
      output.report=false output.dir="$TMP/run3" output.overwrite=true > /dev/null 2>&1 || fail "run 3 layers"
    one_error "run3/store.h5 measured 3 layers x 2 heads, and the model has 2 x 2" "$TMP/o4" prune.scores_from="$TMP/run3/store.h5"
    # A store of another model of the same shape (issue 46 goal 1: the weights decide), and a
    # score asked for without a store to take it from.
    "$CTXSIM" init-model --preset bert-tiny --layers 2 --heads 2 --hidden 32 --ffn 64 --positions 64 --mlm --seed 4 --vocab "$VOCAB" \
      --out "$TMP/other" > /dev/null || fail "init-model seed 4"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/other" samples.num_samples=4 samples.seq_len=32 statistics.examples=[] \
      output.report=false output.dir="$TMP/run-other" > /dev/null 2>&1 || fail "run of the other model"
    one_error "run-other/store.h5 measured another model" "$TMP/o5" prune.scores_from="$TMP/run-other/store.h5"
    one_error "prune.score: names scores of prune.scores_from, which is empty" "$TMP/o6" prune.score=effective_rank
    # The masked-LM loader as strict as the encoder's (issue 46 goal 2): legacy gamma/beta names
    # read as weight/bias, an unused I64 position_ids ignored, two tensors for one parameter and a
    # config.json with another layer count refused.
    .venv/bin/python - "$TMP/m" "$TMP" <<'PY' || fail "writing the checkpoint variants"
import json, shutil, sys, numpy as np
from safetensors.numpy import load_file, save_file
src, tmp = sys.argv[1], sys.argv[2]
t = load_file(f"{src}/model.safetensors")
def variant(name, edit):
    d = f"{tmp}/{name}"
    shutil.copytree(src, d)
    tt = dict(t)
    edit(tt, d)
    save_file(tt, f"{d}/model.safetensors", metadata={"format": "pt"})
def legacy(tt, d):
    for k in list(tt):
        for a, b in (("LayerNorm.weight", "LayerNorm.gamma"), ("LayerNorm.bias", "LayerNorm.beta")):
            if k.endswith(a):
                tt[k[: -len(a)] + b] = tt.pop(k)
    tt["bert.embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None]
variant("legacy", legacy)
variant("twice", lambda tt, d: tt.__setitem__("embeddings.LayerNorm.weight", tt["bert.embeddings.LayerNorm.weight"]))
def layers(tt, d):
    c = json.load(open(f"{d}/config.json"))
    c["num_hidden_layers"] = 1
    json.dump(c, open(f"{d}/config.json", "w"))
variant("layers", layers)
PY
    prune 1 "$TMP/p-legacy" model.path="$TMP/legacy" prune.random_seeds=1 output.report=false || fail "legacy names: $(tail -3 "$TMP/p-legacy.log")"
    prune 1 "$TMP/p-m" prune.random_seeds=1 output.report=false || fail "the original: $(tail -3 "$TMP/p-m.log")"
    /usr/bin/python3 -c "import h5py, sys; a, b = (h5py.File(p, 'r').attrs['full_loss'] for p in sys.argv[1:]); assert a == b, (a, b)" \
      "$TMP/p-legacy/store.h5" "$TMP/p-m/store.h5" || fail "gamma/beta read as another model"
    one_error "holds two tensors for the parameter bert.embeddings.LayerNorm.weight" "$TMP/o7" model.path="$TMP/twice"
    one_error "layers/config.json: num_hidden_layers: declares 1 layer(s), but" "$TMP/o8" model.path="$TMP/layers"
    # Issue 35 goal 1: a prune over another job's store, or over another config's, is refused and
    # leaves it as it was; output.overwrite=true replaces it.
    before=$(sha256sum < "$TMP/run3/store.h5")
    "$CTXSIM" prune "${ARGS[@]}" output.dir="$TMP/run3" > /dev/null 2> "$TMP/err" && fail "prune over a run's store"
    contains "$(cat "$TMP/err")" "holds the store of 'ctxsim run', and this is 'ctxsim prune'"
    [ "$before" = "$(sha256sum < "$TMP/run3/store.h5")" ] || fail "a refused prune changed the run's store"
    "$CTXSIM" prune "${ARGS[@]}" samples.num_samples=8 prune.random_seeds=1 output.dir="$TMP/p8" > /dev/null 2>&1 || fail "prune p8"
    before=$(sha256sum < "$TMP/p8/store.h5")
    "$CTXSIM" prune "${ARGS[@]}" samples.num_samples=12 prune.random_seeds=1 output.dir="$TMP/p8" > /dev/null 2> "$TMP/err" \
      && fail "prune over another config's store"
    contains "$(cat "$TMP/err")" "holds a run with a different config: samples.num_samples: 8 → 12"
    [ "$before" = "$(sha256sum < "$TMP/p8/store.h5")" ] || fail "a refused prune changed the store"
    "$CTXSIM" prune "${ARGS[@]}" samples.num_samples=12 prune.random_seeds=1 output.dir="$TMP/p8" output.overwrite=true > /dev/null 2>&1 \
      || fail "output.overwrite=true"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
