#!/usr/bin/env bash
# The random-init control models of configs/sweeps/control.yaml (seeds 1-3; setup makes seed 0).
set -euo pipefail
cd "$(dirname "$0")/.."
for seed in 0 1 2 3; do
  out=data/models/bert-base-seed$seed
  if [ -f "$out/model.safetensors" ]; then echo "[control] $out present"; continue; fi
  build/ctxsim init-model --preset bert-base --seed "$seed" --vocab data/vocab/bert-base-uncased.txt --out "$out"
done
