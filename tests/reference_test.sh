#!/usr/bin/env bash
# ctxsim against Hugging Face's transformers and tokenizers themselves (the project venv, .venv,
# which scripts/setup.sh makes from scripts/requirements.txt): reference_test.sh CTXSIM CASE.
#   families    every family's per-head context vectors and attention maps, float64, <= 1e-10
#   minilm      the real all-MiniLM-L6-v2 on Brown windows and hostile strings, float32 <= 1e-4
#   tokenizers  ctxsim tokenize = the tokenizers library on 12,000 lines, for each tokenizer
#   gguf        GGUF files of every type ctxsim dequantises = the gguf package's, the real SmolLM2 Q4_1 =
#               transformers' GGUF loading
# tests/hf_reference.py does the work and says what each compares.
set -uo pipefail
CTXSIM=$1
CASE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [reference]: $*"; exit 1; }
PY=.venv/bin/python
[ -x "$PY" ] || fail "$PY is missing: scripts/setup.sh makes the project venv (transformers, tokenizers)"
case "$CASE" in
  families) "$PY" tests/hf_reference.py families "$CTXSIM" "$TMP" ;;
  minilm)
    [ -f data/models/all-MiniLM-L6-v2/model.safetensors ] || fail "data/models/all-MiniLM-L6-v2 is missing: scripts/setup.sh fetches it"
    "$PY" tests/hf_reference.py minilm "$CTXSIM" data/models/all-MiniLM-L6-v2 data/brown "$TMP" ;;
  gguf)
    SMOLLM=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
    [ -f "$SMOLLM" ] || fail "$SMOLLM is missing: scripts/setup.sh fetches it"
    "$PY" tests/hf_reference.py gguf "$CTXSIM" "$SMOLLM" "$TMP" ;;
  tokenizers)
    /usr/bin/python3 tests/bpe/lines.py data/brown 12000 > "$TMP/lines.txt" || fail "making the lines"
    "$PY" tests/hf_reference.py tokenizers "$CTXSIM" "$TMP/lines.txt" "$TMP" ;;
  *) fail "unknown case '$CASE'" ;;
esac
