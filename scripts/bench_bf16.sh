#!/usr/bin/env bash
# bfloat16 against float64: speed, and how many selected pairs stay the same. Runs the same
# samples in float64, float32 and bfloat16 with every sample stored as an example (its selection
# of every rule, layer and head), then compares the selections pair by pair. Needs a CPU with
# avx512_bf16 or amx_bf16 (ctxsim refuses bfloat16 elsewhere) and scripts/setup.sh.
#   bash scripts/bench_bf16.sh                        # 16 Brown samples of configs/default.yaml
#   SAMPLES=32 CONFIG=my.yaml bash scripts/bench_bf16.sh
#   MODEL=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf bash scripts/bench_bf16.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
CONFIG=${CONFIG:-configs/default.yaml}
SAMPLES=${SAMPLES:-16}
MODEL=${MODEL:-}
over=()
[ -n "$MODEL" ] && over=(model.path="$MODEL")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
examples=$(seq -s, 0 $((SAMPLES - 1)))
echo "bench_bf16: $SAMPLES samples of $CONFIG${MODEL:+, model $MODEL}; CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for dt in float64 float32 bfloat16; do
  "$CTXSIM" run "$CONFIG" "${over[@]}" samples.num_samples="$SAMPLES" model.dtype="$dt" "statistics.examples=[$examples]" \
    output.report=false output.dir="$OUT/$dt" > /dev/null 2> "$OUT/$dt.log" || { cat "$OUT/$dt.log"; exit 1; }
done
/usr/bin/python3 - "$OUT" <<'PY'
import sys
import h5py
import numpy as np

out = sys.argv[1]
ref = h5py.File(f"{out}/float64/store.h5", "r")
sel_ref = ref["examples/selected"][...].astype(bool)        # [E, R, L, H, T, T]
anchors_ref = ref["per_sample/anchor_token"][...]            # [R, N, L, H]
rules = [r.decode() if isinstance(r, bytes) else str(r) for r in ref.attrs.get("rules", [])] or ["rule 0"]
for dt in ("float32", "bfloat16"):
    f = h5py.File(f"{out}/{dt}/store.h5", "r")
    sel = f["examples/selected"][...].astype(bool)
    both = np.logical_and(sel, sel_ref).sum(axis=(0, 3, 4, 5))   # [R, L]
    total = sel_ref.sum(axis=(0, 3, 4, 5))
    same_heads = np.all(sel == sel_ref, axis=(4, 5)).mean()
    same_anchor = (f["per_sample/anchor_token"][...] == anchors_ref).mean()
    print(f"{dt:9s} vs float64: {100 * both.sum() / total.sum():5.1f}% of the selected pairs identical; "
          f"{100 * same_heads:5.1f}% of (sample, layer, head) select exactly the same pairs; "
          f"anchor identical in {100 * same_anchor:5.1f}%")
    print("          per layer (% pairs identical): " + " ".join(f"{100 * b / t:.0f}" for b, t in zip(both.sum(0), total.sum(0))))
PY
"$CTXSIM" bench-model --model "${MODEL:-$("$CTXSIM" validate "$CONFIG" | sed -n 's/^ *path: *"\([^"]*\)".*/\1/p' | sed -n 2p)}" \
  --batch 8 --dtype float32,bfloat16 --rules 1 --seconds 3 | tail -3
