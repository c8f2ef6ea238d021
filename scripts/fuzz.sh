#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of user input (tests/fuzz/: the safetensors header, GGUF's header and blocks,
# config.json, the YAML config schema, the Brown, text and JSON-lines readers, the tokenizer, the
# language-model loader's checkpoint checks, and
# the run store's and the segmentation store's readers on edited stores: real stores made here
# with build/ctxsim),
# built with clang's libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
#   bash scripts/fuzz.sh                  # every target, 60 s each (what CI runs)
#   bash scripts/fuzz.sh --seconds 600    # longer
#   bash scripts/fuzz.sh tokenizer brown  # some targets
# Each target first replays its regression inputs (tests/fuzz/regressions/<target>/: inputs that
# once crashed, kept), then fuzzes from seeds made of the real files (configs, data/). Any crash,
# leak, sanitizer report or timeout fails the script; the input is left in build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=60
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(safetensors gguf config_json yaml_config brown text_corpus jsonl tokenizer bpe bpe_files mlm_checkpoint store segment_store prune_store)
say() { echo "[fuzz] $*"; }
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}

command -v clang++ > /dev/null || { echo "[fuzz] clang++ is missing: scripts/setup.sh installs it" >&2; exit 1; }
# Configured every time (quick when nothing changed): a target added since the last run is known.
cmake -S tests/fuzz -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
say "building ${TARGETS[*]} in $BUILD"
cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]/#/fuzz_}" > "$BUILD/build.log" 2>&1 || { tail -40 "$BUILD/build.log"; exit 1; }

# Seeds from the real files, made once into $BUILD/seeds/<target>/.
seeds() {
  local t=$1 dir=$BUILD/seeds/$1
  [ -d "$dir" ] && return
  mkdir -p "$dir"
  case "$t" in
    safetensors)
      /usr/bin/python3 - "$dir" data/models/bert-base-seed0/model.safetensors <<'PY'
import json, struct, sys, os
out, real = sys.argv[1], sys.argv[2]
def write(name, header, data=b""):
    h = json.dumps(header).encode()
    h += b" " * (-(8 + len(h)) % 8)
    open(os.path.join(out, name), "wb").write(struct.pack("<Q", len(h)) + h + data)
write("small", {"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}, bytes(range(22)))
write("empty", {})
if os.path.exists(real):  # the real checkpoint's header and the start of its data
    with open(real, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(0)
        open(os.path.join(out, "bert-base-header"), "wb").write(f.read(8 + n + 256))
PY
      ;;
    gguf)  # the real SmolLM2 file's header (metadata, tensor table) and the start of its data; a small file of every type
      head -c 2000000 data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf > "$dir/smollm2-head" 2> /dev/null
      /usr/bin/python3 - "$dir" <<'PY'
import os, struct, sys
out = sys.argv[1]
def s(t): b = t.encode(); return struct.pack("<Q", len(b)) + b
# GGUF v3: two metadata entries, one tensor per type (F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K, BF16).
types = [(0, 1, 4), (1, 1, 2), (2, 32, 18), (3, 32, 20), (8, 32, 34), (12, 256, 144), (14, 256, 210), (30, 1, 2)]
head = b"GGUF" + struct.pack("<IQQ", 3, len(types), 2)
head += s("general.architecture") + struct.pack("<I", 8) + s("llama")
head += s("general.alignment") + struct.pack("<II", 4, 32)
data, offset = b"", 0
for i, (t, block, size) in enumerate(types):
    head += s(f"t{i}") + struct.pack("<I", 2) + struct.pack("<QQ", 256, 1) + struct.pack("<IQ", t, offset)
    n = 256 // block * size
    data += bytes((7 * j + i) % 251 for j in range(n)) + bytes(-n % 32)
    offset = len(data)
head += bytes(-len(head) % 32)
open(os.path.join(out, "every-type"), "wb").write(head + data)
PY
      ;;
    config_json) cp data/models/bert-base-seed0/config.json "$dir/" 2> /dev/null || echo '{"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}' > "$dir/config.json" ;;
    yaml_config) for f in configs/*.yaml configs/sweeps/*.yaml; do cp "$f" "$dir/$(basename "$(dirname "$f")")_$(basename "$f")"; done ;;
    brown) for f in ca01 cf13 cj42 cr09; do [ -f "data/brown/$f" ] && head -c 16384 "data/brown/$f" > "$dir/$f"; done ;;
    text_corpus|tokenizer|bpe) for f in README.md docs/*.md; do head -c 16384 "$f" > "$dir/$(basename "$f")"; done ;;
    mlm_checkpoint)  # tiny language-model checkpoints of each family with a head: config.json NUL model.safetensors
      local family
      for family in bert roberta gpt2 llama; do
        local m="$BUILD/seeds/mlm-$family" vocab=data/vocab/gpt2
        [ "$family" = bert ] && vocab=data/vocab/bert-base-uncased.txt
        [ "$family" = llama ] && vocab=data/tokenizers/llama3
        build/ctxsim init-model --family "$family" --preset bert-tiny --layers 2 --hidden 8 --heads 2 --ffn 16 --positions 16 --mlm \
          --seed 1 --vocab "$vocab" --out "$m" > /dev/null
        { cat "$m/config.json"; printf '\0'; cat "$m/model.safetensors"; } > "$dir/$family"
        rm -rf "$m"
      done
      ;;
    bpe_files)  # a small vocab.json NUL merges.txt pair and a tokenizer.json from GPT-2's files; a WordPiece tokenizer.json
      /usr/bin/python3 - "$dir" <<'PY'
import json, os, sys
out = sys.argv[1]
vocab = json.load(open("data/vocab/gpt2/vocab.json", encoding="utf-8"))
merges = open("data/vocab/gpt2/merges.txt", encoding="utf-8").read().split("\n")[:301]
small = {t: i for t, i in vocab.items() if i < 256}
for line in merges[1:]:
    if line:
        a, b = line.split(" ")
        for t in (a, b, a + b):
            small.setdefault(t, len(small))
v = json.dumps(small, ensure_ascii=False).encode()
open(os.path.join(out, "pair"), "wb").write(v + b"\0" + "\n".join(merges).encode() + b"\n")
small.setdefault("<mask>", len(small))
tj = {"model": {"type": "BPE", "vocab": small, "merges": merges[1:101]}, "pre_tokenizer": {"type": "ByteLevel"},
      "added_tokens": [{"id": small["<mask>"], "content": "<mask>", "lstrip": True, "rstrip": False}]}
open(os.path.join(out, "tokenizer.json"), "wb").write(json.dumps(tj, ensure_ascii=False).encode())
# A WordPiece tokenizer.json (BERT's layout) over the first 2,000 tokens of bert-base-uncased.
words = open("data/vocab/bert-base-uncased.txt", encoding="utf-8").read().split("\n")[:2000]
wp = {"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": {w: i for i, w in enumerate(words)}},
      "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
      "pre_tokenizer": {"type": "BertPreTokenizer"}}
open(os.path.join(out, "wordpiece.json"), "wb").write(json.dumps(wp, ensure_ascii=False).encode())
# The real models' components (normalizers, pre-tokenizers, post-processors, byte fallback) over a
# small vocabulary of each: its first 600 ids and the merges among them.
for name in ("llama2", "mistral", "llama3", "qwen3"):
    path = f"data/tokenizers/{name}/tokenizer.json"
    if not os.path.exists(path):
        continue
    j = json.load(open(path, encoding="utf-8"))
    keep = {t: i for t, i in j["model"]["vocab"].items() if i < 600}
    merges = []
    for m in j["model"]["merges"][:20000]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in keep and b in keep and a + b in keep:
            merges.append(m)
    j["model"]["vocab"], j["model"]["merges"] = keep, merges[:300]
    j["added_tokens"] = [t for t in j.get("added_tokens", []) if t["id"] < 600]
    open(os.path.join(out, name + ".json"), "wb").write(json.dumps(j, ensure_ascii=False).encode())
PY
      ;;
    store)  # a real store to edit (tests/fuzz/fuzz_store.cpp), and a few edit scripts
      local m=$BUILD/store-template
      rm -rf "$m"
      build/ctxsim init-model --preset bert-tiny --seed 3 --vocab data/vocab/bert-base-uncased.txt --out "$m/model" > /dev/null
      build/ctxsim run configs/default.yaml model.path="$m/model" samples.num_samples=8 statistics.examples=[0,3] \
        'selection=[{top_fraction: 0.05}, {absolute: 0.5}]' output.report=false output.dir="$m" > "$BUILD/store-template.log" 2>&1 \
        || { tail -5 "$BUILD/store-template.log"; rm -rf "$dir"; echo "[fuzz] could not make the store to edit" >&2; exit 1; }
      for i in 1 2 3 4 5 6; do head -c $((i * 9)) /dev/urandom > "$dir/random$i"; done
      printf '\x03\x00\x07\x02\x01\x00' > "$dir/replace_high_pairs"
      ;;
    segment_store)  # a real segmentation store to edit (tests/fuzz/fuzz_job_store.cpp)
      local m=$BUILD/segment-store-template
      rm -rf "$m"
      build/ctxsim segment configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 runtime.threads=1 \
        output.report=false output.dir="$m" > "$BUILD/segment-store-template.log" 2>&1 \
        || { tail -5 "$BUILD/segment-store-template.log"; rm -rf "$dir"; echo "[fuzz] could not make the segmentation store to edit" >&2; exit 1; }
      for i in 1 2 3 4 5 6; do head -c $((i * 11)) /dev/urandom > "$dir/random$i"; done
      printf '\x03\x00\x00\x08\x00\x05\x00\x00' > "$dir/legacy_then_edit"
      ;;
    prune_store)  # a real pruning store to edit (tests/fuzz/fuzz_job_store.cpp)
      local m=$BUILD/prune-store-template
      rm -rf "$m"
      build/ctxsim prune configs/prune/brown.yaml samples.num_samples=10 runtime.unit_size=5 runtime.batch_size=5 prune.random_seeds=1 \
        runtime.threads=1 output.report=false output.dir="$m" > "$BUILD/prune-store-template.log" 2>&1 \
        || { tail -5 "$BUILD/prune-store-template.log"; rm -rf "$dir"; echo "[fuzz] could not make the pruning store to edit" >&2; exit 1; }
      for i in 1 2 3 4 5 6; do head -c $((i * 11)) /dev/urandom > "$dir/random$i"; done
      printf '\x03\x00\x00\x08\x00\x05\x00\x00' > "$dir/legacy_then_edit"
      ;;
    jsonl)
      /usr/bin/python3 - "$dir" <<'PY'
import json, sys, os, glob
lines = [l for f in sorted(glob.glob("docs/*.md")) for l in open(f, encoding="utf-8").read().split("\n\n") if l.strip()]
open(os.path.join(sys.argv[1], "docs.jsonl"), "w").write("".join(json.dumps({"text": l, "id": i}) + "\n" for i, l in enumerate(lines[:40])))
PY
      ;;
  esac
}

mkdir -p "$BUILD/crashes"
failed=()
for t in "${TARGETS[@]}"; do
  bin=$BUILD/fuzz_$t
  seeds "$t"
  export CTXSIM_FUZZ_STORE=$PWD/$BUILD/store-template/store.h5 CTXSIM_FUZZ_SEGMENT_STORE=$PWD/$BUILD/segment-store-template/store.h5 \
    CTXSIM_FUZZ_PRUNE_STORE=$PWD/$BUILD/prune-store-template/store.h5
  regressions=tests/fuzz/regressions/$t
  if compgen -G "$regressions/*" > /dev/null; then
    say "$t: replaying $(ls "$regressions" | wc -l) regression input(s)"
    "$bin" -runs=1 "$regressions"/* > "$BUILD/$t.regressions.log" 2>&1 || { failed+=("$t (regressions)"); tail -30 "$BUILD/$t.regressions.log"; continue; }
  fi
  mkdir -p "$BUILD/corpus/$t"
  say "$t: fuzzing for $SECONDS_EACH s"
  if ! "$bin" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix="$BUILD/crashes/$t-" "$BUILD/corpus/$t" "$BUILD/seeds/$t" > "$BUILD/$t.log" 2>&1; then
    failed+=("$t")
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$BUILD/$t.log" | head -20
  fi
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$BUILD/$t.log" | sed "s/^/[fuzz] $t: /" || true
done
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]} (inputs in $BUILD/crashes/; once fixed, keep them in tests/fuzz/regressions/<target>/)"
  exit 1
fi
say "no crash in ${TARGETS[*]}"
