#!/usr/bin/env bash
# Where the forward's time goes (docs/PERFORMANCE.md "The forward against the GEMM rate"):
# `ctxsim bench-model` prints (a) the forward's GF/s beside (g) the rate of its layers' four GEMM
# shapes alone, measured alternately in one process (a/g: the share of the GEMM rate the forward
# reaches) and c/a; `--profile` records five plain forward passes under LibTorch's operator
# profiler, and this sums each operator's self time (its duration less its children's): the share
# of the matrix products (addmm, mm, bmm, baddbmm and their inner addmm_) and of each other operator.
#   bash scripts/profile_forward.sh                                   # BERT-base (random), batch 8
#   MODEL=data/models/SmolLM2-135M-Instruct-random bash scripts/profile_forward.sh
#   CTXSIM_ISA=x86-64-v3 bash scripts/profile_forward.sh              # what an AVX2 node runs
# (the profiler's per-operator cost inflates the small operators' shares, and it records the calling
# thread only, not the attention's tasks on the other threads: the ratios come from
# bench-model's unprofiled rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
BATCH=${BATCH:-8}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
src=(--preset bert-base)
[ -n "${MODEL:-}" ] && src=(--model "$MODEL")
echo "profile_forward: ${MODEL:-bert-base (random)}, batch $BATCH, T=128, $(nproc) threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$CTXSIM" bench-model "${src[@]}" --batch "$BATCH" --dtype float32 --rules 1 --seconds 4 --profile "$OUT/trace.json" | grep -E '^ISA|^dtype|^float32'
/usr/bin/python3 - "$OUT/trace.json" <<'PY'
import collections, json, sys
events = [e for e in json.load(open(sys.argv[1])) if e.get("ph") == "X"]
events.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
self_time = collections.Counter()
stack = []  # (end, name) of the open events of the current thread
tid = None
for e in events:
    if e["tid"] != tid:
        stack, tid = [], e["tid"]
    while stack and stack[-1][0] <= e["ts"]:
        stack.pop()
    if stack:
        self_time[stack[-1][1]] -= e["dur"]
    self_time[e["name"]] += e["dur"]
    stack.append((e["ts"] + e["dur"], e["name"]))
total = sum(self_time.values())
gemm = sum(v for k, v in self_time.items() if k in ("aten::addmm", "aten::addmm_", "aten::mm", "aten::bmm", "aten::baddbmm"))
print(f"operators' self time: {total / 5e3:.1f} ms a pass; matrix products {100 * gemm / total:.1f}%, the rest {100 * (1 - gemm / total):.1f}%:")
for name, v in self_time.most_common(14):
    print(f"  {name:28s} {100 * v / total:5.1f}%")
PY
