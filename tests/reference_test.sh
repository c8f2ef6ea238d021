#!/usr/bin/env bash
# ctxsim against Hugging Face's transformers and tokenizers themselves (the project venv, .venv,
# which scripts/setup.sh makes from scripts/requirements.txt): reference_test.sh CTXSIM CASE.
#   families    every family's per-head context vectors and attention maps, float64, <= 1e-10
#   minilm      the real all-MiniLM-L6-v2 on Brown windows and hostile strings, float32 <= 1e-4
#   tokenizers  ctxsim tokenize = the tokenizers library on 12,000 lines, for each tokenizer
#   gguf        GGUF files of every type ctxsim dequantises = the gguf package's, the real SmolLM2 Q4_1 =
#               transformers' GGUF loading
#   peer        the benchmark's transformers peer (scripts/torch_pipeline.py --transformers --minimal:
#               transformers' forward with hooks) counts what a float64 store holds, exactly
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
  peer)
    [ -f data/models/all-MiniLM-L6-v2/model.safetensors ] || fail "data/models/all-MiniLM-L6-v2 is missing: scripts/setup.sh fetches it"
    "$CTXSIM" run configs/default.yaml model.dtype=float64 samples.num_samples=24 runtime.unit_size=10 runtime.batch_size=5 \
      statistics.examples=[] output.report=false output.dir="$TMP/s" > /dev/null 2> "$TMP/err" || fail "run: $(cat "$TMP/err")"
    "$PY" scripts/torch_pipeline.py --transformers --minimal --store "$TMP/s/store.h5" --dtype float64 --batch 5 --check > "$TMP/out" 2>&1 \
      || fail "the transformers peer's counts differ from the store's: $(cat "$TMP/out")"
    grep -q "^check: all equal" "$TMP/out" || fail "no verdict: $(cat "$TMP/out")"
    [ "$(grep -c ': equal$' "$TMP/out")" -eq 8 ] || fail "expected 8 datasets compared: $(cat "$TMP/out")"
    # A store changed in one count must fail the check (the check can fail).
    /usr/bin/python3 - "$TMP/s/store.h5" <<'PY' || fail "editing the store"
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f["stats/top_fraction=0.01/same_sentence"][2, 3] += 1
PY
    "$PY" scripts/torch_pipeline.py --transformers --minimal --store "$TMP/s/store.h5" --dtype float64 --batch 5 --check > "$TMP/out" 2>&1 \
      && fail "an edited store passed the peer's check"
    grep -q "same_sentence: 1 of" "$TMP/out" || fail "the edit was not named: $(cat "$TMP/out")"
    ;;
  tokenizers)
    /usr/bin/python3 tests/bpe/lines.py data/brown 12000 > "$TMP/lines.txt" || fail "making the lines"
    "$PY" tests/hf_reference.py tokenizers "$CTXSIM" "$TMP/lines.txt" "$TMP" ;;
  *) fail "unknown case '$CASE'" ;;
esac
