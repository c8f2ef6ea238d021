#!/usr/bin/env bash
# End-to-end checks of the ctxsim command line on the real data (run by ctest from the source
# folder): cli_test.sh CTXSIM CASE. Each case asserts exit codes, output and that bad input
# writes nothing.
set -uo pipefail
CTXSIM=$1
CASE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
small_bpe() {  # small_bpe DIR: the smallest byte-level BPE (vocab.json of GPT-2's 256 byte tokens, no merges)
  mkdir -p "$1"
  /usr/bin/python3 - "$1" <<'PY'
import json, os, sys
printable = [b for b in range(256) if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
spell, extra = {}, 0
for b in range(256):
    spell[b] = chr(b) if b in printable else chr(256 + extra)
    extra += b not in printable
json.dump({spell[b]: b for b in range(256)}, open(os.path.join(sys.argv[1], "vocab.json"), "w"), ensure_ascii=False)
open(os.path.join(sys.argv[1], "merges.txt"), "w").write("#version: 0.2\n")
PY
}

case "$CASE" in
  samples_default)
    out=$("$CTXSIM" samples configs/default.yaml --show 3 2>"$TMP/err") || fail "exit $? $(cat "$TMP/err")"
    [ "$(grep -c '^sample [0-9]' <<< "$out")" -eq 3 ] || fail "expected 3 samples: $out"
    contains "$out" "[CLS] | s0: "
    contains "$out" "| [SEP]"
    contains "$out" "documents:           500"
    contains "$out" "sentences:           57340"
    contains "$out" "candidates:          5642 (sentences windows)"  # the sentences of the 50 held-out documents
    contains "$out" "drawn samples:       2000 of 2000 requested (seed 42)"
    grep -qE '^truncated sentences: [0-9]+$' <<< "$out" || fail "no truncation count: $out"
    # Same config, same samples: the draw is deterministic.
    again=$("$CTXSIM" samples configs/default.yaml --show 3 2>/dev/null)
    [ "$out" = "$again" ] || fail "two runs differ"
    # Overrides change the draw: another seed, documents mode.
    docs=$("$CTXSIM" samples configs/default.yaml --show 0 samples.windows=documents 2>/dev/null) || fail "documents mode"
    contains "$docs" "candidates:          50 (documents windows)"
    contains "$docs" "drawn samples:       50 of 2000 requested"
    every=$("$CTXSIM" samples configs/default.yaml --show 0 corpus.split=all 2>/dev/null) || fail "all documents"
    contains "$every" "candidates:          57340 (sentences windows)"
    ;;
  validate_default)
    out=$("$CTXSIM" validate configs/default.yaml) || fail "default.yaml does not validate"
    contains "$out" "seq_len: 128"
    contains "$out" "num_samples: 2000"
    "$CTXSIM" validate configs/paper.yaml > "$TMP/paper" || fail "paper.yaml does not validate"
    contains "$(cat "$TMP/paper")" "num_samples: 20000"
    ;;
  tokenize)
    out=$(printf 'Hello, world!\nthe.\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt) || fail "exit $?"
    [ "$out" = $'7592 1010 2088 999\n1996 1012' ] || fail "ids: $out"
    out=$(printf 'Héllo\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt --tokens)
    [ "$out" = "hello" ] || fail "tokens: $out"
    printf 'bad \xff\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt 2>"$TMP/err" && fail "invalid UTF-8 accepted"
    contains "$(cat "$TMP/err")" "stdin:1: invalid UTF-8"
    # GPT-2's byte-level BPE from its folder, as --vocab or as a model folder's tokenizer.
    if [ -f data/vocab/gpt2/merges.txt ]; then
      out=$(printf "Hello world, it's\n" | "$CTXSIM" tokenize --vocab data/vocab/gpt2) || fail "gpt2 exit $?"
      [ "$out" = "15496 995 11 340 338" ] || fail "gpt2 ids: $out"
      cp -r data/vocab/gpt2 "$TMP/gpt2-model"
      out=$(printf ' naïve\n' | "$CTXSIM" tokenize --model "$TMP/gpt2-model" --tokens) || fail "--model exit $?"
      [ "$out" = "ĠnaÃ¯ve" ] || fail "gpt2 tokens: $out"
      sed -i 1d "$TMP/gpt2-model/merges.txt"
      echo x | "$CTXSIM" tokenize --model "$TMP/gpt2-model" 2>"$TMP/err" && fail "merges without #version accepted"
      contains "$(cat "$TMP/err")" "gpt2-model/merges.txt:1: a merges file starts with its '#version: 0.2' line"
    fi
    echo x | "$CTXSIM" tokenize 2>"$TMP/err" && fail "no tokenizer accepted"
    contains "$(cat "$TMP/err")" "no tokenizer given"
    ;;
  version_and_help)
    out=$("$CTXSIM" --version) || fail "--version"
    contains "$(sed -n 1p <<< "$out")" "(git "
    contains "$(sed -n 2p <<< "$out")" "LibTorch "
    # A build without CUDA says so, and how its ranks reduce (tests/cuda_build_test.sh: the CUDA build).
    if ! grep -q "CTXSIM_CUDA:BOOL=ON" "$(dirname "$CTXSIM")/CMakeCache.txt" 2>/dev/null; then
      contains "$(sed -n 2p <<< "$out")" "CPU only (no CUDA built in)"
      contains "$(sed -n 3p <<< "$out")" "NCCL not built in (-DCTXSIM_CUDA=OFF): ranks reduce over MPI"
    fi
    for sub in validate samples tokenize run bench-tokenizer; do
      "$CTXSIM" "$sub" --help > "$TMP/help" || fail "$sub --help"
      contains "$(cat "$TMP/help")" "Usage:"
    done
    "$CTXSIM" frobnicate 2>/dev/null && fail "unknown subcommand accepted"
    true
    ;;
  openmp_wait)
    # segment and pretrain start with OpenMP's workers waiting passively (pipeline/main.cpp: the
    # process execs itself once with OMP_WAIT_POLICY=PASSIVE); libgomp prints what it read
    # (GOMP_SPINCOUNT 0 = passive, 300000 = its default, 30000000000 = active). A user's setting
    # wins; other commands keep libgomp's default.
    spins() { OMP_DISPLAY_ENV=verbose "$@" 2>&1 >/dev/null | sed -n "s/^  GOMP_SPINCOUNT = '\([0-9]*\)'$/\1/p" | head -1; }
    [ "$(spins "$CTXSIM" segment --help)" = 0 ] || fail "segment: libgomp did not read passive: $(spins "$CTXSIM" segment --help)"
    [ "$(spins "$CTXSIM" pretrain --help)" = 0 ] || fail "pretrain: libgomp did not read passive"
    [ "$(spins "$CTXSIM" run --help)" = 300000 ] || fail "run: expected libgomp's default"
    [ "$(OMP_WAIT_POLICY=active spins "$CTXSIM" segment --help)" = 30000000000 ] || fail "the user's OMP_WAIT_POLICY=active lost"
    [ "$(GOMP_SPINCOUNT=1234 spins "$CTXSIM" pretrain --help)" = 1234 ] || fail "the user's GOMP_SPINCOUNT lost"
    # The job says what it runs with.
    "$CTXSIM" segment configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 runtime.threads=1 \
      output.dir="$TMP/seg" > /dev/null 2> "$TMP/err" || fail "segment: $(tail -3 "$TMP/err")"
    contains "$(cat "$TMP/err")" "idle threads: passive (ctxsim's default for this job)"
    OMP_WAIT_POLICY=active "$CTXSIM" segment configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 runtime.threads=1 \
      output.dir="$TMP/seg2" > /dev/null 2> "$TMP/err" || fail "segment again: $(tail -3 "$TMP/err")"
    contains "$(cat "$TMP/err")" "idle threads: OMP_WAIT_POLICY=active"
    # The default thread count leaves out the cores other processes keep busy (issue 46 goal 7):
    # with a burner on one core, the job takes fewer threads than the cores and says why.
    sh -c 'while :; do :; done' &
    burner=$!
    env -u OMP_NUM_THREADS -u SLURM_CPUS_PER_TASK "$CTXSIM" segment configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 \
      output.dir="$TMP/seg3" > /dev/null 2> "$TMP/err"
    rc=$?
    kill $burner
    [ $rc -eq 0 ] || fail "segment beside a busy core: $(tail -3 "$TMP/err")"
    contains "$(cat "$TMP/err")" "cores busy with other work; runtime.threads sets the count)"
    threads=$(sed -n 's/.* 1 rank(s) x \([0-9]*\) thread(s).*/\1/p' "$TMP/err" | head -1)
    cores=$(env -u OMP_NUM_THREADS nproc)
    [ "$cores" -eq 1 ] || [ "$threads" -lt "$cores" ] || fail "$threads threads on $cores cores with one busy"
    ;;
  bad_configs)
    # Each bad config: exit 1, one error line naming file/key and a fix, nothing written.
    check_bad() {  # check_bad NAME YAML EXPECTED [OVERRIDES...]
      local name=$1 yaml=$2 expect=$3; shift 3
      printf '%s' "$yaml" > "$TMP/$name.yaml"
      "$CTXSIM" run "$TMP/$name.yaml" output.dir="$TMP/out_$name" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
      local rc=$?
      [ $rc -eq 1 ] || fail "$name: exit $rc, expected 1"
      [ "$(wc -l < "$TMP/stderr")" -eq 1 ] || fail "$name: not one line: $(cat "$TMP/stderr")"
      contains "$(cat "$TMP/stderr")" "$expect"
      contains "$(cat "$TMP/stderr")" "; fix: "
      [ ! -s "$TMP/stdout" ] || fail "$name: printed output: $(cat "$TMP/stdout")"
      [ ! -e "$TMP/out_$name" ] || fail "$name: wrote $TMP/out_$name"
    }
    check_bad unknown  $'samples:\n  sed: 3\n'            "samples.sed: unknown key; fix: did you mean 'samples.seed'?"
    check_bad type     $'samples:\n  seq_len: many\n'     "$TMP/type.yaml:2:12: samples.seq_len: expected an integer"
    check_bad range    $'samples:\n  seq_len: 100000\n'   "samples.seq_len: expected an integer in [3, 8192], got 100000"
    check_bad malformed $'samples:\n  seq_len: [1\n'     "$TMP/malformed.yaml:"
    check_bad empty    ''                                  "$TMP/empty.yaml: the config is empty"
    check_bad missing  $'corpus:\n  path: /nonexistent\nmodel:\n  vocab: data/vocab/bert-base-uncased.txt\n' \
                       "$TMP/missing.yaml:2:9: corpus.path: '/nonexistent' does not exist"
    check_bad override $'model:\n  vocab: data/vocab/bert-base-uncased.txt\n' \
                       "command line 'samples.windows=both': samples.windows: expected one of sentences, documents" samples.windows=both
    "$CTXSIM" run "$TMP/nope.yaml" 2> "$TMP/stderr" && fail "missing config accepted"
    contains "$(cat "$TMP/stderr")" "nope.yaml: the config file does not exist"
    ;;
  bad_corpus)
    mkdir -p "$TMP/corpus"
    printf 'good line.\n\nbad \xfe line.\n' > "$TMP/corpus/a.txt"
    printf 'corpus:\n  format: text\n  path: %s\nmodel:\n  vocab: data/vocab/bert-base-uncased.txt\noutput:\n  dir: %s/out\n' \
      "$TMP/corpus" "$TMP" > "$TMP/c.yaml"
    "$CTXSIM" samples "$TMP/c.yaml" 2> "$TMP/stderr" && fail "invalid UTF-8 accepted"
    contains "$(cat "$TMP/stderr")" "a.txt: invalid UTF-8 at line 3, column 5 (byte 16)"
    out=$("$CTXSIM" samples "$TMP/c.yaml" corpus.invalid_utf8=replace --show 0 2>/dev/null) || fail "replace mode failed"
    contains "$out" "documents:           2"
    : > "$TMP/corpus/a.txt"
    "$CTXSIM" samples "$TMP/c.yaml" 2> "$TMP/stderr" && fail "empty corpus accepted"
    contains "$(cat "$TMP/stderr")" "the corpus has no documents"
    [ ! -e "$TMP/out" ] || fail "wrote output"
    ;;
  init_model)
    "$CTXSIM" init-model --preset bert-tiny --seed 5 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/a" > /dev/null || fail "init-model"
    "$CTXSIM" init-model --preset bert-tiny --seed 5 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/b" > /dev/null || fail "init-model"
    for f in config.json model.safetensors vocab.txt; do cmp -s "$TMP/a/$f" "$TMP/b/$f" || fail "$f differs between two runs"; done
    "$CTXSIM" init-model --preset bert-base --seed 0 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/base" > /dev/null || fail "init-model bert-base"
    out=$("$CTXSIM" model-info "$TMP/base") || fail "model-info"
    contains "$out" "12 layers, hidden 768, 12 heads (d=64), ffn 3072, vocab 30522"
    contains "$out" "199 in the file: 199 BERT (encoder + pooler), 0 ignored (heads, buffers), 0 unexpected"
    head -c 1000 "$TMP/base/model.safetensors" > "$TMP/a/model.safetensors"
    "$CTXSIM" model-info "$TMP/a" 2> "$TMP/err" && fail "truncated checkpoint accepted"
    contains "$(cat "$TMP/err")" "model.safetensors: header length"
    # --like: the random control of a real model (setup writes all-MiniLM-L6-v2's): its config.json's
    # family and shape, its own tokenizer files; the same seed twice, the same bytes.
    real=data/models/all-MiniLM-L6-v2
    [ -f $real/config.json ] || fail "$real is missing (scripts/setup.sh fetches it)"
    out=$("$CTXSIM" init-model --like $real --seed 3 --out "$TMP/like") || fail "init-model --like"
    contains "$out" "the shape of $real (6 layers, hidden 384, 12 heads, ffn 1536), seed 3"
    "$CTXSIM" init-model --like $real --seed 3 --out "$TMP/like2" > /dev/null || fail "init-model --like again"
    cmp -s "$TMP/like/model.safetensors" "$TMP/like2/model.safetensors" || fail "--like: two runs differ"
    for f in vocab.txt tokenizer_config.json; do cmp -s $real/$f "$TMP/like/$f" || fail "--like: $f is not the model's own"; done
    /usr/bin/python3 - $real/config.json "$TMP/like/config.json" <<'PY' || fail "--like: config.json differs in shape"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keys = ["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "max_position_embeddings",
        "hidden_act", "layer_norm_eps", "type_vocab_size", "vocab_size", "pad_token_id"]
assert all(a[k] == b[k] for k in keys), {k: (a[k], b[k]) for k in keys if a[k] != b[k]}
PY
    [ "$(sha256sum < "$TMP/like/model.safetensors")" != "$(sha256sum < $real/model.safetensors)" ] || fail "--like copied the weights"
    "$CTXSIM" init-model --like $real --preset bert-tiny --out "$TMP/x" > /dev/null 2> "$TMP/err"; [ $? -eq 2 ] || fail "--like with --preset"
    contains "$(cat "$TMP/err")" "--preset excludes --like"
    mkdir "$TMP/empty"
    "$CTXSIM" init-model --like "$TMP/empty" --out "$TMP/x" > /dev/null 2> "$TMP/err"; [ $? -eq 1 ] || fail "--like without config.json"
    contains "$(cat "$TMP/err")" "--like $TMP/empty: has no config.json"
    "$CTXSIM" init-model --out "$TMP/x" > /dev/null 2> "$TMP/err"; [ $? -eq 2 ] || fail "no --vocab, no --like"
    contains "$(cat "$TMP/err")" "--vocab: is required"
    [ ! -e "$TMP/x" ] || fail "a refused init-model wrote $TMP/x"
    ;;
  docs)
    # The README stays a newcomer's path (<= 250 lines; tables and details live in docs/), and every
    # file a page of the repository links to exists.
    n=$(wc -l < README.md)
    [ "$n" -le 250 ] || fail "README.md has $n lines (at most 250: move details to docs/)"
    for page in README.md docs/*.md results/*/README.md; do
      dir=$(dirname "$page")
      for link in $(grep -o '](\([^)#:]*\))' "$page" | sed 's/^](//; s/)$//' | sort -u); do
        [ -e "$dir/$link" ] || fail "$page links to $link, which does not exist"
      done
    done
    ;;
  torch_reference)
    # A second, independent implementation of SPEC §2-§4 (scripts/torch_pipeline.py: plain PyTorch,
    # the benchmarks' yardstick) agrees with a float64 store count for count, on the trained model
    # with a rule of each kind, one with its own threshold and separators.
    # Every dataset of the store is compared (per-unit sums, examples, same_word included); one it
    # does not know fails the check.
    "$CTXSIM" run configs/default.yaml model.path=models/brown-bert model.vocab=models/brown-bert/vocab.txt model.dtype=float64 \
      samples.num_samples=24 runtime.batch_size=5 runtime.unit_size=10 statistics.examples=[0,13] output.report=false output.dir="$TMP/s" \
      'selection=[{top_fraction: 0.02}, {relative_to_max: 0.9, attention_threshold: 0.3}, {absolute: 2.5, separators: [".", "the"]}]' \
      > /dev/null 2> "$TMP/err" || fail "run: $(cat "$TMP/err")"
    out=$(/usr/bin/python3 scripts/torch_pipeline.py --store "$TMP/s/store.h5" --model models/brown-bert --dtype float64 --batch 7 --threads 1 --check 2>&1) \
      || fail "the PyTorch implementation disagrees: $(grep -v ': equal$' <<< "$out")"
    contains "$out" "check: all equal"
    contains "$out" "check stats/top_fraction=0.02/same_word: equal"
    contains "$out" "check units/top_fraction=0.02/same_word: equal"
    contains "$out" "check examples/selected: equal"
    [ "$(grep -c ': equal' <<< "$out")" -ge 90 ] || fail "too few datasets compared: $out"
    cp "$TMP/s/store.h5" "$TMP/extra.h5"
    /usr/bin/python3 -c "import h5py; h5py.File('$TMP/extra.h5', 'r+')['stats/top_fraction=0.02'].create_dataset('new_stat', data=[[0]])" || fail "h5py"
    out=$(/usr/bin/python3 scripts/torch_pipeline.py --store "$TMP/extra.h5" --model models/brown-bert --dtype float64 --threads 1 --check 2>&1) \
      && fail "a dataset it does not compute passed the check"
    contains "$out" "check stats/top_fraction=0.02/new_stat: not compared"
    # The Llama lineage (SPEC §7: RMSNorm, rotary positions, grouped-query heads, Qwen3's q/k norms,
    # causal attention, frames from tokenizer_config.json): random models of two rows, count for count.
    for spec in "llama llama3" "qwen3 qwen3"; do
      set -- $spec
      "$CTXSIM" init-model --family "$1" --preset bert-tiny --layers 2 --hidden 64 --heads 4 --ffn 128 --positions 128 --seed 3 \
        --vocab "data/tokenizers/$2" --out "$TMP/$1" > /dev/null || fail "init-model --family $1"
      "$CTXSIM" run configs/default.yaml model.path="$TMP/$1" model.dtype=float64 samples.num_samples=12 samples.seq_len=64 \
        runtime.batch_size=5 runtime.unit_size=6 statistics.examples=[0,7] output.report=false output.dir="$TMP/s-$1" \
        'selection=[{top_fraction: 0.02}, {relative_to_max: 0.9, attention_threshold: 0.3}]' > /dev/null 2> "$TMP/err" ||
        fail "run $1: $(cat "$TMP/err")"
      out=$(/usr/bin/python3 scripts/torch_pipeline.py --store "$TMP/s-$1/store.h5" --model "$TMP/$1" --dtype float64 --batch 7 --threads 1 \
        --check 2>&1) || fail "$1: the PyTorch implementation disagrees: $(grep -v ': equal$' <<< "$out")"
      contains "$out" "check: all equal"
    done
    ;;
  isa_levels)
    # SPEC §5: one answer on every node of a mixed cluster. One job at each instruction-set level
    # this CPU runs (CTXSIM_ISA), stores compared byte for byte: in float64 with the libraries
    # following the level (OpenBLAS's kernel set, ATen's vectors), and in float32, where random
    # weights tie massively, with the libraries pinned so that only ctxsim's own kernels change.
    "$CTXSIM" init-model --preset bert-tiny --seed 8 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
    levels="baseline x86-64-v3 x86-64-v4"
    grep -qw avx2 /proc/cpuinfo || levels="baseline"
    grep -qw avx512f /proc/cpuinfo || levels="${levels% x86-64-v4}"
    for dtype in float64 float32; do
      pin=()
      [ "$dtype" = float32 ] && pin=(OPENBLAS_CORETYPE=Prescott ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41)
      for level in $levels; do
        env "${pin[@]}" CTXSIM_ISA="$level" "$CTXSIM" run configs/default.yaml model.path="$TMP/m" model.dtype="$dtype" \
          samples.num_samples=40 'selection=[{top_fraction: 0.01}, {relative_to_max: 0.9}]' statistics.examples=[0,7] \
          output.report=false output.dir="$TMP/$dtype-$level" > /dev/null 2> "$TMP/err" || fail "$level $dtype: $(cat "$TMP/err")"
        contains "$(cat "$TMP/err")" "; $level"
        [ "$level" = baseline ] && continue
        /usr/bin/python3 tests/compare_stores.py --bytes "$TMP/$dtype-baseline/store.h5" "$TMP/$dtype-$level/store.h5" > "$TMP/cmp" \
          || fail "$dtype: baseline and $level stores differ: $(cat "$TMP/cmp")"
      done
    done
    # Unforced on an AVX2 or AVX-512 CPU, OpenBLAS never runs its SSE3 fallback (Prescott, its pick
    # for a CPU it does not know): the level's kernel set replaces it.
    if [ "$levels" != baseline ]; then
      out=$(env -u OPENBLAS_CORETYPE -u CTXSIM_ISA "$CTXSIM" bench-model --preset bert-tiny --batch 1 --dtype float32 --seconds 0.01 2>&1) \
        || fail "bench-model: $out"
      line=$(grep '^ISA:' <<< "$out")
      grep -qE "BLAS: (OpenBLAS|MKL)" <<< "$line" || fail "neither OpenBLAS nor MKL found: $line"  # MKL: a pip LibTorch
      grep -q "BLAS: OpenBLAS Prescott" <<< "$line" && fail "an AVX2/AVX-512 CPU runs OpenBLAS's SSE3 kernels: $line"
      # (g): the layers' GEMMs alone, and a/g the forward's GF/s over it (rounded as printed).
      row=$(grep '^float32' <<< "$out")
      read -r _ _ _ agf _ _ _ _ _ _ g ag _ <<< "${row//,/ }"
      awk -v a="$agf" -v g="$g" -v r="$ag" 'BEGIN { exit !(g > 0 && r > 0 && (a / g - r) ^ 2 < 4e-4) }' \
        || fail "bench-model's (g) and a/g columns: $row"
    fi
    # An unknown level, or one above the CPU's, is one clear error naming the variable.
    out=$(CTXSIM_ISA=avx9 "$CTXSIM" validate configs/default.yaml 2>&1) && fail "CTXSIM_ISA=avx9 accepted"
    contains "$out" "CTXSIM_ISA=avx9: not an instruction-set level; fix: use x86-64-v4, x86-64-v3 or baseline"
    ;;
  run_store)
    "$CTXSIM" init-model --preset bert-tiny --seed 3 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
    out=$("$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=30 output.dir="$TMP/out" \
          'selection=[{top_fraction: 0.01}, {absolute: 0.5}]' 2> "$TMP/err") || fail "run: $(cat "$TMP/err")"
    contains "$out" "rule top_fraction=0.01"
    contains "$out" "rule absolute=0.5"
    contains "$(cat "$TMP/err")" "progress: samples 30/30"
    [ "$("$CTXSIM" summary "$TMP/out/store.h5")" = "$out" ] || fail "summary differs from the run's"
    h5dump -H "$TMP/out/store.h5" > "$TMP/h5dump" || fail "h5dump -H"
    contains "$(cat "$TMP/h5dump")" 'DATASET "distance_hist"'
    # Readers without our code: h5py (Debian's python3-h5py) sees the documented layout.
    /usr/bin/python3 - "$TMP/out/store.h5" > "$TMP/py" 2>&1 <<'PY' || fail "h5py: $(cat "$TMP/py")"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["complete"] == 1
assert f.attrs["schema_version"] >= 3
assert f.attrs["kind"] == b"run"
assert f["samples/token_ids"].shape == (30, 128)
assert f["per_sample/anchor_token"].shape == (2, 30, 2, 2)
g = f["stats/top_fraction=0.01"]
assert g["distance_hist"].shape == (2, 2, 128)
assert (g["distance_hist"][...].sum(axis=2) == g["high_pairs"][...]).all()
att = f["examples/attention"][...]
assert att.dtype.name == "float16", att.dtype
n = int(f["samples/n_valid"][0])
rows = att[0, 0, 0, :n, :].astype("float64").sum(axis=1)
assert abs(rows - 1).max() < 1e-2, rows
for name, ds in f["stats"].items():
    pass
def check(name, obj):
    if isinstance(obj, h5py.Dataset):
        assert "description" in obj.attrs, name
f.visititems(check)
print("h5py ok")
PY
    contains "$(cat "$TMP/py")" "h5py ok"
    # Same config: runs again; another config: refused, store untouched.
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=31 output.dir="$TMP/out" 2> "$TMP/err" && fail "different config accepted"
    contains "$(cat "$TMP/err")" "holds a run with a different config: samples.num_samples: 30 → 31"
    "$CTXSIM" summary "$TMP/nope.h5" 2> "$TMP/err" && fail "summary of a missing store"
    contains "$(cat "$TMP/err")" "nope.h5: no store here"
    ;;
  bf16_refused)
    # Without native bfloat16 (hidden here by the test hook) a bfloat16 run stops before any
    # work: one error naming the key, the missing CPU features and the fix; nothing written.
    export CTXSIM_HIDE_CPU_FEATURES=avx512_bf16,amx_bf16
    "$CTXSIM" run configs/default.yaml model.dtype=bfloat16 output.dir="$TMP/out" 2> "$TMP/err" && fail "bfloat16 run accepted"
    contains "$(cat "$TMP/err")" "model.dtype: bfloat16 needs a CPU with avx512_bf16 or amx_bf16"
    contains "$(cat "$TMP/err")" "fix: use float32"
    [ "$(grep -c . "$TMP/err")" -eq 1 ] || fail "more than one line: $(cat "$TMP/err")"
    [ ! -e "$TMP/out" ] || fail "output folder written"
    "$CTXSIM" plan configs/default.yaml model.dtype=bfloat16 2> "$TMP/err" > /dev/null && fail "bfloat16 plan accepted"
    contains "$(cat "$TMP/err")" "avx512_bf16 or amx_bf16"
    out=$("$CTXSIM" bench-model --preset bert-tiny --batch 1 --dtype bfloat16 --seconds 0.1) || fail "bench-model"
    contains "$out" "bfloat16  skipped: this CPU has neither avx512_bf16 nor amx_bf16"
    unset CTXSIM_HIDE_CPU_FEATURES
    ;;
  sweep_plan_submit)
    out=$("$CTXSIM" sweep configs/sweeps/thresholds.yaml) || fail "sweep"
    contains "$out" "sweep thresholds: 1 point(s)"
    contains "$out" "folded into every point's rule list"
    out=$("$CTXSIM" sweep configs/sweeps/vectors.yaml) || fail "sweep"
    contains "$out" "[3] model.vector-projected__samples.seq_len-128"
    contains "$out" "output: runs/sweeps/vectors/model.vector-projected__samples.seq_len-128"
    contains "$out" "overrides: model.vector=projected samples.seq_len=128"
    printf 'sweep:\n  samples.seqlen: [64]\n' > "$TMP/bad.yaml"
    "$CTXSIM" sweep "$TMP/bad.yaml" 2> "$TMP/err" && fail "bad sweep key accepted"
    contains "$(cat "$TMP/err")" "did you mean 'samples.seq_len'?"
    "$CTXSIM" init-model --preset bert-tiny --seed 3 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
    out=$("$CTXSIM" submit configs/sweeps/vectors.yaml model.path="$TMP/m" output.dir="$TMP/sw" --dry-run --ranks 4 --time 01:00:00 \
      --plan-batches 1 --array-throttle 2 --then collect --account proj42 --qos high --constraint avx512 --nodes 2 --ntasks-per-node 2) ||
      fail "submit --dry-run: $out"
    contains "$out" "4 array tasks, one per point of sweep vectors (at most 2 at once)"
    contains "$out" "'--job-name=ctxsim-vectors' '--array=0-3%2'"
    contains "$out" "'--ntasks=4'"
    contains "$out" "'--time=01:00:00' '--mem-per-cpu="
    contains "$out" "'--account=proj42' '--qos=high' '--constraint=avx512' '--nodes=2' '--ntasks-per-node=2'"
    contains "$out" "# point 3: model.vector-projected__samples.seq_len-128"
    contains "$out" "CONFIG='$(pwd)/configs/sweeps/vectors.yaml'"
    contains "$out" "LAUNCHER=srun-pmix"
    contains "$out" "# then, after it: 'sbatch' '--parsable' '--job-name=ctxsim-vectors-collect' '--dependency=afterok:@ID@'"
    contains "$out" "collect '\\''$TMP/sw/vectors'\\''"
    # Resources from plan: the time is plan's estimate x --margin (+ 2 min for SIGTERM), in whole minutes.
    out=$("$CTXSIM" submit configs/default.yaml model.path="$TMP/m" output.dir="$TMP/one" samples.num_samples=10 --dry-run \
      --margin 2 runtime.launcher=srun-pmi2) || fail "submit --dry-run: $out"
    contains "$out" "OVERRIDES=( 'model.path=$TMP/m' 'output.dir=$TMP/one' 'samples.num_samples=10' 'runtime.launcher=srun-pmi2' )"
    contains "$out" "LAUNCHER=srun-pmi2"
    contains "$out" "scontrol requeue"
    contains "$out" "'--job-name=ctxsim-default'"
    contains "$out" "x margin 2 + 2 min for SIGTERM"
    grep -q "'--time=00:0[5-9]:00' '--mem-per-cpu=[0-9]*M'" <<< "$out" || fail "no --time and --mem-per-cpu from plan: $out"
    # What would stop the job after its queue wait stops it here, before sbatch.
    # (PATH is left without sbatch: a check that let a job through would fail differently.)
    refuses() {  # refuses RC TEXT ARGS…: `ctxsim submit ARGS` exits RC with one error line naming TEXT and the fix
      local want=$1 text=$2; shift 2
      PATH=/usr/bin/no-sbatch:/bin "$CTXSIM" submit "$@" > "$TMP/o" 2> "$TMP/e"
      local rc=$?
      [ $rc -eq "$want" ] || fail "submit $*: exit $rc, expected $want: $(cat "$TMP/e")"
      [ "$(grep -c '^ctxsim: error: ' "$TMP/e")" -eq 1 ] || fail "submit $*: not one error line: $(cat "$TMP/e")"
      contains "$(cat "$TMP/e")" "$text"
      contains "$(cat "$TMP/e")" "; fix: "
    }
    refuses 1 "model.path: '/nonexistent' does not exist" configs/default.yaml model.path=/nonexistent output.dir="$TMP/x"
    mkdir -p "$TMP/broken" && echo '{"model_type": "bert"}' > "$TMP/broken/config.json" && cp "$TMP/m/model.safetensors" "$TMP/m/vocab.txt" "$TMP/broken/"
    refuses 1 "config.json" configs/default.yaml model.path="$TMP/broken" output.dir="$TMP/x"
    head -c 100 "$TMP/m/model.safetensors" > "$TMP/broken/model.safetensors" && cp "$TMP/m/config.json" "$TMP/broken/"
    refuses 1 "model.safetensors" configs/default.yaml model.path="$TMP/broken" output.dir="$TMP/x"
    refuses 1 "corpus.path: 'no/corpus' does not exist" configs/default.yaml corpus.path=no/corpus model.path="$TMP/m" output.dir="$TMP/x"
    touch "$TMP/file"
    refuses 1 "output.dir: '$TMP/file/out' cannot be made: $TMP/file is a file" configs/default.yaml model.path="$TMP/m" output.dir="$TMP/file/out"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" output.dir="$TMP/done" samples.num_samples=10 output.report=false > /dev/null 2>&1 ||
      fail "run for the output check"
    refuses 1 "holds a run with a different config: samples.num_samples: 10 → 12" configs/default.yaml model.path="$TMP/m" \
      output.dir="$TMP/done" samples.num_samples=12
    out=$(PATH=/usr/bin/no-sbatch:/bin "$CTXSIM" submit configs/default.yaml model.path="$TMP/m" output.dir="$TMP/done" samples.num_samples=10) ||
      fail "submit of a complete store: $out"
    contains "$out" "nothing to submit: $TMP/done/store.h5 is complete"
    refuses 2 "--then: expected collect or compare" configs/default.yaml --then plot
    refuses 2 "--then compare: draws several stores together" configs/default.yaml model.path="$TMP/m" --then compare
    refuses 2 "--margin: expected a factor from 1 to 100" configs/default.yaml model.path="$TMP/m" --margin 0.5
    out=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=100 --ranks 2) || fail "plan"
    contains "$out" "samples:        100 (T=128), 2 units of 64, 1 rounds"
    contains "$out" "memory / rank:"
    contains "$out" "samples/s per rank on this machine"
    contains "$out" "time estimate:"
    lacks_warning=$(grep -c "warning" <<< "$out"); [ "$lacks_warning" -eq 0 ] || fail "a warning with every rank busy: $out"
    # Memory alone (long contexts, where one calibration batch takes minutes): the whole maps at
    # T=128, when asked for, and in a batch holding a stored example; tiles of 128 rows beyond.
    out=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=16 --batches 0) || fail "plan --batches 0"
    contains "$out" "calibration:    none (--batches 0): no time estimate"
    contains "$out" "attention maps"
    grep -q "time estimate:" <<< "$out" && fail "plan --batches 0 estimated a time: $out"
    tiles=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=4 samples.seq_len=512 'statistics.examples=[]' --batches 0 |
      grep "memory / rank") || fail "plan --batches 0 at T=512"
    examples=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=4 samples.seq_len=512 --batches 0 | grep "memory / rank") ||
      fail "plan --batches 0 at T=512 with examples"
    contains "$examples" "attention maps (a batch with a stored example)"
    whole=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=4 samples.seq_len=512 runtime.attention_rows=512 --batches 0 |
      grep "memory / rank") || fail "plan --batches 0, whole maps"
    contains "$tiles" "attention in tiles of 128 rows"
    contains "$whole" "attention maps"
    # More ranks than work units: run, plan and submit say so, with the fix.
    out=$("$CTXSIM" plan configs/default.yaml model.path="$TMP/m" samples.num_samples=16 --ranks 4) || fail "plan"
    contains "$out" "warning:        4 ranks for 1 work unit (16 samples of runtime.unit_size 64): 3 would have nothing to do"
    "$CTXSIM" submit configs/default.yaml --dry-run --ranks 4 samples.num_samples=16 model.path="$TMP/m" output.dir="$TMP/four" > /dev/null 2> "$TMP/err" ||
      fail "submit: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "warning: 4 ranks for 1 work unit"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpiexec --bind-to none -n 3 "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=16 output.report=false \
      output.dir="$TMP/idle" > /dev/null 2> "$TMP/err" || fail "run on 3 ranks: $(tail -3 "$TMP/err")"
    [ "$(grep -c "warning: 3 ranks for 1 work unit" "$TMP/err")" -eq 1 ] || fail "no (or a repeated) idle-rank warning: $(cat "$TMP/err")"
    # A config with a segment: section is a segmentation job to submit and to plan.
    out=$("$CTXSIM" submit configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 output.dir="$TMP/seg" --plan-batches 1 --dry-run) ||
      fail "submit --dry-run of a segment config: $out"
    contains "$out" "# one 'segment' job"
    contains "$out" "COMMAND=segment"
    # Pruning and pretraining configs are submitted as their jobs (their sections say which); plan
    # does not estimate them, and says so.
    out=$("$CTXSIM" submit configs/prune/brown.yaml output.dir="$TMP/pr" --dry-run 2>&1) || fail "submit --dry-run of a prune config: $out"
    contains "$out" "COMMAND=prune"
    contains "$out" "plan does not estimate 'prune' jobs: the job script's #SBATCH lines apply (give --time --mem to ask for more)"
    out=$("$CTXSIM" submit configs/pretrain/brown.yaml output.dir="$TMP/pt" --dry-run --time 01:00:00 --mem 4G 2>&1) ||
      fail "submit --dry-run of a pretrain config: $out"
    contains "$out" "COMMAND=pretrain"
    contains "$out" "'--time=01:00:00' '--mem=4G'"
    # An installed ctxsim (cmake --install of this build) submits with its installed job scripts,
    # from any folder.
    here=$(pwd)
    cmake --install "$(dirname "$CTXSIM")" --prefix "$TMP/prefix" > /dev/null || fail "cmake --install"
    out=$(cd "$TMP" && "$TMP/prefix/bin/ctxsim" submit "$TMP/prefix/share/ctxsim/configs/default.yaml" model.path="$TMP/m" \
      corpus.path="$here/data/brown" output.dir="$TMP/installed" samples.num_samples=10 --plan-batches 1 --dry-run) ||
      fail "the installed ctxsim's submit: $out"
    contains "$out" "#SBATCH --signal=B:TERM@120"
    contains "$out" "CONFIG='$TMP/prefix/share/ctxsim/configs/default.yaml'"
    [ "$("$TMP/prefix/bin/ctxsim" --version)" = "$("$CTXSIM" --version)" ] || fail "the installed binary is another version"
    "$CTXSIM" plan configs/prune/brown.yaml > /dev/null 2> "$TMP/err" && fail "plan took a prune config"
    contains "$(cat "$TMP/err")" "plan estimates run configs and segment configs, and this is a 'prune' config"
    out=$("$CTXSIM" plan configs/segment/choi.yaml segment.documents=1 segment.dev_documents=1 --batches 1 --ranks 2) || fail "plan of a segment config"
    contains "$out" "(a segmentation job: ctxsim segment) on 2 rank(s)"
    contains "$out" "benchmark:      5 test documents (3-11, 3-5, 6-8, 9-11, dev), 44 methods; one document per unit, 3 rounds"
    contains "$out" "time estimate:"
    mkdir -p "$TMP/empty"
    "$CTXSIM" collect "$TMP/empty" 2> "$TMP/err" && fail "collect of nothing"
    contains "$(cat "$TMP/err")" "no complete store.h5"
    ;;
  report)
    "$CTXSIM" init-model --preset bert-tiny --seed 3 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=12 output.dir="$TMP/out" statistics.examples=[0,3] \
      > /dev/null 2>&1 || fail "run"
    out=$("$CTXSIM" report "$TMP/out/store.h5") || fail "report: $out"
    html="$TMP/out/report.html"
    [ -s "$html" ] || fail "no report.html"
    [ "$(stat -c %s "$html")" -lt $((25 * 1024 * 1024)) ] || fail "report.html over the 25 MB budget"
    grep -qE "https?:" "$html" && fail "report.html refers to the network"
    contains "$(cat "$html")" 'id="explorer"'
    contains "$(cat "$html")" "data:image/png;base64,"
    # The figures are the binary's to list (report --list-figures); index.json lists what it wrote.
    listed=$("$CTXSIM" report "$TMP/out/store.h5" --list-figures) || fail "report --list-figures"
    [ "$listed" = "$(/usr/bin/python3 -c 'import json, sys; print("\n".join(e["stem"] for e in json.load(open(sys.argv[1]))))' "$TMP/out/figures/index.json")" ] \
      || fail "--list-figures and index.json differ: $listed"
    for f in same_sentence_by_layer example0_rollout example1_L1H0_attention; do grep -qx "$f" <<< "$listed" || fail "no $f in: $listed"; done
    for f in $listed; do
      [ "$(head -c 8 "$TMP/out/figures/$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f.png is not a PNG"
      grep -q "<svg" "$TMP/out/figures/$f.svg" || fail "$f.svg is not an SVG"
    done
    contains "$(cat "$TMP/out/figures/example0_L0H0_attention.svg")" ">[CLS]</text>"
    # A report over its budget fails the run with the store kept complete, and no report.
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=12 output.dir="$TMP/budget" \
      statistics.examples=[0,1,2,3,4,5] output.report_max_bytes=1048576 > /dev/null 2> "$TMP/err" && fail "a report over budget passed"
    contains "$(cat "$TMP/err")" "the job finished and its store is complete, but the report failed"
    contains "$(cat "$TMP/err")" "ctxsim report $TMP/budget/store.h5 makes it without rerunning"
    contains "$("$CTXSIM" status "$TMP/budget/store.h5")" "complete"
    [ ! -e "$TMP/budget/report.html" ] && [ ! -e "$TMP/budget/figures" ] || fail "a failed report left files"
    # An interrupted store gets no report.
    CTXSIM_UNIT_DELAY_MS=0 "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=12 output.dir="$TMP/out" \
      output.overwrite=true runtime.unit_size=4 > /dev/null 2>&1 || fail "rerun"
    h5py_incomplete=$(/usr/bin/python3 -c "
import h5py; f = h5py.File('$TMP/out/store.h5', 'r+'); f.attrs['complete'] = 0; f.close(); print('ok')") || fail "mark incomplete"
    rm -f "$html"
    "$CTXSIM" report "$TMP/out/store.h5" 2> "$TMP/err" && fail "report of an incomplete store"
    contains "$(cat "$TMP/err")" "not complete"
    [ ! -e "$html" ] || fail "an incomplete store left a report"
    ;;
  encoder_reference)
    # ctxsim's float64 per-head context vectors and attention maps (model-info --dump-heads) against
    # an independent float64 reference (tests/model_reference.py, written from transformers'
    # modeling_bert.py, modeling_distilbert.py, modeling_roberta.py and modeling_gpt2.py), for every family the same
    # way: seeded random checkpoints in Hugging Face's exact layout, perturbed so that every bias and
    # LayerNorm is non-trivial and attention is peaked, three samples of different lengths (so [PAD]
    # keys are masked; id 1 in one is RoBERTa's padding id, whose position is 1); d = 60/4 = 15, so
    # that 1/sqrt(d) is inexact and the two codes' orders of operations round differently. Tolerance 1e-10 relative to each tensor's largest value: float64 rounding
    # through these three layers stays near 1e-15 (measured 5e-16 to 1e-15), while a float32 step
    # anywhere, an epsilon of 1e-5 instead of 1e-12 or a misplaced bias shows at 1e-7 or far above:
    # the float32 forward, checked the same way, must fail.
    { printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; for i in $(seq 0 94); do echo "tok$i"; done; } > "$TMP/vocab.txt"
    small_bpe "$TMP/bpe"  # GPT-2 and RoBERTa: one token per byte (RoBERTa's init puts <s> <pad> </s> <unk> first)
    for family in bert distilbert roberta gpt2; do
      vocab="$TMP/vocab.txt"
      [ $family = roberta ] || [ $family = gpt2 ] && vocab="$TMP/bpe"
      "$CTXSIM" init-model --family $family --preset bert-tiny --layers 3 --hidden 60 --heads 4 --ffn 96 --positions 32 --seed 11 \
        --vocab "$vocab" --out "$TMP/$family" > /dev/null || fail "init-model --family $family"
      out=$(/usr/bin/python3 tests/model_reference.py layout "$TMP/$family" 2>&1) || fail "$family layout: $out"
      /usr/bin/python3 tests/model_reference.py perturb "$TMP/$family" "$TMP/$family-p" || fail "perturb $family"
      info=$("$CTXSIM" model-info "$TMP/$family-p" --dtype float64 --dump-heads "$TMP/$family-dump" --ids 2,10,11,12,13,3 \
             --ids 2,40,41,40,1,42,43,44,45,46,47,48,49,50,3 --ids 2,99,3 2>&1) || fail "model-info $family: $info"
      contains "$info" "family:      $family"
      out=$(/usr/bin/python3 tests/model_reference.py check "$TMP/$family-p" "$TMP/$family-dump" --tolerance 1e-10 2>&1) || fail "$out"
      echo "$out"
      "$CTXSIM" model-info "$TMP/$family-p" --dtype float32 --dump-heads "$TMP/$family-dump32" --ids 2,10,11,12,13,3 --ids 2,99,3 \
        > /dev/null || fail "model-info float32"
      out=$(/usr/bin/python3 tests/model_reference.py check "$TMP/$family-p" "$TMP/$family-dump32" --tolerance 1e-10 2>&1) &&
        fail "the float32 forward passed the float64 check: $out"
    done
    # The dump's options go together and take the model's token ids; an unknown family is named.
    "$CTXSIM" model-info "$TMP/bert" --ids 2,3 2> "$TMP/err" && fail "--ids without --dump-heads accepted"
    contains "$(cat "$TMP/err")" "--dump-heads and --ids go together"
    "$CTXSIM" model-info "$TMP/bert" --dump-heads "$TMP/x" --ids 2,100 2> "$TMP/err" && fail "an id outside the vocabulary accepted"
    contains "$(cat "$TMP/err")" "'100' is not a token id of this model (0 to 99)"
    sed -i 's/"model_type": "distilbert"/"model_type": "mamba"/' "$TMP/distilbert/config.json"
    "$CTXSIM" model-info "$TMP/distilbert" 2> "$TMP/err" && fail "model_type mamba accepted"
    contains "$(cat "$TMP/err")" "config.json: model_type: 'mamba' is not a model family ctxsim reads (it reads bert, distilbert, roberta, gpt2, llama, mistral, qwen2, qwen3)"
    # A model and a tokenizer of different kinds are refused before anything runs, naming the key.
    "$CTXSIM" run configs/default.yaml model.path="$TMP/roberta" model.vocab="$TMP/vocab.txt" samples.num_samples=4 samples.seq_len=16 \
      output.report=false output.dir="$TMP/rrun" 2> "$TMP/err" && fail "a RoBERTa with a WordPiece vocab.txt accepted"
    contains "$(cat "$TMP/err")" "model.vocab: the model is RoBERTa, whose tokenizer is byte-level BPE, but $TMP/vocab.txt is a WordPiece vocab.txt"
    [ ! -e "$TMP/rrun/store.h5" ] || fail "a refused run left a store"
    "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --vocab "$TMP/vocab.txt" --out "$TMP/g2" 2> "$TMP/err" && fail "GPT-2 with vocab.txt"
    contains "$(cat "$TMP/err")" "vocab.txt: is a WordPiece vocabulary, but a GPT-2 model's tokenizer is byte-level BPE"
    "$CTXSIM" init-model --family mamba --vocab "$TMP/vocab.txt" --out "$TMP/g" 2> "$TMP/err" && fail "--family mamba accepted"
    contains "$(cat "$TMP/err")" "--family: 'mamba' is not a model family ctxsim reads; fix: use one of bert, distilbert, roberta, gpt2, llama, mistral, qwen2, qwen3"
    # The Llama lineage's tokenizer is its tokenizer.json (its regex, NFC, ignore_merges), which
    # vocab.json + merges.txt cannot carry: refused by name, nothing written.
    "$CTXSIM" init-model --family llama --vocab "$TMP/bpe" --out "$TMP/g" 2> "$TMP/err" && fail "--family llama from merges.txt"
    contains "$(cat "$TMP/err")" "is vocab.json + merges.txt, and a Llama model's tokenizer is its tokenizer.json"
    [ ! -e "$TMP/g" ] || fail "a refused init-model left $TMP/g"
    ;;
  llama_runs)
    # The Llama lineage through the whole job (SPEC §7): random models of three rows with the real
    # tokenizers (data/tokenizers), the frame from each tokenizer_config.json: Llama 3's samples
    # start with its bos_token <|begin_of_text|> (id 128000), Mistral's with <s> (id 1; its
    # tokenizer.json's Metaspace pre-tokenizer), Qwen's (bos_token null) with a word.
    for spec in "llama llama3 128000" "qwen2 qwen3 none" "mistral mistral 1"; do
      set -- $spec
      "$CTXSIM" init-model --family "$1" --preset bert-tiny --layers 2 --hidden 64 --heads 4 --ffn 128 --positions 128 --seed 2 \
        --vocab "data/tokenizers/$2" --out "$TMP/$1" > /dev/null || fail "init-model --family $1"
      [ -f "$TMP/$1/tokenizer.json" ] && [ -f "$TMP/$1/tokenizer_config.json" ] || fail "$1: the tokenizer files were not copied"
      "$CTXSIM" run configs/default.yaml model.path="$TMP/$1" samples.num_samples=12 samples.seq_len=64 statistics.examples=[0] \
        output.dir="$TMP/run-$1" > "$TMP/$1.log" 2>&1 || fail "run $1: $(tail -3 "$TMP/$1.log")"
      /usr/bin/python3 - "$TMP/run-$1/store.h5" "$1" "$3" "$TMP/$1" <<'PY' || fail "$1 store"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
assert f.attrs["complete"] == 1 and f.attrs["model_family"].decode() == sys.argv[2] and f.attrs["causal"] == 1
ids, sent, n = f["samples/token_ids"][...], f["samples/sentence_ids"][...], f["samples/n_valid"][...]
if sys.argv[3] == "none":  # no bos: the first position is a word of sentence 0
    assert (sent[:, 0] == 0).all(), sent[:, 0]
else:
    assert (ids[:, 0] == int(sys.argv[3])).all() and (sent[:, 0] == -1).all(), ids[:, 0]
assert (n == 64).all(), n  # Brown's windows fill the samples
assert f["stats/top_fraction=0.01/high_pairs"][...].sum() > 0
# The stored vocabulary is the tokenizer's, line for line: Mistral's tokens that end in a CR
# (";\r") keep it, so every later id keeps its token (issue 46 goal 3).
import json
tok = json.load(open(sys.argv[4] + "/tokenizer.json"))["model"]["vocab"]
lines = f["vocab/text"][...].tobytes().decode().split("\n")
assert all(lines[i] == t for t, i in tok.items()), "the store's vocabulary is not the tokenizer's"
assert sys.argv[2] != "mistral" or lines[tok[";\r"]] == ";\r"
print(sys.argv[2], "ok")
PY
      out=$("$CTXSIM" summary "$TMP/run-$1/store.h5") || fail "summary $1"
      contains "$out" "causal attention"
    done
    # bench-model and submit (its checks and plan) take them as any family.
    out=$("$CTXSIM" bench-model --model "$TMP/mistral" --batch 2 --seq-len 32 --seconds 0.05 --dtype float32 2>&1) || fail "bench-model: $out"
    contains "$out" "float32   2"
    out=$("$CTXSIM" submit --dry-run configs/default.yaml model.path="$TMP/qwen2" samples.num_samples=8 samples.seq_len=32 \
          output.dir="$TMP/sub" 2>&1) || fail "submit --dry-run: $out"
    contains "$out" "sbatch"
    # A tokenizer_config.json whose bos_token is not a token is one error naming the key.
    sed -i 's/"bos_token": "<|begin_of_text|>"/"bos_token": 5/' "$TMP/llama/tokenizer_config.json"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/llama" samples.num_samples=4 samples.seq_len=32 output.dir="$TMP/bad" \
      2> "$TMP/err" && fail "a bos_token of 5 accepted"
    contains "$(cat "$TMP/err")" "tokenizer_config.json: bos_token: expected a token"
    [ ! -e "$TMP/bad/store.h5" ] || fail "a refused run left a store"
    ;;
  gguf_runs)
    # A GGUF file as model.path (llama.cpp's format: config, weights and tokenizer in one file): the
    # real SmolLM2-135M-Instruct Q4_1 through run, summary, inspect and segment --text; its random
    # control (init-model --like the file: a Hugging Face folder, the file's tokenizer written as a
    # tokenizer.json that gives the same ids); broken files one error each.
    G=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
    [ -f "$G" ] || fail "$G is missing: scripts/setup.sh fetches it"
    info=$("$CTXSIM" model-info "$G") || fail "model-info: $info"
    contains "$info" "30 layers, hidden 576, 9 heads (d=64)"
    contains "$info" "272 in the file: 272 Llama (encoder)"
    "$CTXSIM" run configs/default.yaml model.path="$G" samples.num_samples=8 samples.seq_len=64 statistics.examples=[0] \
      output.dir="$TMP/run" > "$TMP/run.log" 2>&1 || fail "run: $(tail -3 "$TMP/run.log")"
    /usr/bin/python3 - "$TMP/run/store.h5" <<'PY' || fail "the store"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["complete"] == 1 and f.attrs["model_family"].decode() == "llama" and f.attrs["causal"] == 1
sent, n = f["samples/sentence_ids"][...], f["samples/n_valid"][...]
assert (sent[:, 0] == 0).all(), sent[:, 0]  # add_bos_token false: samples start with a word
assert (n == 64).all(), n
PY
    contains "$("$CTXSIM" summary "$TMP/run/store.h5")" "30 layers x 9 heads; Llama, causal attention"
    "$CTXSIM" inspect --text "The cat sat on the mat. It purred." --model "$G" --out "$TMP/inspect" > "$TMP/inspect.log" 2>&1 ||
      fail "inspect: $(tail -3 "$TMP/inspect.log")"
    [ -s "$TMP/inspect/report.html" ] || fail "inspect wrote no report"
    printf 'The cat sat on the mat.\nIt purred loudly.\nThe stock market fell today.\nInvestors sold their shares.\n' > "$TMP/text.txt"
    "$CTXSIM" segment configs/segment/choi.yaml model.path="$G" --text "$TMP/text.txt" --segments 2 > "$TMP/seg.out" 2>&1 ||
      fail "segment --text: $(tail -3 "$TMP/seg.out")"
    contains "$(cat "$TMP/seg.out")" "4 sentences in 2 segments"
    "$CTXSIM" init-model --like "$G" --layers 2 --seed 1 --out "$TMP/random" > /dev/null || fail "init-model --like the GGUF"
    for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do [ -f "$TMP/random/$f" ] || fail "init-model wrote no $f"; done
    text="The jury said 1,000  2 times: 'it's fine'."
    [ "$(echo "$text" | "$CTXSIM" tokenize --model "$TMP/random")" = "$(echo "$text" | "$CTXSIM" tokenize --model "$G")" ] ||
      fail "the random control's tokenizer.json gives other ids than the GGUF"
    # Broken files: truncated, and not GGUF at all.
    head -c 4000000 "$G" > "$TMP/cut.gguf"
    "$CTXSIM" model-info "$TMP/cut.gguf" > /dev/null 2> "$TMP/err" && fail "a truncated GGUF was read"
    contains "$(cat "$TMP/err")" "cut.gguf: tensor 'token_embd.weight' holds more bytes than the whole file (4000000): it is truncated"
    [ "$(grep -c '^ctxsim: error: ' "$TMP/err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/err")"
    echo "not a model" > "$TMP/text.gguf"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/text.gguf" samples.num_samples=4 output.dir="$TMP/bad" 2> "$TMP/err" &&
      fail "a text file named .gguf was run"
    contains "$(cat "$TMP/err")" "does not start with GGUF's magic bytes"
    [ ! -e "$TMP/bad/store.h5" ] || fail "a refused run left a store"
    # A well-formed GGUF of an architecture ctxsim does not read (written by the gguf package).
    .venv/bin/python - "$TMP/gemma.gguf" <<'PY' || fail "writing a gemma GGUF"
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], "gemma")
w.add_block_count(1)
w.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
    "$CTXSIM" model-info "$TMP/gemma.gguf" > /dev/null 2> "$TMP/err" && fail "a gemma GGUF was read"
    contains "$(cat "$TMP/err")" "is a GGUF of architecture 'gemma', and ctxsim reads llama, qwen2, qwen3"
    # rope_freqs.weight (Llama 3.1+'s rope scaling as factors; reference.gguf checks the values):
    # one factor per frequency, each positive; factors that are not llama3's run, but cannot be
    # said in a config.json, so init-model --like refuses them.
    for factors in "1 2 3" "1 -8" "1 3"; do
      .venv/bin/python - "$TMP/rope.gguf" $factors <<'PY' || fail "writing a GGUF with rope_freqs"
import sys, numpy as np, gguf
w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_block_count(1); w.add_embedding_length(8); w.add_head_count(2); w.add_feed_forward_length(16)
w.add_tensor("token_embd.weight", np.zeros((10, 8), dtype=np.float32))
w.add_tensor("rope_freqs.weight", np.array([float(x) for x in sys.argv[2:]], dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
      case $factors in
        "1 2 3") "$CTXSIM" model-info "$TMP/rope.gguf" > /dev/null 2> "$TMP/err" && fail "rope_freqs of 3 factors for 2 frequencies was read"
          contains "$(cat "$TMP/err")" "rope.gguf: tensor 'rope_freqs.weight': is [3], one factor per rotary frequency is [2]" ;;
        "1 -8") "$CTXSIM" model-info "$TMP/rope.gguf" > /dev/null 2> "$TMP/err" && fail "a negative rope factor was read"
          contains "$(cat "$TMP/err")" "rope.gguf: tensor 'rope_freqs.weight': factor 1 is -8.000000, not a positive number" ;;
        "1 3") "$CTXSIM" init-model --like "$TMP/rope.gguf" --vocab data/tokenizers/llama2/tokenizer.json --out "$TMP/rope-like" > /dev/null 2> "$TMP/err" &&
            fail "init-model --like wrote factors that are not llama3's"
          contains "$(cat "$TMP/err")" "rope.gguf: tensor 'rope_freqs.weight': scales the rotary frequencies by factors that are not Llama 3's"
          [ ! -e "$TMP/rope-like" ] || fail "a refused init-model left $TMP/rope-like" ;;
      esac
      [ "$(grep -c '^ctxsim: error: ' "$TMP/err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/err")"
    done
    ;;
  distilbert_run)
    # A seeded random DistilBERT through the whole job: a store whose layers and heads are the
    # config's, its summary, and its report.
    "$CTXSIM" init-model --family distilbert --preset bert-tiny --layers 3 --heads 4 --seed 5 --vocab data/vocab/bert-base-uncased.txt \
      --out "$TMP/m" > /dev/null || fail "init-model"
    contains "$(cat "$TMP/m/config.json")" '"DistilBertForMaskedLM"'
    info=$("$CTXSIM" model-info "$TMP/m") || fail "model-info: $info"
    contains "$info" "family:      distilbert (DistilBERT)"
    contains "$info" "3 layers, hidden 128, 4 heads (d=32), ffn 512, vocab 30522"
    contains "$info" "57 in the file: 52 DistilBERT (encoder), 5 ignored (heads, buffers), 0 unexpected"
    out=$("$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=12 statistics.examples=[0,3] output.report=false \
          output.dir="$TMP/out" 2> "$TMP/err") || fail "run: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "(distilbert, 3 layers, 4 heads, float32)"
    contains "$out" "rule top_fraction=0.01"
    /usr/bin/python3 - "$TMP/out/store.h5" > "$TMP/py" 2>&1 <<'PY' || fail "store: $(cat "$TMP/py")"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["complete"] == 1
assert f["per_sample/anchor_token"].shape == (1, 12, 3, 4), f["per_sample/anchor_token"].shape
g = f["stats/top_fraction=0.01"]
assert g["distance_hist"].shape == (3, 4, 128), g["distance_hist"].shape
assert (g["distance_hist"][...].sum(axis=2) == g["high_pairs"][...]).all()
assert g["high_pairs"][...].min() > 0
print("store ok")
PY
    [ "$("$CTXSIM" summary "$TMP/out/store.h5")" = "$out" ] || fail "summary differs from the run's"
    "$CTXSIM" report "$TMP/out/store.h5" > "$TMP/report.out" 2>&1 || fail "report: $(cat "$TMP/report.out")"
    [ -s "$TMP/out/report.html" ] || fail "no report.html"
    grep -q "<svg" "$TMP/out/figures/example1_L2H0_attention.svg" || fail "no attention figure of the last layer"
    ;;
  family_runs)
    # GPT-2 (causal) and RoBERTa from GPT-2's tokenizer files through the whole job (SPEC §7): the
    # samples in each family's frame, a float64 store that the independent PyTorch implementation
    # (scripts/torch_pipeline.py, with its own GPT-2 and RoBERTa forwards) matches count for count,
    # under three rules (one with its own separators, [SEP] naming the family's end token), the
    # family and causal attention in the store, summary and report, and compare of the two.
    [ -f data/vocab/gpt2/merges.txt ] || { echo "skip: no data/vocab/gpt2 (scripts/setup.sh)"; exit 77; }
    "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --seed 3 --vocab data/vocab/gpt2 --out "$TMP/gpt2" > /dev/null || fail "init gpt2"
    "$CTXSIM" init-model --family roberta --preset roberta-tiny --seed 3 --vocab data/vocab/gpt2 --out "$TMP/roberta" > /dev/null \
      || fail "init roberta"
    out=$("$CTXSIM" samples configs/default.yaml model.path="$TMP/gpt2" samples.num_samples=5 samples.seq_len=24 --show 1) || fail "samples"
    contains "$out" "<|endoftext|> | s0: "
    contains "$(grep -A1 '^sample 0' <<< "$out")" "24 valid tokens"
    out=$("$CTXSIM" samples configs/default.yaml model.path="$TMP/roberta" samples.num_samples=5 samples.seq_len=24 --show 1) || fail "samples"
    contains "$out" "<s> | s0: "
    contains "$out" " | </s>"
    # A folder with both a WordPiece vocab.txt and GPT-2's vocab.json + merges.txt: config.json's
    # family decides, in tokenize (--model and --vocab) and run alike; without a config.json,
    # one error naming both (issue 46 goal 3).
    mkdir -p "$TMP/both" && cp "$TMP/gpt2"/* "$TMP/both/" && cp data/vocab/bert-base-uncased.txt "$TMP/both/vocab.txt"
    for opt in --model --vocab; do
      [ "$(echo 'Hello world' | "$CTXSIM" tokenize $opt "$TMP/both" --tokens)" = "Hello Ġworld" ] || fail "tokenize $opt took vocab.txt"
    done
    "$CTXSIM" run configs/default.yaml model.path="$TMP/both" samples.num_samples=4 samples.seq_len=24 statistics.examples=[] \
      output.report=false output.dir="$TMP/both-run" > /dev/null 2> "$TMP/err" || fail "run with both kinds of files: $(cat "$TMP/err")"
    rm "$TMP/both/config.json"
    echo x | "$CTXSIM" tokenize --vocab "$TMP/both" > /dev/null 2> "$TMP/err" && fail "tokenize chose without a family"
    contains "$(cat "$TMP/err")" "holds both a WordPiece vocab.txt and byte-level BPE files (vocab.json + merges.txt)"
    # A folder whose config.json ctxsim does not read still tokenizes with its one tokenizer.
    mkdir -p "$TMP/wp" && cp data/vocab/bert-base-uncased.txt "$TMP/wp/vocab.txt" && echo '{"model_type": "mamba"}' > "$TMP/wp/config.json"
    [ "$(echo 'Hello world' | "$CTXSIM" tokenize --model "$TMP/wp" --tokens)" = "hello world" ] || fail "tokenize beside an unread config.json"
    for family in gpt2 roberta; do
      "$CTXSIM" run configs/default.yaml model.path="$TMP/$family" model.dtype=float64 samples.num_samples=24 runtime.batch_size=5 \
        statistics.examples=[0] output.report=false output.dir="$TMP/s-$family" \
        'selection=[{top_fraction: 0.02}, {relative_to_max: 0.9, attention_threshold: 0.3}, {absolute: 2.5, separators: [".", "the", "[SEP]"]}]' \
        > "$TMP/$family.out" 2> "$TMP/$family.err" || fail "run $family: $(cat "$TMP/$family.err")"
      out=$(/usr/bin/python3 scripts/torch_pipeline.py --store "$TMP/s-$family/store.h5" --model "$TMP/$family" --dtype float64 --batch 7 \
            --threads 1 --check 2>&1) || fail "$family: the PyTorch implementation disagrees: $(grep -v ': equal$' <<< "$out")"
      contains "$out" "check: all equal"
      [ "$(grep -c ': equal$' <<< "$out")" -ge 40 ] || fail "too few datasets compared: $out"
      /usr/bin/python3 - "$TMP/s-$family/store.h5" $family > "$TMP/py" 2>&1 <<'PY' || fail "$family store: $(cat "$TMP/py")"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
family = sys.argv[2]
assert f.attrs["model_family"].decode() == family, f.attrs["model_family"]
assert f.attrs["causal"] == (family == "gpt2")
ids, nv = f["samples/token_ids"][...], f["samples/n_valid"][...]
vocab = f["vocab/text"][...].tobytes().decode().split("\n")
begin, end, pad = {"gpt2": ("<|endoftext|>", None, "<|endoftext|>"), "roberta": ("<s>", "</s>", "<pad>")}[family]
assert all(vocab[t] == begin for t in ids[:, 0])
for row, n in zip(ids, nv):
    if end:
        assert vocab[row[n - 1]] == end
    assert all(vocab[t] == pad for t in row[n:])
tokens = f["stats/attention"].attrs["separator_tokens"].decode().split("\n")
assert tokens == [".", "\u0120.", ",", "\u0120,"] + (["</s>"] if end else []) + ["the", "\u0120the"], tokens
print("store ok")
PY
      out=$("$CTXSIM" summary "$TMP/s-$family/store.h5") || fail "summary $family"
      [ $family = gpt2 ] && contains "$out" "; GPT-2, causal attention"
      [ $family = roberta ] && contains "$out" "; RoBERTa, bidirectional attention"
    done
    contains "$(cat "$TMP/gpt2.err")" "note: [SEP] is left out of the separators: GPT-2 samples have no such token"
    grep -qF "[SEP] is left out" "$TMP/roberta.err" && fail "RoBERTa's [SEP] is its </s>"
    "$CTXSIM" report "$TMP/s-gpt2/store.h5" > /dev/null 2>&1 || fail "report"
    contains "$(cat "$TMP/s-gpt2/report.html")" "GPT-2, causal attention"
    contains "$(cat "$TMP/s-gpt2/report.html")" "CAUSAL=true"
    contains "$(cat "$TMP/s-gpt2/figures/example0_L1H0_attention.svg")" "key after query: causal attention has none"
    "$CTXSIM" report "$TMP/s-roberta/store.h5" > /dev/null 2>&1 || fail "report roberta"
    contains "$(cat "$TMP/s-roberta/report.html")" "CAUSAL=false"
    grep -q "causal attention has none" "$TMP/s-roberta/figures/example0_L1H0_attention.svg" && fail "RoBERTa drawn causal"
    "$CTXSIM" compare "$TMP/s-gpt2/store.h5" "$TMP/s-roberta/store.h5" --out "$TMP/cmp" > /dev/null 2> "$TMP/err" || fail "compare: $(cat "$TMP/err")"
    contains "$(cat "$TMP/cmp/compare.html")" "GPT-2, causal attention"
    ;;
  revision_dirty)
    # The revision a store records is "-dirty" only when the code differs from the commit (issue 36):
    # cmake/git_revision.cmake on a clone whose results, then code, are edited.
    git clone -q --local "$(pwd)" "$TMP/src" || fail "clone"
    revision() { cmake -DSRC="$TMP/src" -DOUT="$TMP/rev.h" -DVERSION=0 -P cmake/git_revision.cmake && grep -o '_REVISION "[^"]*"' "$TMP/rev.h"; }
    clean=$(revision) || fail "git_revision.cmake"
    [[ "$clean" != *dirty* ]] || fail "a clean clone is dirty: $clean"
    echo "edited" >> "$TMP/src/results/default/summary.txt"
    echo "edited" >> "$TMP/src/docs/SPEC.md"
    [ "$(revision)" = "$clean" ] || fail "results and docs made the revision dirty: $(revision)"
    echo "// edited" >> "$TMP/src/pipeline/main.cpp"
    [ "$(revision)" = "${clean%\"}-dirty\"" ] || fail "a code change is not dirty: $(revision)"
    ;;
  intervals)
    # SPEC 5.1: the bootstrap over work units, recomputed by an independent implementation from the
    # store's /units (Python: SplitMix64, the draws, the percentiles) against collect's _lo/_hi
    # columns per head; the units add up to /stats; summary, report and compare show them.
    "$CTXSIM" init-model --preset bert-tiny --seed 9 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
    for seed in 1 2; do
      "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=44 samples.seed=$seed runtime.unit_size=8 \
        statistics.examples=[0] output.dir="$TMP/sw/p$seed" > "$TMP/run$seed.out" 2> "$TMP/err" || fail "run: $(cat "$TMP/err")"
    done
    contains "$(cat "$TMP/run1.out")" "95% bootstrap intervals (1000 resamples of the 6 work units)"
    "$CTXSIM" collect "$TMP/sw" > /dev/null 2> "$TMP/err" || fail "collect: $(cat "$TMP/err")"
    /usr/bin/python3 - "$TMP/sw/p1/store.h5" "$TMP/sw/collect.csv" > "$TMP/py" 2>&1 <<'PY' || fail "intervals: $(cat "$TMP/py")"
import csv, math, sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
rule = "top_fraction=0.01"
u, b = f["units/" + rule], f["units/baseline"]
for g, name in [(u, "stats/" + rule), (b, "stats/baseline")]:
    for k, d in g.items():
        if d.attrs.get("CLASS") == b"DIMENSION_SCALE":
            continue
        assert (d[...].sum(axis=0) == f[name + "/" + k][...]).all(), k
U = u["high_pairs"].shape[0]
assert U == 6 and list(b["samples"][...]) == [8, 8, 8, 8, 8, 4]
M = (1 << 64) - 1
state = 20260514
def nxt():
    global state
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
def ratio(a, c):
    return np.where(c > 0, a / np.where(c > 0, c, 1), 0.0)
hp, st, ss, se, noise = (u[k][...].astype(float) for k in ("high_pairs", "same_token", "same_sentence", "sentence_eligible", "noise"))
near = u["distance_hist"][..., :6].sum(axis=-1).astype(float)
vp, sta, ssa, sea = (b[k][...].astype(float) for k in ("valid_pairs", "same_token_all", "same_sentence_all", "sentence_eligible_all"))
values = {k: [] for k in ("repetition_rate", "repetition_lift", "same_sentence_lift", "short_range_share", "noise_share")}
for r in range(1000):
    w = np.zeros(U)
    for _ in range(U):
        w[nxt() % U] += 1
    s = lambda x: np.tensordot(w, x, axes=1)
    rate = ratio(s(st), s(hp))
    values["repetition_rate"].append(rate)
    values["repetition_lift"].append(ratio(rate, s(sta) / s(vp)))
    values["same_sentence_lift"].append(ratio(ratio(s(ss), s(se)), s(ssa) / s(sea)))
    values["short_range_share"].append(ratio(s(near), s(hp)))
    values["noise_share"].append(ratio(s(noise), s(hp)))
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["point"] == "p1"]
assert len(rows) == 4, len(rows)
checked = 0
for name, v in values.items():
    v = np.sort(np.array(v), axis=0)   # [1000, L, H]
    lo, hi = v[25], v[974]
    for row in rows:
        l, h = int(row["layer"]), int(row["head"])
        for bound, want in (("_lo", lo[l, h]), ("_hi", hi[l, h])):
            got = float(row[name + bound])
            assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-9), (name + bound, l, h, got, want)
            checked += 1
        assert float(row[name + "_lo"]) <= float(row[name]) <= float(row[name + "_hi"]) or name.endswith("lift"), (name, row)
print("intervals: %d bounds agree" % checked)
PY
    contains "$(cat "$TMP/py")" "intervals: 40 bounds agree"
    # The report's per-layer figures draw them as bands, compare's table prints them.
    grep -q 'class="interval"' "$TMP/sw/p1/figures/repetition_by_layer.svg" || fail "no interval band in the report's figure"
    grep -q "Shaded: 95% bootstrap intervals" "$TMP/sw/p1/figures/index.json" || fail "the caption does not say what is shaded"
    "$CTXSIM" compare "$TMP/sw/p1" "$TMP/sw/p2" --out "$TMP/cmp" > /dev/null 2> "$TMP/err" || fail "compare: $(cat "$TMP/err")"
    grep -q '<small class="interval">\[' "$TMP/cmp/compare.html" || fail "no intervals in compare's table"
    grep -q 'class="interval"' "$TMP/cmp/figures/same_sentence_by_layer.svg" || fail "no band in compare's figure"
    # Issue 36 goal 2: config.yaml beside the store, the effective config; rerun, it finds the store
    # complete. A config.yaml of the user's own in an output folder stays.
    head -1 "$TMP/sw/p1/config.yaml" | grep -q "^# The effective config of store.h5 beside it, written by ctxsim" || fail "no config.yaml"
    contains "$(cat "$TMP/sw/p1/config.yaml")" "unit_size: 8"
    out=$("$CTXSIM" run "$TMP/sw/p1/config.yaml" 2>&1) || fail "rerun of config.yaml: $out"
    contains "$out" "is already complete for this config"
    mkdir -p "$TMP/mine" && echo "# mine" > "$TMP/mine/config.yaml"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=8 output.report=false output.dir="$TMP/mine" > /dev/null 2> "$TMP/err" \
      || fail "run into a folder with a config.yaml: $(cat "$TMP/err")"
    [ "$(cat "$TMP/mine/config.yaml")" = "# mine" ] || fail "the user's config.yaml was replaced"
    contains "$(cat "$TMP/err")" "config.yaml is not ctxsim's; it stays as it is"
    ;;
  inspect)
    # Issue 35 goal 3: one text to the explorer and a labelled HDF5 of every head, in one command.
    text="The cat sat on the mat. It purred, and the cat slept."
    out=$("$CTXSIM" inspect --text "$text" --out "$TMP/i" 2> "$TMP/err") || fail "inspect: $(cat "$TMP/err")"
    contains "$out" "explorer:  $TMP/i/report.html"
    for f in report.html heads.h5 store.h5 input.txt inspect.yaml; do [ -s "$TMP/i/$f" ] || fail "no $f"; done
    tokens=$(echo "$text" | "$CTXSIM" tokenize --model data/models/all-MiniLM-L6-v2 --tokens) || fail "tokenize"  # the default model's
    /usr/bin/python3 - "$TMP/i" "[CLS] $tokens [SEP]" > "$TMP/py" 2>&1 <<'PY' || fail "heads.h5: $(cat "$TMP/py")"
import sys, h5py, numpy as np, xarray as xr
d, expected = sys.argv[1], sys.argv[2].split()
ds = xr.open_dataset(d + "/heads.h5", engine="h5netcdf")
for axis in ("query", "key", "i", "j"):
    assert list(ds[axis].values) == expected, (axis, list(ds[axis].values), expected)
ctx, att, sim = ds["context"].values, ds["attention"].values, ds["similarity"].values
L, H, n, dim = ctx.shape
assert (L, H) == (6, 12) and n == len(expected), ctx.shape
want = np.einsum("lhid,lhjd->lhij", ctx.astype("f8"), ctx.astype("f8"))
want[:, :, np.arange(n), np.arange(n)] = 0
assert np.allclose(sim, want, rtol=1e-4, atol=1e-4 * abs(want).max()), abs(sim - want).max()
assert np.allclose(att.sum(-1), 1, atol=1e-5)
# The store the explorer draws from holds the same matrices (float16).
f = h5py.File(d + "/store.h5", "r")
assert f["samples/n_valid"][0] == n
assert np.allclose(f["examples/similarity"][0][:, :, :n, :n].astype("f4"), sim, rtol=2e-3, atol=2e-3 * abs(sim).max())
assert np.allclose(f["examples/attention"][0][:, :, :n, :n].astype("f4"), att, atol=1e-3)
print(ds["attention"].sel(layer=5, head=0, query="cat").values.round(3))
PY
    # The same text again is the same inspection; another text is not replaced without --overwrite.
    "$CTXSIM" inspect --text "$text" --out "$TMP/i" > /dev/null 2> "$TMP/err" || fail "inspect again: $(cat "$TMP/err")"
    before=$(cd "$TMP/i" && find . -type f | sort | xargs sha256sum | sha256sum)
    "$CTXSIM" inspect --text "Another text." --out "$TMP/i" > "$TMP/o" 2> "$TMP/err"; rc=$?
    [ $rc -eq 1 ] || fail "another text into the same --out: exit $rc"
    contains "$(cat "$TMP/err")" "--out $TMP/i: holds the inspection of another text or model"
    [ "$before" = "$(cd "$TMP/i" && find . -type f | sort | xargs sha256sum | sha256sum)" ] || fail "a refused inspect changed $TMP/i"
    printf 'Another text.\n\nA second paragraph here.\n' > "$TMP/t.txt"
    out=$("$CTXSIM" inspect --file "$TMP/t.txt" --out "$TMP/i" --overwrite 2> "$TMP/err") || fail "--overwrite: $(cat "$TMP/err")"
    contains "$out" "inspect: 10 tokens of $TMP/t.txt"  # [CLS] another text . a second paragraph here . [SEP]: both paragraphs
    # Usage errors: exit 2.
    "$CTXSIM" inspect --out "$TMP/u" > /dev/null 2> "$TMP/err"; [ $? -eq 2 ] || fail "no text: not a usage error"
    "$CTXSIM" inspect --text a --file "$TMP/t.txt" --out "$TMP/u" > /dev/null 2> "$TMP/err"; [ $? -eq 2 ] || fail "both: not a usage error"
    printf '\n  \n' > "$TMP/blank.txt"
    "$CTXSIM" inspect --file "$TMP/blank.txt" --out "$TMP/u" > /dev/null 2> "$TMP/err"; [ $? -eq 1 ] || fail "blank text accepted"
    contains "$(cat "$TMP/err")" "$TMP/blank.txt: has no text"
    [ ! -e "$TMP/u" ] || fail "a refused inspect made $TMP/u"
    # A causal model: no attention to keys after the query.
    if [ -f data/vocab/gpt2/merges.txt ]; then
      "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --seed 3 --vocab data/vocab/gpt2 --out "$TMP/gpt2" > /dev/null || fail "init gpt2"
      "$CTXSIM" inspect --text "$text" --model "$TMP/gpt2" --out "$TMP/g" > /dev/null 2> "$TMP/err" || fail "inspect gpt2: $(cat "$TMP/err")"
      /usr/bin/python3 -c "
import sys, numpy as np, xarray as xr
ds = xr.open_dataset('$TMP/g/heads.h5', engine='h5netcdf')
a = ds['attention'].values
assert ds.attrs['causal'] == 1 and list(ds['query'].values)[0] == '<|endoftext|>'
assert np.all(np.triu(a, 1) == 0) and np.allclose(a.sum(-1), 1, atol=1e-5)
" || fail "GPT-2 inspect"
    fi
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
