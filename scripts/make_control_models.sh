#!/usr/bin/env bash
# The random-init control models: BERT-base seeds 0-3 (configs/sweeps/control.yaml; setup makes seed
# 0) and the trained model's shape with seed 1 (configs/sweeps/learned_vs_random.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
for seed in 0 1 2 3; do
  out=data/models/bert-base-seed$seed
  if [ -f "$out/model.safetensors" ]; then echo "[control] $out present"; continue; fi
  build/ctxsim init-model --preset bert-base --seed "$seed" --vocab data/vocab/bert-base-uncased.txt --out "$out"
done
# The trained model's own shape (configs/pretrain/brown.yaml) with another seed: the spread
# between random models next to models/brown-bert-init (configs/sweeps/learned_vs_random.yaml).
out=data/models/brown-bert-seed1
if [ -f "$out/model.safetensors" ]; then echo "[control] $out present"; else
  build/ctxsim init-model --preset bert-mini --layers 6 --hidden 256 --heads 8 --ffn 1024 --positions 128 --seed 1 \
    --vocab data/vocab/bert-base-uncased.txt --out "$out"
fi
