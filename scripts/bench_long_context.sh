#!/usr/bin/env bash
# Long contexts (docs/PERFORMANCE.md "Long contexts"): peak memory and time of `ctxsim run` on a
# random model of SmolLM2-135M's shape (30 layers x 9 heads, rotary, causal) at T = 512, 2048 and
# 8192, with the whole attention maps (runtime.attention_rows=8192) and in tiles of 128 query rows
# (runtime.attention_rows=0, the default beyond T=128), each beside `plan --batches 0`'s
# prediction; and that the two stores are the same bytes (at the first T). Brown's documents (about 2,500 tokens) are too short for T=8192, so
# the samples come from documents of 8 consecutive Brown files each (a JSON-lines corpus made here).
# Needs scripts/setup.sh (the random model: scripts/real_models.sh's data/models/...-random).
#   bash scripts/bench_long_context.sh                 # T = 512 2048 8192
#   TS="512 2048" SAMPLES="16 8" bash scripts/bench_long_context.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
MODEL=${MODEL:-data/models/SmolLM2-135M-Instruct-random}
read -r -a ts <<< "${TS:-512 2048 8192}"
read -r -a ns <<< "${SAMPLES:-16 8 2}"
BATCH=${BATCH:-8}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[ -f "$MODEL/config.json" ] || { echo "bench_long_context: no model at $MODEL (scripts/real_models.sh makes it; or set MODEL)" >&2; exit 1; }
/usr/bin/python3 - data/brown "$OUT/long.jsonl" <<'PY'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(src) if len(f) == 4 and f[:2].isalpha() and f[2:].isdigit())
def sentences(path):
    for line in open(path, encoding="utf-8"):
        words = [t.rsplit("/", 1)[0] for t in line.split()]
        words = ['"' if w in ("``", "''") else w for w in words]
        if words:
            yield " ".join(words)
with open(dst, "w") as out:
    for k in range(0, len(files) - 7, 8):
        out.write(json.dumps({"text": " ".join(s for f in files[k:k + 8] for s in sentences(os.path.join(src, f)))}) + "\n")
PY
common=(corpus.format=jsonl corpus.path="$OUT/long.jsonl" corpus.heldout_every=0 corpus.split=all model.path="$MODEL" 'statistics.separators=[".", ","]'
  'statistics.examples=[]' runtime.batch_size="$BATCH" output.report=false)
echo "bench_long_context: $MODEL, batch $BATCH, $(nproc) threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf "%-6s %-8s %-22s %-12s %-12s %-10s %s\n" T samples attention "plan (MB)" "peak (MB)" "wall (s)" "samples/s"
first=1
for idx in "${!ts[@]}"; do
  T=${ts[$idx]} N=${ns[$idx]:-1}
  for path in whole tiled; do
    rows=8192
    [ "$path" = tiled ] && rows=0
    args=("${common[@]}" samples.seq_len="$T" samples.num_samples="$N" runtime.unit_size="$N" runtime.attention_rows="$rows")
    plan=$("$CTXSIM" plan configs/default.yaml "${args[@]}" --batches 0 2>/dev/null | sed -n 's/.*memory \/ rank: *~\([0-9.]*\) \([KMGT]\)B.*/\1 \2/p')
    plan_mb=$(echo "$plan" | awk '{ f = $2 == "G" ? 1024 : $2 == "T" ? 1048576 : $2 == "K" ? 1 / 1024 : 1; printf "%.0f", $1 * f }')
    what=$(if [ "$rows" = 8192 ]; then echo "whole maps"; else echo "tiles (default)"; fi)
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$OUT/rss" "$CTXSIM" run configs/default.yaml "${args[@]}" output.dir="$OUT/$T-$path" > /dev/null 2> "$OUT/log" ||
      { cat "$OUT/log"; exit 1; }
    end=$(date +%s.%N)
    awk -v t="$T" -v n="$N" -v w="$what" -v p="$plan_mb" -v m="$(cat "$OUT/rss")" -v s="$start" -v e="$end" \
      'BEGIN { printf "%-6s %-8s %-22s %-12s %-12.0f %-10.1f %.3f\n", t, n, w, p, m / 1024, e - s, n / (e - s) }'
  done
  if [ "$first" = 1 ]; then
    /usr/bin/python3 tests/compare_stores.py --bytes "$OUT/$T-whole/store.h5" "$OUT/$T-tiled/store.h5" | tail -1 | sed "s/^/  T=$T whole vs tiled: /"
    first=0
  fi
  rm -rf "$OUT/$T-whole" "$OUT/$T-tiled"
done
