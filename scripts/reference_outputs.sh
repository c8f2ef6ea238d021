#!/usr/bin/env bash
# Rewrites the committed reference outputs: TRACKED FILES. Every shipped config writes under runs/
# (not tracked) and refuses to replace what it did not write; this script is the one way the
# committed copies change, and it says which files it rewrote (git status).
#   bash scripts/reference_outputs.sh default    # results/default/: summary.txt, figures/, explorer.png (about 1 min)
#   bash scripts/reference_outputs.sh pretrain   # models/brown-bert{,-init}/ and results/pretrain/brown/ (about 80 min)
# The segmentation, learned-vs-random and pruning results are rewritten by
# scripts/segment_benchmark.sh, scripts/learned_vs_random.sh and scripts/prune_findings.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
RUNS=${RUNS:-runs/reference}
what=${1:-}

case "$what" in
  default)
    out=results/default
    run=$RUNS/default
    mkdir -p "$RUNS"
    "$CTXSIM" run configs/default.yaml output.dir="$run" output.overwrite=true > "$RUNS/summary.txt"
    # The summary as a reader of the default job sees it: the store at the config's own path.
    sed "s|$run/store.h5|runs/default/all-MiniLM-L6-v2/store.h5|" "$RUNS/summary.txt" > "$out/summary.txt"
    rm -rf "$out/figures"
    cp -r "$run/figures" "$out/figures"
    node tests/browser/report_test.js "$run/report.html" --screenshot "$out/explorer.png" > /dev/null
    ;;
  pretrain)
    run=$RUNS/pretrain
    "$CTXSIM" pretrain configs/pretrain/brown.yaml output.dir="$run"
    for pair in "$run/model:models/brown-bert" "$run/init:models/brown-bert-init"; do
      from=${pair%%:*} to=${pair#*:}
      mkdir -p "$to"
      cp "$from"/config.json "$from"/model.safetensors "$from"/vocab.txt "$from"/tokenizer_config.json "$to/"
    done
    mkdir -p results/pretrain/brown
    cp "$run"/loss.csv "$run"/loss.svg "$run"/loss.png results/pretrain/brown/
    ;;
  *)
    echo "usage: bash scripts/reference_outputs.sh default|pretrain (rewrites tracked files)" >&2
    exit 2
    ;;
esac
echo "reference outputs rewritten ($what); tracked files changed:"
git status --short -- results models
