#!/usr/bin/env bash
# Hostile inputs, as a careful user would try them (issue 13's list): each is one clear error
# (one line naming the file, key or position, with a fix), exit code 1 and nothing damaged; or,
# where the input is legitimate, a run that works. hostile_test.sh CTXSIM CASE (from the source
# folder, by ctest; label cli).
set -uo pipefail
CTXSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CASE=$2
TMP=$(mktemp -d)
MNT=""
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2> /dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
lacks() { ! grep -qF -- "$2" <<< "$1" || fail "did not expect '$2' in: $1"; }
VOCAB=data/vocab/bert-base-uncased.txt

# one_error EXPECTED CMD…: exit 1 (RC=2: a usage error), nothing on stdout, one error line holding
# EXPECTED and a fix (a run may have logged its start first: every other line is one of its "ctxsim: " lines).
one_error() {
  local expect=$1 want=${RC:-1}; shift
  "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  local rc=$?
  [ $rc -eq "$want" ] || fail "exit $rc (expected $want) from: $* -- $(head -c 600 "$TMP/stderr")"
  [ ! -s "$TMP/stdout" ] || fail "printed output before failing: $* -- $(head -c 300 "$TMP/stdout")"
  [ "$(grep -c '^ctxsim: error: ' "$TMP/stderr")" -eq 1 ] || fail "not one error line: $* -- $(cat "$TMP/stderr")"
  [ "$(grep -vc '^ctxsim: ' "$TMP/stderr")" -eq 0 ] || fail "stray output: $* -- $(cat "$TMP/stderr")"
  contains "$(grep '^ctxsim: error: ' "$TMP/stderr")" "$expect"
  contains "$(cat "$TMP/stderr")" "; fix: "
  lacks "$(cat "$TMP/stderr")" "internal error"
}

tiny_model() {  # tiny_model DIR [init-model options]: a 2-layer random BERT
  local dir=$1; shift
  "$CTXSIM" init-model --preset bert-tiny --seed 5 --vocab "$VOCAB" --out "$dir" "$@" > /dev/null || fail "init-model $dir"
}
# Patches one float32 of a tensor in a safetensors file: patch_tensor FILE TENSOR INDEX VALUE
patch_tensor() {
  /usr/bin/python3 - "$@" <<'PY' || fail "patching $2"
import json, struct, sys
path, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    t = json.loads(f.read(n))[name]
    assert t["dtype"] == "F32"
    f.seek(8 + n + t["data_offsets"][0] + 4 * index)
    f.write(struct.pack("<f", value))
PY
}
RUN=(configs/default.yaml samples.num_samples=8 runtime.unit_size=4 output.report=false)

case "$CASE" in
  command_line)  # items 1, 2, 13, 19 and the --show bound of 12
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/out" > /dev/null 2>&1 || fail "run"
    S=$TMP/out/store.h5
    for h in a:b 0: : 99999999999999999999:0 0:0:0 0.5:1 '0:0 1:1' ' 1:1'; do
      one_error "is not LAYER:HEAD (two whole numbers, 0-based)" "$CTXSIM" summary "$S" --heads "$h"
      one_error "is not LAYER:HEAD (two whole numbers, 0-based)" "$CTXSIM" report "$S" --heads "$h" --out "$TMP/rep"
    done
    # A pair outside the model fails before any table is printed.
    one_error "--heads 99:0: not a LAYER:HEAD pair of this model (2 layers, 2 heads)" "$CTXSIM" summary "$S" --heads 99:0
    one_error "--heads 0:5: not a LAYER:HEAD pair of this model" "$CTXSIM" summary "$S" --heads 1:1,0:5
    # A malformed command line is a usage error: exit 2, as getopt tools say it.
    RC=2 one_error "ctxsim summary: --top: expected a whole number in [1, 1000], got '-1'" "$CTXSIM" summary "$S" --top -1
    RC=2 one_error "--top: expected a whole number in [1, 1000], got '1e9'" "$CTXSIM" summary "$S" --top 1e9
    RC=2 one_error "ctxsim samples: --show: expected a whole number in [0, 1000000], got '-1'" "$CTXSIM" samples configs/default.yaml --show -1
    RC=2 one_error "ctxsim pretrian: unknown subcommand" "$CTXSIM" pretrian --help
    RC=2 one_error "ctxsim sumary: unknown subcommand; fix: did you mean 'summary'?" "$CTXSIM" sumary --help
    RC=2 one_error "ctxsim summary: store is required" "$CTXSIM" summary
    RC=2 one_error "ctxsim run: The following argument was not expected: --bogus" "$CTXSIM" run configs/default.yaml --bogus
    # model.path and model.name together: an error naming both (the path used to win silently).
    one_error "model.path ('$TMP/m') and model.name ('bert-base-uncased') are both set" \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" model.name=bert-base-uncased output.dir="$TMP/both"
    [ ! -e "$TMP/both" ] || fail "a refused run made $TMP/both"
    # --help: an example per subcommand; the override footer only where a config is taken.
    for sub in $("$CTXSIM" --help | awk '/^Subcommands:/{on=1; next} on && /^$/{exit} on {print $1}'); do
      h=$("$CTXSIM" "$sub" --help) || fail "$sub --help"
      contains "$h" "Example:"
      contains "$h" "ctxsim $sub "
      if grep -q "Usage: ctxsim $sub \[OPTIONS\] config" <<< "$h"; then contains "$h" "overridden after CONFIG"; else lacks "$h" "overridden after CONFIG"; fi
    done
    [ ! -e "$TMP/rep" ] || fail "a refused report wrote $TMP/rep"
    out=$("$CTXSIM" summary "$S" --heads 1:1,0:0,1:1 --top 2) || fail "a valid --heads list"
    contains "$out" "L1 H1:"
    contains "$out" "L0 H0:"
    ;;
  inputs)  # items 3 and 12: bounded reads, binary files, folders, number ranges, special tokens
    one_error "/dev/zero: is a device, not the config file" timeout 20 "$CTXSIM" validate /dev/zero
    printf 'samples:\n  seed: 1\0\n' > "$TMP/nul.yaml"
    one_error "$TMP/nul.yaml: line 2, column 10 (byte 18): not a YAML text file (byte 0x00)" "$CTXSIM" validate "$TMP/nul.yaml"
    head -c 65536 "$CTXSIM" > "$TMP/elf"  # an executable's first 64 KiB (the whole binary is over the 4 MiB bound)
    one_error "$TMP/elf: line 1, column 1 (byte 0): not a YAML text file (byte 0x7F)" "$CTXSIM" validate "$TMP/elf"
    for key in samples.num_samples runtime.unit_size corpus.max_documents runtime.flush_units samples.stride_sentences; do
      one_error "$key: expected an integer in [" "$CTXSIM" validate configs/default.yaml "$key=4611686018427387904"
      contains "$(cat "$TMP/stderr")" ", 1000000000], got 4611686018427387904"
    done
    one_error "selection[0].absolute: expected a number, got 'abc'" "$CTXSIM" validate configs/default.yaml 'selection=[{absolute: abc}]'
    lacks "$(cat "$TMP/stderr")" "17976"
    one_error "selection[0].top_fraction: expected a number in (0, 1], got 2" "$CTXSIM" validate configs/default.yaml 'selection=[{top_fraction: 2}]'
    tiny_model "$TMP/m"
    mkdir -p "$TMP/folder_weights/model.safetensors"
    cp "$TMP/m/config.json" "$TMP/m/vocab.txt" "$TMP/folder_weights/"
    one_error "$TMP/folder_weights/model.safetensors: is a folder, not a model.safetensors file" "$CTXSIM" model-info "$TMP/folder_weights"
    grep -v '^\[CLS\]$' "$VOCAB" > "$TMP/no_cls.txt"
    one_error "$TMP/no_cls.txt: the vocabulary lacks [CLS] (" "$CTXSIM" tokenize --vocab "$TMP/no_cls.txt" < /dev/null
    one_error "$TMP/no_cls.txt: the vocabulary lacks [CLS] (" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" model.vocab="$TMP/no_cls.txt" output.dir="$TMP/o1"
    [ ! -e "$TMP/o1" ] || fail "a refused run left $TMP/o1"
    ;;
  family_files)  # issue 33: a family's files that do not belong together, each one error naming the file
    [ -f data/vocab/gpt2/merges.txt ] || { echo "skip: no data/vocab/gpt2 (scripts/setup.sh)"; exit 77; }
    tiny_model "$TMP/bert"
    "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --vocab data/vocab/gpt2 --out "$TMP/g" > /dev/null || fail "init gpt2"
    # GPT-2's config.json over BERT's tensors: the family the tensors look like is named.
    cp -r "$TMP/g" "$TMP/mix"
    cp "$TMP/bert/model.safetensors" "$TMP/mix/"
    one_error "$TMP/mix/config.json: model_type: declares a GPT-2 model ('gpt2'), but $TMP/mix/model.safetensors holds no GPT-2 layer (no tensor h.0.…); its tensors look like a BERT checkpoint's" \
      "$CTXSIM" model-info "$TMP/mix"
    # A head count that does not divide n_embd, in GPT-2's own key.
    cp -r "$TMP/g" "$TMP/div"
    sed -i 's/"n_head": 2/"n_head": 3/' "$TMP/div/config.json"
    one_error "$TMP/div/config.json: n_head: n_embd 128 is not divisible by 3 heads" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/div" output.dir="$TMP/o_div"
    [ ! -e "$TMP/o_div" ] || fail "a refused run left $TMP/o_div"
    # A GPT-2 folder whose vocab.json lost <|endoftext|>: the frame's token is named, before any work.
    cp -r "$TMP/g" "$TMP/noeos"
    /usr/bin/python3 -c 'import json, sys; p = sys.argv[1]; v = json.load(open(p)); del v["<|endoftext|>"]; json.dump(v, open(p, "w"))' \
      "$TMP/noeos/vocab.json"
    one_error "it lacks <|endoftext|>, the token that starts every GPT-2 sample" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/noeos" output.dir="$TMP/o_eos"
    [ ! -e "$TMP/o_eos" ] || fail "a refused run left $TMP/o_eos"
    # vocab.json without its merges.txt, and a merge whose result is not a token.
    cp -r "$TMP/g" "$TMP/nomerges"
    rm "$TMP/nomerges/merges.txt"
    one_error "has vocab.json but no merges.txt" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/nomerges" output.dir="$TMP/o_nm"
    cp -r "$TMP/g" "$TMP/badmerge"
    printf '#version: 0.2\nĠ t\nq z\n' > "$TMP/badmerge/merges.txt"
    one_error "$TMP/badmerge/merges.txt:3: the merge gives 'qz', which is not a token of the vocabulary" \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/badmerge" output.dir="$TMP/o_bm"
    ;;
  model_checks)  # items 4, 15, 16: config.json against the weights, non-finite values
    tiny_model "$TMP/m"
    for layers in 1000000000000 1000000; do
      cp -r "$TMP/m" "$TMP/huge$layers"
      sed -i "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": $layers/" "$TMP/huge$layers/config.json"
      one_error "$TMP/huge$layers/config.json: num_hidden_layers: $layers is outside what ctxsim supports (1 to 1024)" \
        timeout 10 "$CTXSIM" model-info "$TMP/huge$layers"
    done
    for layers in 1 3; do
      cp -r "$TMP/m" "$TMP/l$layers"
      sed -i "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": $layers/" "$TMP/l$layers/config.json"
      one_error "config.json: num_hidden_layers: declares $layers layer(s), but $TMP/l$layers/model.safetensors holds 2" \
        "$CTXSIM" model-info "$TMP/l$layers"
    done
    one_error "init-model: num_hidden_layers: 5000 is outside what ctxsim supports" \
      "$CTXSIM" init-model --preset bert-tiny --layers 5000 --vocab "$VOCAB" --out "$TMP/never"
    [ ! -e "$TMP/never" ] || fail "a refused init-model wrote $TMP/never"
    for v in nan inf; do
      cp -r "$TMP/m" "$TMP/$v"
      patch_tensor "$TMP/$v/model.safetensors" encoder.layer.1.attention.self.key.weight 5 "$v"
      one_error "$TMP/$v/model.safetensors: tensor 'encoder.layer.1.attention.self.key.weight': 1 of 16384 values are not finite" \
        "$CTXSIM" run "${RUN[@]}" model.path="$TMP/$v" output.dir="$TMP/out_$v"
      [ ! -e "$TMP/out_$v" ] || fail "a refused run left $TMP/out_$v"
    done
    # Finite weights whose activations overflow: the first sample and layer are named.
    cp -r "$TMP/m" "$TMP/overflow"
    for i in 0 1 2 3; do patch_tensor "$TMP/overflow/model.safetensors" encoder.layer.1.attention.output.dense.bias $i 3e38; done
    one_error "sample 0, layer 1: the model's activations are not finite (NaN or inf)" \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/overflow" output.dir="$TMP/out_overflow"
    # (issue 31) Two tensors for one parameter (a prefixed copy, a legacy LayerNorm name beside the
    # new one): neither is picked, both are named.
    dup() {  # dup DIR EXISTING NEW: a copy of tensor EXISTING stored again as NEW
      cp -r "$TMP/m" "$1"
      /usr/bin/python3 - "$1/model.safetensors" "$2" "$3" <<'PY' || fail "crafting $1"
import json, struct, sys
path, old, new = sys.argv[1:]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
t = dict(header[old]); a, b = t["data_offsets"]
t["data_offsets"] = [len(data), len(data) + b - a]
header[new] = t
data += data[a:b]
h = json.dumps(header).encode(); h += b" " * (-(8 + len(h)) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
    }
    dup "$TMP/prefixed" embeddings.word_embeddings.weight bert.embeddings.word_embeddings.weight
    one_error "holds two tensors for the parameter embeddings.word_embeddings.weight: 'bert.embeddings.word_embeddings.weight' and 'embeddings.word_embeddings.weight'" \
      "$CTXSIM" model-info "$TMP/prefixed"
    dup "$TMP/gamma" embeddings.LayerNorm.weight embeddings.LayerNorm.gamma
    one_error "holds two tensors for the parameter embeddings.LayerNorm.weight" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/gamma" output.dir="$TMP/o_gamma"
    [ ! -e "$TMP/o_gamma" ] || fail "a refused checkpoint left a store"
    # Another family's weights under a BERT config.json: said as such, not "0 layers (… -1)".
    "$CTXSIM" init-model --family distilbert --preset bert-tiny --seed 5 --vocab "$VOCAB" --out "$TMP/distil" > /dev/null || fail "init-model distilbert"
    cp "$TMP/m/config.json" "$TMP/distil/config.json"
    one_error "holds no BERT layer (no tensor encoder.layer.0.…); its tensors look like a DistilBERT checkpoint's" "$CTXSIM" model-info "$TMP/distil"
    lacks "$(cat "$TMP/stderr")" "layer.-1"
    ;;
  full_disk)  # item 5: a full file system is said before anything is written, no crash, no store
    MNT=$TMP/small
    mkdir -p "$MNT"
    mount -t tmpfs -o size=1200k tmpfs "$MNT" 2> /dev/null || { echo "SKIP [$CASE]: cannot mount a tmpfs here (needs root)"; MNT=""; exit 77; }
    tiny_model "$TMP/m"
    for out in "$MNT/run" "$MNT/a/b"; do
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$out" > "$TMP/stdout" 2> "$TMP/stderr"
      rc=$?
      [ $rc -eq 1 ] || fail "exit $rc on a full disk: $(cat "$TMP/stderr")"
      contains "$(cat "$TMP/stderr")" "output.dir: no space for the store in $out: it needs about"
      contains "$(cat "$TMP/stderr")" "'ctxsim plan CONFIG' estimates the store's size"
      [ ! -e "$out" ] || fail "left $(find "$out")"
    done
    # With the check out of the way (a test hook), HDF5 itself meets the full disk: the same
    # message, no crash at exit (HDF5 1.10 crashes on a file it could not close), nothing left.
    CTXSIM_SKIP_SPACE_CHECK=1 "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$MNT/r2" > /dev/null 2> "$TMP/stderr"
    rc=$?
    [ $rc -eq 1 ] || fail "exit $rc on a full disk: $(cat "$TMP/stderr")"
    contains "$(cat "$TMP/stderr")" "$MNT/r2/store.h5: No space left on device: the store needs about"
    lacks "$(cat "$TMP/stderr")" "internal error"
    [ -z "$(ls -A "$MNT")" ] || fail "left on the full disk: $(ls -AR "$MNT")"
    # (issue 31) segment checks the room for its store too, before it computes anything.
    "$CTXSIM" segment configs/segment/choi.yaml output.dir="$MNT/seg" > /dev/null 2> "$TMP/stderr"
    rc=$?
    [ $rc -eq 1 ] || fail "segment: exit $rc on a full disk: $(tail -3 "$TMP/stderr")"
    contains "$(cat "$TMP/stderr")" "output.dir: no space for the store in $MNT/seg: it needs about"
    [ ! -e "$MNT/seg/store.h5" ] || fail "segment left a store on the full disk"
    ;;
  output_dir)  # items 6 and 14: folders that cannot be made, files that are not stores
    tiny_model "$TMP/m"
    touch "$TMP/afile"
    one_error "output.dir: cannot create the folder '$TMP/afile/x': Not a directory; fix: a part of that path is a file" \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/afile/x"
    one_error "output.dir: '$TMP/afile' exists and is not a folder" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/afile"
    one_error "output.dir: cannot create the folder '/proc/ctxsim-test'" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir=/proc/ctxsim-test
    mkdir -p "$TMP/ro"
    if mount -t tmpfs -o ro,size=64k tmpfs "$TMP/ro" 2> /dev/null; then
      MNT=$TMP/ro
      one_error "output.dir: cannot create the folder '$TMP/ro/x': Read-only file system" \
        "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/ro/x"
    fi
    mkdir -p "$TMP/text" "$TMP/dir/store.h5"
    echo "my notes" > "$TMP/text/store.h5"
    one_error "$TMP/text/store.h5 exists and is not a ctxsim store: not an HDF5 file" \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/text"
    [ "$(cat "$TMP/text/store.h5")" = "my notes" ] || fail "a file that is not a store was overwritten"
    one_error "$TMP/dir/store.h5 exists and is not a ctxsim store: a folder" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/dir"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/text" output.overwrite=true > /dev/null 2>&1 || fail "overwrite=true"
    [[ $("$CTXSIM" status "$TMP/text/store.h5") == complete* ]] || fail "not replaced"
    ;;
  run_lock)  # item 7: one run per output folder, a stale lock taken over
    tiny_model "$TMP/m"
    args() { L=(configs/default.yaml model.path="$TMP/m" samples.num_samples=40 runtime.unit_size=4 output.report=false output.dir="$1"); }
    args "$TMP/out"
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" > "$TMP/first.out" 2> "$TMP/first.err" &
    first=$!
    for _ in $(seq 1 100); do [ -e "$TMP/out/run.lock" ] && break; sleep 0.1; done
    [ -e "$TMP/out/run.lock" ] || fail "no run.lock while a run holds the folder"
    one_error "output.dir: '$TMP/out' is in use by another run (host $(hostname), pid $first" "$CTXSIM" run "${L[@]}"
    contains "$(cat "$TMP/stderr")" "if that run is dead, delete $TMP/out/run.lock"
    wait $first || fail "the first run failed: $(cat "$TMP/first.err")"
    [ ! -e "$TMP/out/run.lock" ] || fail "the lock outlived its run"
    # A holder killed with SIGKILL leaves its lock; the next run takes it over and resumes.
    rm -rf "$TMP/out"
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" runtime.flush_units=1 > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [2-9]" && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    [ -e "$TMP/out/run.lock" ] || fail "SIGKILL removed the lock?"
    "$CTXSIM" run "${L[@]}" runtime.flush_units=1 > /dev/null 2> "$TMP/err" || fail "a dead holder's lock was not taken over: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "resuming"
    # A holder on another host: alive while its heartbeat is fresh, stale after 10 minutes;
    # a requeued SLURM job takes over its own lock.
    args "$TMP/o2"
    mkdir -p "$TMP/o2"
    held='host=node-17\npid=4242\nticks=1\njob=777\nstarted=2026-01-01T00:00:00Z\n'
    printf "$held" > "$TMP/o2/run.lock"
    one_error "'$TMP/o2' is in use by another run (host node-17, pid 4242, SLURM job 777, since 2026-01-01T00:00:00Z" "$CTXSIM" run "${L[@]}"
    SLURM_JOB_ID=777 "$CTXSIM" run "${L[@]}" samples.num_samples=8 > /dev/null 2>&1 || fail "a requeued job could not take over its own lock"
    printf "$held" > "$TMP/o2/run.lock"
    touch -d '-11 minutes' "$TMP/o2/run.lock"
    "$CTXSIM" run "${L[@]}" samples.num_samples=8 > /dev/null 2> "$TMP/err" || fail "a lock silent for 11 minutes was not taken over: $(cat "$TMP/err")"
    [ ! -e "$TMP/o2/run.lock" ] || fail "lock left behind"
    ;;
  vocab_padding)  # item 8: vocab_size larger than vocab.txt (models pad it): writer and readers agree
    { cat "$VOCAB"; for i in $(seq 1 78); do echo "[unused_pad$i]"; done; } > "$TMP/padded.txt"
    "$CTXSIM" init-model --preset bert-tiny --seed 5 --vocab "$TMP/padded.txt" --out "$TMP/m" > /dev/null || fail "init-model"
    cp "$VOCAB" "$TMP/m/vocab.txt"
    contains "$(cat "$TMP/m/config.json")" '"vocab_size": 30600'
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=8 statistics.examples=[0] \
      output.dir="$TMP/out" > /dev/null 2> "$TMP/err" || fail "run: $(cat "$TMP/err")"
    out=$("$CTXSIM" summary "$TMP/out/store.h5" 2> "$TMP/err") || fail "summary rejects the store: $(cat "$TMP/err")"
    contains "$out" "top anchors"
    [ -s "$TMP/out/report.html" ] || fail "no report"
    mkdir -p "$TMP/sweep/p" && cp "$TMP/out/store.h5" "$TMP/sweep/p/"
    "$CTXSIM" collect "$TMP/sweep" > /dev/null 2> "$TMP/err" || fail "collect rejects the store: $(cat "$TMP/err")"
    ;;
  duplicate_rules)  # item 9
    one_error "selection: rules 0 and 1 are the same rule (top_fraction=0.01)" \
      "$CTXSIM" validate configs/default.yaml 'selection=[{top_fraction: 0.01}, {top_fraction: 0.01}]'
    one_error "rules 0 and 2 are the same rule (relative_to_max=0.9)" \
      "$CTXSIM" run configs/default.yaml 'selection=[{relative_to_max: 0.9}, {top_fraction: 0.01}, {relative_to_max: 0.90000001}]' output.dir="$TMP/o"
    [ ! -e "$TMP/o" ] || fail "a refused run left $TMP/o"
    printf 'selection:\n  - absolute: 2\n  - absolute: 2.0\n' > "$TMP/dup.yaml"
    one_error "$TMP/dup.yaml:2:3: selection: rules 0 and 1 are the same rule (absolute=2)" "$CTXSIM" validate "$TMP/dup.yaml"
    # Different per-rule attention settings make different rules; a "/" in a separator is fine.
    "$CTXSIM" validate configs/default.yaml 'selection=[{top_fraction: 0.01}, {top_fraction: 0.01, attention_threshold: 0.2}]' > /dev/null \
      || fail "rules that differ in their attention threshold were refused"
    ;;
  status_files)  # items 10 and 14: say what a file is; an unreadable resume state is an error
    : > "$TMP/empty.h5"
    echo "hello" > "$TMP/text.h5"
    mkdir -p "$TMP/folder.h5"
    head -c 4000 /dev/urandom > "$TMP/random.h5"
    /usr/bin/python3 -c "import h5py; h5py.File('$TMP/other.h5', 'w').create_dataset('x', data=[1, 2])"
    for f in empty:"an empty file" text:"not an HDF5 file" folder:"a folder, not a store file" random:"not an HDF5 file" \
             other:"an HDF5 file that ctxsim did not write"; do
      name=${f%%:*}; what=${f#*:}
      for cmd in status summary report; do one_error "$TMP/$name.h5: not a ctxsim store: $what" "$CTXSIM" $cmd "$TMP/$name.h5"; done
    done
    one_error "$TMP/none.h5: no store here" "$CTXSIM" status "$TMP/none.h5"
    tiny_model "$TMP/m"
    L=(configs/default.yaml model.path="$TMP/m" samples.num_samples=40 runtime.unit_size=4 runtime.flush_units=1 output.report=false output.dir="$TMP/out")
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [2-9]" && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    # A truncated store, then one whose resume state is damaged: said, and nothing restarts from zero.
    cp "$TMP/out/store.h5" "$TMP/store.keep"
    head -c 2000 "$TMP/store.keep" > "$TMP/trunc.h5"
    one_error "$TMP/trunc.h5: not a ctxsim store: an HDF5 file that cannot be opened (truncated or damaged)" "$CTXSIM" status "$TMP/trunc.h5"
    printf 'garbage' >> "$TMP/out/store.h5.progress"
    one_error "$TMP/out/store.h5.progress: the resume state is damaged (its checksum does not match)" "$CTXSIM" status "$TMP/out/store.h5"
    one_error "$TMP/out/store.h5.progress: the resume state is damaged" "$CTXSIM" run "${L[@]}"
    contains "$(cat "$TMP/stderr")" "delete it to start the run over"
    rm "$TMP/out/store.h5.progress"
    contains "$("$CTXSIM" status "$TMP/out/store.h5")" "started, no unit done yet (no resume state beside it)"
    "$CTXSIM" run "${L[@]}" > /dev/null 2> "$TMP/err" || fail "rerun without a resume state: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "no resume state beside it): starting it over"
    ;;
  mpi_singletons)  # commands no launcher started, side by side: each runs as an isolated Open MPI
    # singleton in a session folder of its own (a shared one raced), and leaves none behind
    tiny_model "$TMP/m"
    mkdir "$TMP/tmp"
    CTXSIM_UNIT_DELAY_MS=300 TMPDIR="$TMP/tmp" "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=16 \
      runtime.unit_size=4 output.report=false output.dir="$TMP/out" > /dev/null 2> "$TMP/err" &
    job=$!
    for _ in $(seq 1 100); do [ -f "$TMP/out/store.h5.progress" ] && break; sleep 0.1; done
    ls "$TMP/tmp" | grep -q '^ctxsim-mpi\.' || fail "no session folder of its own while it runs: $(ls -A "$TMP/tmp")"
    [ -z "$(pgrep -P $job orted)" ] || fail "the run started Open MPI's orted"
    wait $job || fail "run: $(cat "$TMP/err")"
    pids=()
    for i in $(seq 1 8); do
      TMPDIR="$TMP/tmp" "$CTXSIM" status "$TMP/out/store.h5" > "$TMP/status$i" 2>&1 &
      pids+=($!)
    done
    for i in $(seq 1 8); do
      wait "${pids[$((i - 1))]}" || fail "status $i of 8 side by side: $(cat "$TMP/status$i")"
      contains "$(cat "$TMP/status$i")" "complete"
    done
    [ -z "$(ls -A "$TMP/tmp")" ] || fail "MPI session folders left behind in TMPDIR: $(ls -A "$TMP/tmp")"
    # A run killed outright cannot remove its folder: the next command does, and only folders of
    # this host whose process is gone.
    CTXSIM_UNIT_DELAY_MS=300 TMPDIR="$TMP/tmp" "$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=16 \
      runtime.unit_size=4 output.report=false output.dir="$TMP/killed" > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 100); do [ -f "$TMP/killed/store.h5.progress" ] && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    ls "$TMP/tmp" | grep -q "^ctxsim-mpi\.$(hostname)\.$victim\." || fail "the killed run's folder is not there: $(ls -A "$TMP/tmp")"
    sleep 30 & alive=$!
    mkdir "$TMP/tmp/ctxsim-mpi.$(hostname).$alive.keep" "$TMP/tmp/ctxsim-mpi.otherhost.$victim.keep"
    contains "$(TMPDIR="$TMP/tmp" "$CTXSIM" status "$TMP/out/store.h5" 2>&1)" "complete"
    kill $alive
    [ "$(ls "$TMP/tmp" | sort)" = "$(printf '%s\n' "ctxsim-mpi.$(hostname).$alive.keep" "ctxsim-mpi.otherhost.$victim.keep" | sort)" ] ||
      fail "stale session folders: expected only those of a live process and of another host, found: $(ls -A "$TMP/tmp")"
    rm -r "$TMP/tmp"/*
    # A user's own Open MPI setting wins (here: with orted), and the command works as before.
    contains "$(OMPI_MCA_ess_singleton_isolated=0 TMPDIR="$TMP/tmp" "$CTXSIM" status "$TMP/out/store.h5" 2>&1)" "complete"
    ;;
  identity)  # item 11: a resume from another spelling of output.dir; differing keys named
    tiny_model "$TMP/m"
    L=(configs/default.yaml model.path="$TMP/m" samples.num_samples=40 runtime.unit_size=4 runtime.flush_units=1 output.report=false)
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" output.dir="$TMP/out" > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [2-9]" && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    mv "$TMP/out" "$TMP/moved"
    rel=$(realpath --relative-to="$PWD" "$TMP")
    "$CTXSIM" run "${L[@]}" output.dir="$rel//moved/" > /dev/null 2> "$TMP/err" \
      || fail "resume from a moved, relative, oddly spelled output.dir: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "resuming"
    one_error "holds a run with a different config: samples.seed: 42 → 7; runtime.unit_size: 4 → 8" \
      "$CTXSIM" run "${L[@]}" output.dir="$TMP/moved" runtime.unit_size=8 samples.seed=7
    ;;
  sigint)  # item 17: Ctrl-C saves progress like SIGTERM and says how to resume
    tiny_model "$TMP/m"
    L=(configs/default.yaml model.path="$TMP/m" samples.num_samples=40 runtime.unit_size=4 output.report=false output.dir="$TMP/out")
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" > /dev/null 2> "$TMP/err" &
    pid=$!
    for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [1-9]" && break; sleep 0.1; done
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -eq 75 ] || fail "exit $rc after SIGINT, expected 75: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "Ctrl-C: saving progress after this round"
    contains "$(cat "$TMP/err")" "SIGINT: progress saved ("
    contains "$(cat "$TMP/err")" "rerun the same command to resume"
    "$CTXSIM" run "${L[@]}" > /dev/null 2> "$TMP/err2" || fail "resume: $(cat "$TMP/err2")"
    contains "$(cat "$TMP/err2")" "resuming"
    ;;
  corpus_notes)  # item 18: content that is dropped or kept as is is counted and said once
    mkdir -p "$TMP/c"
    cp data/brown/ca01 data/brown/ca02 "$TMP/c/"
    printf 'The/at dog/nn barked loudly/rb ./.\nA/at c\0at/nn sat/vbd ./.\n' > "$TMP/c/ca03"
    ln -s /nonexistent "$TMP/c/ca04"
    mkdir "$TMP/c/ca05"
    "$CTXSIM" samples configs/default.yaml corpus.path="$TMP/c" corpus.split=all --show 0 > /dev/null 2> "$TMP/err" || fail "samples: $(cat "$TMP/err")"
    [ "$(grep -c "corpus $TMP/c: " "$TMP/err")" -eq 1 ] || fail "not said once: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "1 NUL byte(s) dropped"
    contains "$(cat "$TMP/err")" "1 Brown token(s) without a /tag kept whole as words"
    contains "$(cat "$TMP/err")" "2 folder entries skipped: ca04 (a link to nothing readable), ca05 (not a file)"
    "$CTXSIM" samples configs/default.yaml --show 0 > /dev/null 2> "$TMP/err" || fail "samples"
    lacks "$(cat "$TMP/err")" "corpus data/brown:"  # the real Brown corpus has nothing to say
    ;;
  # ---- third round (issue 22) ------------------------------------------------------------
  resume_inputs)  # 1: a resume or rerun over changed inputs is refused, naming what changed
    tiny_model "$TMP/m"
    mkdir -p "$TMP/c" && cp data/brown/ca0[1-4] "$TMP/c/"
    L=(configs/default.yaml model.path="$TMP/m" corpus.path="$TMP/c" corpus.split=all samples.num_samples=40 runtime.unit_size=4 runtime.flush_units=1
       output.report=false output.dir="$TMP/out")
    interrupted() {  # a run killed after its first durable units
      rm -rf "$TMP/out"
      CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" > /dev/null 2>&1 &
      local victim=$!
      for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [2-9]" && break; sleep 0.1; done
      kill -9 $victim; wait $victim 2> /dev/null
      "$CTXSIM" status "$TMP/out/store.h5" | grep -q "units done:" || fail "no interrupted store"
    }
    interrupted
    cp "$TMP/m/model.safetensors" "$TMP/weights.bak"
    patch_tensor "$TMP/m/model.safetensors" encoder.layer.0.attention.self.query.weight 0 0.5
    one_error "was made from other inputs: the model's weights ($TMP/m/model.safetensors" "$CTXSIM" run "${L[@]}"
    contains "$(cat "$TMP/stderr")" "set output.overwrite=true to start over"
    cp "$TMP/weights.bak" "$TMP/m/model.safetensors"
    printf 'The/at cat/nn sat/vbd ./.\n' >> "$TMP/c/ca02"
    one_error "was made from other inputs: the corpus ($TMP/c" "$CTXSIM" run "${L[@]}"
    sed -i '2000s/.*/changedtoken/' "$TMP/m/vocab.txt"
    one_error "the vocabulary ($TMP/m/vocab.txt" "$CTXSIM" run "${L[@]}"
    # A complete store answers only for its own inputs.
    "$CTXSIM" run "${L[@]}" output.overwrite=true > /dev/null 2>&1 || fail "overwrite"
    "$CTXSIM" run "${L[@]}" > "$TMP/again" 2> /dev/null || fail "rerun of a complete store"
    grep -q "rule top_fraction" "$TMP/again" || fail "rerun printed no summary"
    patch_tensor "$TMP/m/model.safetensors" encoder.layer.1.output.dense.weight 3 0.25
    one_error "was made from other inputs: the model's weights" "$CTXSIM" run "${L[@]}"
    ;;
  report_recovery)  # 2: a kill while the report is written; the rerun finishes it
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.report=true statistics.examples=[0] output.dir="$TMP/out" > /dev/null 2>&1 || fail "run"
    [ -s "$TMP/out/report.html" ] || fail "no report"
    # What a SIGKILL in the middle leaves: the staging folder, no page.
    rm "$TMP/out/report.html"
    mkdir -p "$TMP/out/figures.partial" && echo half > "$TMP/out/figures.partial/distance_by_layer.svg"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.report=true statistics.examples=[0] output.dir="$TMP/out" > "$TMP/o" 2> "$TMP/err" \
      || fail "rerun: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "its report is missing: writing it"
    [ -s "$TMP/out/report.html" ] || fail "the rerun did not write the report"
    [ ! -e "$TMP/out/figures.partial" ] || fail "staging left behind"
    grep -q "rule top_fraction" "$TMP/o" || fail "no summary after the report"
    ;;
  user_files)  # 3: report and compare write only their own files, and refuse to overwrite others'
    tiny_model "$TMP/m"
    # init-model: the same model again is no change; another one is refused unless --overwrite.
    tiny_model "$TMP/m"
    before=$(cd "$TMP/m" && sha256sum ./* | sha256sum)
    one_error "--out $TMP/m: already holds a different model (its config.json, model.safetensors would change)" \
      "$CTXSIM" init-model --preset bert-tiny --layers 3 --seed 6 --vocab "$VOCAB" --out "$TMP/m"
    [ "$before" = "$(cd "$TMP/m" && sha256sum ./* | sha256sum)" ] || fail "a refused init-model changed $TMP/m"
    [ -z "$(ls -A "$TMP" | grep init-model)" ] || fail "init-model left its staging folder"
    "$CTXSIM" init-model --preset bert-tiny --seed 6 --vocab "$VOCAB" --out "$TMP/m6" > /dev/null || fail "init-model m6"
    "$CTXSIM" init-model --preset bert-tiny --seed 6 --vocab "$VOCAB" --out "$TMP/m" --overwrite > /dev/null || fail "init-model --overwrite"
    cmp -s "$TMP/m/model.safetensors" "$TMP/m6/model.safetensors" || fail "--overwrite did not replace the model"
    tiny_model "$TMP/m" --overwrite
    for seed in 1 2; do
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" samples.seed=$seed output.report=true output.dir="$TMP/r$seed" > /dev/null 2>&1 || fail "run $seed"
    done
    # A user's own file in the folder a report goes to stays; the report is written.
    mkdir -p "$TMP/rep/figures" && echo mine > "$TMP/rep/figures/keep.txt"
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/rep" > /dev/null 2> "$TMP/err" || fail "report --out: $(cat "$TMP/err")"
    [ "$(cat "$TMP/rep/figures/keep.txt")" = mine ] || fail "the report deleted a user's file"
    [ -s "$TMP/rep/report.html" ] && [ -s "$TMP/rep/figures/distance_overlay.png" ] || fail "no report written"
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/rep" > /dev/null 2>&1 || fail "a second report over the first"
    [ "$(cat "$TMP/rep/figures/keep.txt")" = mine ] || fail "the second report deleted a user's file"
    # compare into a run's folder would overwrite its report's figures: refused, nothing touched.
    before=$(cd "$TMP/r1/figures" && sha256sum * | sha256sum)
    one_error "$TMP/r1/figures: holds the figures of $TMP/r1/report.html" \
      "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/r1"
    [ "$before" = "$(cd "$TMP/r1/figures" && sha256sum * | sha256sum)" ] || fail "compare changed run 1's figures"
    [ ! -e "$TMP/r1/compare.html" ] || fail "compare wrote its page anyway"
    # A file of one of our names that ctxsim did not write is not replaced.
    mkdir -p "$TMP/cmp/figures" && echo mine > "$TMP/cmp/figures/distance_by_layer.png"
    one_error "$TMP/cmp/figures/distance_by_layer.png: exists and ctxsim did not write it" \
      "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/cmp"
    [ "$(cat "$TMP/cmp/figures/distance_by_layer.png")" = mine ] || fail "compare replaced a user's file"
    "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/cmp2" > /dev/null 2>&1 || fail "compare into a new folder"
    # Pages and inspections (issue 46 goal 5): a report.html or compare.html no figure index claims
    # is a user's, replaced only with --overwrite; inspect --out keeps a folder of files of its
    # names that it did not write; the publish lock is never opened through a symbolic link.
    mkdir -p "$TMP/own" && echo mine > "$TMP/own/report.html" && echo mine > "$TMP/own/compare.html"
    one_error "$TMP/own/report.html: exists and ctxsim did not write it" "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/own"
    one_error "$TMP/own/compare.html: exists and ctxsim did not write it" \
      "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/own"
    [ "$(cat "$TMP/own/report.html")$(cat "$TMP/own/compare.html")" = minemine ] || fail "a user's page was replaced"
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/own" --overwrite > /dev/null 2>&1 || fail "report --overwrite"
    grep -q "<html" "$TMP/own/report.html" || fail "--overwrite did not replace the page"
    mkdir -p "$TMP/ins" && echo mine > "$TMP/ins/input.txt"
    one_error "--out $TMP/ins: holds input.txt, which ctxsim inspect did not write" \
      "$CTXSIM" inspect --text "The cat sat." --model "$TMP/m" --out "$TMP/ins"
    [ "$(cat "$TMP/ins/input.txt")" = mine ] || fail "inspect replaced a user's input.txt"
    echo outside > "$TMP/outside.txt"
    mkdir -p "$TMP/lk" && ln -s "$TMP/outside.txt" "$TMP/lk/.ctxsim-publish.lock"
    one_error "$TMP/lk/.ctxsim-publish.lock: is a symbolic link" "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/lk"
    [ "$(cat "$TMP/outside.txt")" = outside ] && [ ! -e "$TMP/lk/report.html" ] || fail "the lock followed a link"
    ;;
  sweep_folders)  # 4: every point its own folder; --sweep-index is a point's index
    tiny_model "$TMP/A/tiny"
    "$CTXSIM" init-model --preset bert-tiny --seed 6 --vocab "$VOCAB" --out "$TMP/B/tiny" > /dev/null || fail "init-model B"
    cat > "$TMP/s.yaml" <<YAML
output: {dir: $TMP/sw, report: false}
samples: {num_samples: 8}
runtime: {unit_size: 4}
sweep: {model.path: [$TMP/A/tiny, $TMP/B/tiny]}
YAML
    out=$("$CTXSIM" sweep "$TMP/s.yaml" 2>&1) || fail "sweep: $out"
    contains "$out" "model.path-A_tiny"
    contains "$out" "model.path-B_tiny"
    "$CTXSIM" run "$TMP/s.yaml" > /dev/null 2>&1 || fail "sweep run"
    a=$(h5dump -a /model_sha256 "$TMP/sw/s/model.path-A_tiny/store.h5" | grep -o '"[0-9a-f]\{64\}"')
    b=$(h5dump -a /model_sha256 "$TMP/sw/s/model.path-B_tiny/store.h5" | grep -o '"[0-9a-f]\{64\}"')
    [ -n "$a" ] && [ "$a" != "$b" ] || fail "the two points are not two models' stores"
    for bad in '' -1 x; do
      RC=2 one_error "--sweep-index" "$CTXSIM" run "$TMP/s.yaml" --sweep-index "$bad"
    done
    one_error "--sweep-index 2: the sweep has 2 points" "$CTXSIM" run "$TMP/s.yaml" --sweep-index 2
    # Values whose folders would still coincide are refused before anything runs.
    sed -i "s|sweep: .*|sweep: {statistics.separators: [[\".\"]], corpus.path: [\"data/x y\", \"data/x_y\"]}|" "$TMP/s.yaml"
    one_error "would share the output folder" "$CTXSIM" sweep "$TMP/s.yaml"
    printf 'sweep: {samples.seed: [%s], samples.seq_len: [%s], runtime.unit_size: [%s]}\n' \
      "$(seq -s, 1 1000)" "$(seq -s, 8 1007)" "$(seq -s, 1 1000)" > "$TMP/huge.yaml"
    one_error "more than 100000 points" "$CTXSIM" sweep "$TMP/huge.yaml"
    ;;
  pretrain_outputs)  # 5 and 11: outputs that overwrite each other; a checkpoint that contradicts itself
    TINY=(configs/pretrain/brown.yaml corpus.max_documents=20 corpus.heldout_every=5 samples.seq_len=32 pretrain.layers=1 pretrain.hidden=16
          pretrain.heads=2 pretrain.intermediate=32 pretrain.steps=12 pretrain.batch_size=4 pretrain.warmup_steps=2 pretrain.checkpoint_steps=2
          pretrain.eval_steps=4 pretrain.eval_samples=8 pretrain.save_dtype=float32 runtime.threads=1)
    one_error "pretrain.init_out: '$TMP/x/' is the folder of pretrain.model_out too" \
      "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/x" pretrain.init_out="$TMP/x/"
    [ ! -e "$TMP/x" ] || fail "wrote into the shared folder"
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/pm" pretrain.init_out="$TMP/pi" \
      > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 300); do [ -f "$TMP/p/checkpoint.safetensors" ] && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    [ -f "$TMP/p/checkpoint.safetensors" ] || fail "no checkpoint to damage"
    for edit in steps_done=-3 steps_done=99 history=drop; do
      cp "$TMP/p/checkpoint.safetensors" "$TMP/cp.bak"
      /usr/bin/python3 - "$TMP/p/checkpoint.safetensors" "$edit" <<'PY' || fail "editing the checkpoint"
import json, struct, sys
path, edit = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header["__metadata__"]
key, value = edit.split("=")
if key == "history":
    rows = json.loads(meta["history"])
    meta["history"] = json.dumps(rows[:-1])
else:
    meta[key] = value
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
      one_error "$TMP/p/checkpoint.safetensors: " "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/pm" pretrain.init_out="$TMP/pi"
      contains "$(cat "$TMP/stderr")" "the checkpoint is damaged"
      cp "$TMP/cp.bak" "$TMP/p/checkpoint.safetensors"
    done
    # Goal 1 of issue 35: a model folder this job did not write is not replaced without
    # output.overwrite. The resume and a rerun find their own folders (exports.json vouches).
    "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/pm" pretrain.init_out="$TMP/pi" > /dev/null 2> "$TMP/err" \
      || fail "resume into its own folders: $(tail -2 "$TMP/err")"
    "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/pm" pretrain.init_out="$TMP/pi" > /dev/null 2> "$TMP/err" \
      || fail "rerun into its own folders: $(tail -2 "$TMP/err")"
    mkdir -p "$TMP/theirs" && cp models/brown-bert-init/* "$TMP/theirs/"
    theirs=$(cd "$TMP/theirs" && sha256sum ./* | sha256sum)
    one_error "pretrain.model_out: '$TMP/theirs' already holds files that this pretraining did not write" \
      "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/q" pretrain.model_out="$TMP/theirs" pretrain.init_out="$TMP/qi"
    # Its own folder with weights changed since it wrote them is someone's work too.
    printf 'x' >> "$TMP/pm/model.safetensors"
    one_error "pretrain.model_out: '$TMP/pm' already holds files" \
      "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/p" pretrain.model_out="$TMP/pm" pretrain.init_out="$TMP/pi"
    # The outputs default to output.dir: a folder there that is not ours is refused the same way.
    mkdir -p "$TMP/r/model" && cp models/brown-bert-init/* "$TMP/r/model/"
    one_error "output.dir: '$TMP/r/model' already holds files" "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/r" \
      'pretrain.model_out=""' 'pretrain.init_out=""'
    [ "$theirs" = "$(cd "$TMP/theirs" && sha256sum ./* | sha256sum)" ] || fail "a refused pretraining changed $TMP/theirs"
    "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/q" pretrain.model_out="$TMP/theirs" pretrain.init_out="$TMP/qi" output.overwrite=true \
      > /dev/null 2> "$TMP/err" || fail "output.overwrite=true: $(tail -2 "$TMP/err")"
    [ "$theirs" != "$(cd "$TMP/theirs" && sha256sum ./* | sha256sum)" ] || fail "output.overwrite=true did not replace $TMP/theirs"
    # pretrain.model_out equal to output.dir on a fresh folder: the job's own lock is no user's
    # file there; the model and the job's files share the folder, and a rerun finds it done.
    P=(configs/pretrain/brown.yaml output.dir="$TMP/same" pretrain.model_out="$TMP/same" pretrain.steps=2 pretrain.warmup_steps=1
       samples.num_samples=20)
    "$CTXSIM" pretrain "${P[@]}" > "$TMP/log" 2>&1 || fail "model_out = output.dir: $(tail -2 "$TMP/log")"
    [ -s "$TMP/same/model.safetensors" ] && [ -s "$TMP/same/config.json" ] || fail "no model in output.dir"
    "$CTXSIM" pretrain "${P[@]}" > "$TMP/log" 2>&1 || fail "rerun with model_out = output.dir: $(tail -2 "$TMP/log")"
    ;;
  store_shapes)  # 6: a store is untrusted input: every shape and range checked before use
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" statistics.examples=[0,3] output.dir="$TMP/out" > /dev/null 2>&1 || fail "run"
    craft() {  # craft NAME PYTHON: a copy of the store changed by PYTHON (h5py, f open r+)
      cp "$TMP/out/store.h5" "$TMP/$1.h5"
      /usr/bin/python3 -c "import h5py, numpy as np
f = h5py.File('$TMP/$1.h5', 'r+')
$2
f.close()" || fail "crafting $1"
    }
    craft selected 'del f["examples/selected"]; f.create_dataset("examples/selected", data=np.ones((1, 1, 1, 3, 3), "u1"))'
    one_error "/examples/selected does not have shape [2,1,2,2,128,128]" "$CTXSIM" report "$TMP/selected.h5" --out "$TMP/rs"
    [ ! -e "$TMP/rs/report.html" ] || fail "a report of a misshapen store"
    craft nvalid 'f["samples/n_valid"][0] = 5000'
    one_error "/samples/n_valid[0] is 5000, outside 0 … T = 128" "$CTXSIM" report "$TMP/nvalid.h5" --out "$TMP/rn"
    craft tokens 'del f["samples/token_ids"]; f.create_dataset("samples/token_ids", shape=(2**31, 32), dtype="i4")'
    one_error "/samples/token_ids" "$CTXSIM" report "$TMP/tokens.h5" --out "$TMP/rt"
    craft counts 'g = f["stats/top_fraction=0.01"]; del g["anchor_counts"]; g.create_dataset("anchor_counts", shape=(2, 2, 2**34), dtype="i8")'
    for cmd in summary report; do
      one_error "anchor_counts" "$CTXSIM" $cmd "$TMP/counts.h5"
      lacks "$(cat "$TMP/stderr")" "bad_alloc"
    done
    ;;
  store_integrity)  # 7: unknown schema versions refused; a flipped bit is a damaged store
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/out" > /dev/null 2>&1 || fail "run"
    craft() {
      cp "$TMP/out/store.h5" "$TMP/$1.h5"
      /usr/bin/python3 -c "import h5py, numpy as np
f = h5py.File('$TMP/$1.h5', 'r+')
$2
f.close()" || fail "crafting $1"
    }
    v=$(/usr/bin/python3 -c "import h5py; print(int(h5py.File('$TMP/out/store.h5', 'r').attrs['schema_version']))")
    craft newer "f.attrs['schema_version'] = np.int64($((v + 1)))"
    one_error "schema_version $((v + 1)): this ctxsim reads schema 1 to $v" "$CTXSIM" summary "$TMP/newer.h5"
    craft nov 'del f.attrs["schema_version"]'
    one_error "no attribute 'schema_version'" "$CTXSIM" summary "$TMP/nov.h5"
    craft flip 'd = f["stats/top_fraction=0.01/high_pairs"]; v = d[...]; v[0, 0] ^= 1 << 20; d[...] = v'
    for cmd in summary report status; do
      one_error "do not match the SHA-256 written with them (stats_sha256)" "$CTXSIM" $cmd "$TMP/flip.h5"
    done
    mkdir -p "$TMP/sweep/p" && cp "$TMP/flip.h5" "$TMP/sweep/p/store.h5"
    one_error "stats_sha256" "$CTXSIM" collect "$TMP/sweep"
    one_error "stats_sha256" "$CTXSIM" compare "$TMP/flip.h5" "$TMP/out/store.h5" --out "$TMP/cmp"
    # (issue 31) Setting the version back does not turn a digest that is there off.
    craft downgraded 'f.attrs["schema_version"] = np.int64(1); d = f["stats/top_fraction=0.01/high_pairs"]; v = d[...]; v[0, 0] += 1; d[...] = v'
    one_error "stats_sha256" "$CTXSIM" summary "$TMP/downgraded.h5"
    # The labels readers print are covered too: rule names, separator tokens, the vocabulary.
    craft septok 'a = f["stats/attention"]; a.attrs["separator_tokens"] = np.bytes_(a.attrs["separator_tokens"].replace(b".", b"!"))'
    craft rule 'f.move("stats/top_fraction=0.01", "stats/top_fraction=0.5"); f["stats"].attrs["rules"] = np.bytes_(b"top_fraction=0.5")'
    craft vocab 't = f["vocab/text"]; v = t[...]; v[0:5] = np.frombuffer(b"[XYZ]", np.uint8); t[...] = v'
    for cmd in summary report status; do
      one_error "(labels_sha256)" "$CTXSIM" $cmd "$TMP/septok.h5"
      one_error "(labels_sha256)" "$CTXSIM" $cmd "$TMP/rule.h5"
      one_error "/vocab/text does not match the vocabulary's SHA-256 written with it (vocab_sha256)" "$CTXSIM" $cmd "$TMP/vocab.h5"
    done
    # An HDF5 failure below ctxsim's checks (a dataset that is a link to a missing file) names the
    # store, not only the dataset.
    craft extlink 'g = f["stats/top_fraction=0.01"]; del g["high_pairs"]; g["high_pairs"] = h5py.ExternalLink("gone.h5", "/x")'
    one_error "$TMP/extlink.h5: HDF5" "$CTXSIM" summary "$TMP/extlink.h5"
    ;;
  store_types)  # 8: attributes and datasets of the wrong type: one line naming the store and object
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/out" > /dev/null 2>&1 || fail "run"
    craft() {
      cp "$TMP/out/store.h5" "$TMP/$1.h5"
      /usr/bin/python3 -c "import h5py, numpy as np
f = h5py.File('$TMP/$1.h5', 'r+')
$2
f.close()" || fail "crafting $1"
    }
    craft complete 'f.attrs["complete"] = np.bytes_("yes")'
    one_error "$TMP/complete.h5: /: attribute 'complete' is not a whole number: not a ctxsim store, or a damaged one" "$CTXSIM" summary "$TMP/complete.h5"
    craft strings 'g = f["stats/top_fraction=0.01"]; del g["same_token"]; g.create_dataset("same_token", data=np.array([[b"ab", b"cd"], [b"ef", b"gh"]]))'
    one_error "same_token: holds strings, expected integers" "$CTXSIM" summary "$TMP/strings.h5"
    craft septok 'del f["stats/attention"].attrs["separator_tokens"]'
    one_error "separator_mass_by_token" "$CTXSIM" summary "$TMP/septok.h5"
    craft vocab 'del f["vocab"]'
    one_error "$TMP/vocab.h5: /: no group 'vocab': not a ctxsim store, or a damaged one" "$CTXSIM" summary "$TMP/vocab.h5"
    for f in complete strings septok vocab; do lacks "$(cat "$TMP/stderr")" "H5"; done
    ;;
  long_paths)  # 9: an output folder of 400 characters (deep scratch paths on clusters)
    tiny_model "$TMP/m"
    deep=$TMP
    while [ ${#deep} -lt 400 ]; do deep=$deep/abcdefghijklmnopqrstuvwxyz0123456789; done
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$deep" > /dev/null 2> "$TMP/err" || fail "a ${#deep}-character output.dir: $(tail -3 "$TMP/err")"
    "$CTXSIM" summary "$deep/store.h5" > /dev/null || fail "summary of the deep store"
    # Two ranks open it collectively through MPI-IO.
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpiexec --oversubscribe --bind-to none -n 2 \
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$deep/2" > /dev/null 2> "$TMP/err" || fail "2 ranks: $(tail -3 "$TMP/err")"
    ;;
  bad_paths)  # 10: symbolic-link loops and over-long names are user errors naming the key
    tiny_model "$TMP/m"
    ln -s "$TMP/loop" "$TMP/loop"
    long=$TMP/$(head -c 300 /dev/zero | tr '\0' x)
    one_error "Too many levels of symbolic links" "$CTXSIM" validate "$TMP/loop"
    one_error "corpus.path: cannot use the path '$TMP/loop/x'" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" corpus.path="$TMP/loop/x" output.dir="$TMP/o"
    contains "$(cat "$TMP/stderr")" "a symbolic link in it points back at itself"
    one_error "model.path: cannot use the path" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/loop" output.dir="$TMP/o"
    one_error "model.vocab: cannot use the path" "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" model.vocab="$long/v.txt" output.dir="$TMP/o"
    contains "$(cat "$TMP/stderr")" "longer than the file system allows"
    one_error "File name too long" "$CTXSIM" collect "$long"
    one_error "Too many levels of symbolic links" "$CTXSIM" compare "$TMP/loop" --out "$TMP/c"
    huge=$(head -c 100000 /dev/zero | tr '\0' y)
    one_error "corpus.path: cannot use the path" "$CTXSIM" samples configs/default.yaml "corpus.path=$huge"
    [ ! -e "$TMP/o" ] || fail "wrote output for a bad path"
    # A store path that is a link loop: the reason and its fix, from status and summary alike.
    ln -s "$TMP/loop-b" "$TMP/loop-a" && ln -s "$TMP/loop-a" "$TMP/loop-b"
    for cmd in status summary; do
      one_error "$TMP/loop-a: cannot use the path" "$CTXSIM" $cmd "$TMP/loop-a"
      contains "$(cat "$TMP/stderr")" "fix: a symbolic link in it points back at itself"
    done
    ;;
  bench_ranges)  # 12 and 14: numbers out of range are refused; thread counts are capped, and said
    # Out of an option's range: a usage error (exit 2); past what the model takes: exit 1.
    for bad in "--seq-len -1" "--seq-len 0" "--seq-len 99999999999" "--batch -3" "--batch 0" "--threads 100000" "--seconds inf" \
               "--seconds nan" "--seconds -1"; do
      read -r -a args <<< "$bad"
      RC=2 one_error "" timeout 60 "$CTXSIM" bench-model "${args[@]}" --dtype float32 --batch 1
    done
    one_error "" timeout 60 "$CTXSIM" bench-model --seq-len 513 --preset bert-tiny --dtype float32 --batch 1
    one_error "exceed the model's max_position_embeddings" "$CTXSIM" bench-model --preset bert-tiny --seq-len 1000 --dtype float32
    out=$(timeout 120 "$CTXSIM" bench-model --preset bert-tiny --seq-len 16 --batch 1 --dtype float32 --threads 4096 --seconds 0.2 2>&1) \
      || fail "bench-model --threads 4096: $out"
    contains "$out" "warning: --threads=4096 is more than 4 per core"
    tiny_model "$TMP/m"
    timeout 120 "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" runtime.threads=4096 output.dir="$TMP/o" > /dev/null 2> "$TMP/err" \
      || fail "runtime.threads=4096: $(tail -3 "$TMP/err")"
    contains "$(cat "$TMP/err")" "warning: runtime.threads=4096 is more than 4 per core"
    printf 'samples: {seq_len: 64}\n---\nsamples: {seq_len: 32}\n' > "$TMP/two.yaml"
    one_error "two.yaml:2:1: a second YAML document starts here" "$CTXSIM" validate "$TMP/two.yaml"
    ;;
  # ---- fourth round (issue 31) -----------------------------------------------------------
  model_identity)  # B1: a model is every file that decides its outputs, for a resume and for a complete store
    tiny_model "$TMP/m"
    mkdir -p "$TMP/c" && cp data/brown/ca0[1-4] "$TMP/c/"
    L=(configs/default.yaml model.path="$TMP/m" corpus.path="$TMP/c" corpus.split=all samples.num_samples=40 runtime.unit_size=4 runtime.flush_units=1
       output.report=false output.dir="$TMP/out")
    # A run killed after its first durable units, then its config.json changed: no resume.
    CTXSIM_UNIT_DELAY_MS=300 "$CTXSIM" run "${L[@]}" > /dev/null 2>&1 &
    victim=$!
    for _ in $(seq 1 200); do "$CTXSIM" status "$TMP/out/store.h5" 2> /dev/null | grep -q "units done: [2-9]" && break; sleep 0.1; done
    kill -9 $victim; wait $victim 2> /dev/null
    "$CTXSIM" status "$TMP/out/store.h5" | grep -q "units done:" || fail "no interrupted store"
    cp "$TMP/m/config.json" "$TMP/config.bak"
    sed -i 's/"hidden_act": "gelu"/"hidden_act": "relu"/' "$TMP/m/config.json"
    grep -q '"relu"' "$TMP/m/config.json" || fail "hidden_act not changed"
    one_error "was made from other inputs: the model's config.json or tokenizer_config.json (in $TMP/m)" "$CTXSIM" run "${L[@]}"
    # A complete store answers only for the model files it was made from.
    cp "$TMP/config.bak" "$TMP/m/config.json"
    "$CTXSIM" run "${L[@]}" output.overwrite=true > /dev/null 2>&1 || fail "overwrite"
    "$CTXSIM" run "${L[@]}" > /dev/null 2>&1 || fail "rerun of a complete store with the same model"
    sed -i 's/"layer_norm_eps": 1e-12/"layer_norm_eps": 1e-06/' "$TMP/m/config.json"
    grep -q '1e-06' "$TMP/m/config.json" || fail "layer_norm_eps not changed"
    one_error "the model's config.json or tokenizer_config.json" "$CTXSIM" run "${L[@]}"
    cp "$TMP/config.bak" "$TMP/m/config.json"
    echo '{"do_lower_case": false}' > "$TMP/m/tokenizer_config.json"
    one_error "the model's config.json or tokenizer_config.json" "$CTXSIM" run "${L[@]}"
    # model.vocab outside the model folder: a byte-level BPE's merges are part of the vocabulary's
    # identity (issue 46 goal 3), not only its tokens.
    cp -r data/vocab/gpt2 "$TMP/bpe"
    "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --seed 2 --vocab "$TMP/bpe" --out "$TMP/g" > /dev/null || fail "init-model gpt2"
    rm -f "$TMP/g/vocab.json" "$TMP/g/merges.txt" "$TMP/g/tokenizer.json"
    G=(configs/default.yaml model.path="$TMP/g" model.vocab="$TMP/bpe" corpus.path="$TMP/c" corpus.split=all samples.num_samples=8
       output.report=false output.dir="$TMP/gout")
    "$CTXSIM" run "${G[@]}" > "$TMP/log" 2>&1 || fail "gpt2 with model.vocab: $(tail -3 "$TMP/log")"
    "$CTXSIM" run "${G[@]}" > "$TMP/log" 2>&1 || fail "rerun of gpt2 with model.vocab"
    contains "$(cat "$TMP/log")" "is already complete"
    sed -i '3{h;d};4G' "$TMP/bpe/merges.txt"  # two merges swap ranks: other ids, the same tokens
    one_error "was made from other inputs: the vocabulary's merges ($TMP/bpe)" "$CTXSIM" run "${G[@]}"
    ;;
  special_files)  # issue 46 goal 4: a FIFO, socket or device where a file is expected is refused, never waited on
    tiny_model "$TMP/m"
    mkdir -p "$TMP/c"
    /usr/bin/python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$TMP/socket" || fail "making a socket"
    # A FIFO in each place a user names a file: every command ends at once with one error.
    special() {  # special EXPECTED PATH-TO-REPLACE COMMAND…: PATH becomes a FIFO, the command must refuse it
      local expect=$1 path=$2; shift 2
      rm -rf "$path" && mkfifo "$path" || fail "mkfifo $path"
      RC=1 one_error "$expect" timeout -s KILL 30 "$@"
    }
    R=(configs/default.yaml model.path="$TMP/m" samples.num_samples=4 output.report=false)
    special "$TMP/cfg.yaml: is a FIFO (a named pipe), not the config file" "$TMP/cfg.yaml" "$CTXSIM" run "$TMP/cfg.yaml"
    special "$TMP/v.txt: is a FIFO (a named pipe), not the vocabulary" "$TMP/v.txt" "$CTXSIM" run "${R[@]}" model.vocab="$TMP/v.txt" output.dir="$TMP/o1"
    special "$TMP/v.txt: is a FIFO (a named pipe), not the vocabulary" "$TMP/v.txt" "$CTXSIM" tokenize --vocab "$TMP/v.txt"
    special "$TMP/doc.txt: is a FIFO (a named pipe), not a corpus file" "$TMP/doc.txt" "$CTXSIM" run "${R[@]}" corpus.format=text \
      corpus.path="$TMP/doc.txt" output.dir="$TMP/o2"
    special "$TMP/s.txt: is a FIFO (a named pipe), not a text file" "$TMP/s.txt" "$CTXSIM" segment configs/segment/choi.yaml --text "$TMP/s.txt" model.path="$TMP/m"
    cp -r "$TMP/m" "$TMP/m2"
    special "model.safetensors: is a FIFO (a named pipe), not a model.safetensors file" "$TMP/m2/model.safetensors" \
      "$CTXSIM" run "${R[@]}" model.path="$TMP/m2" output.dir="$TMP/o3"
    special "model.safetensors: is a FIFO (a named pipe)" "$TMP/m2/model.safetensors" "$CTXSIM" model-info "$TMP/m2"
    rm "$TMP/m2/model.safetensors" && cp "$TMP/m/model.safetensors" "$TMP/m2/"  # (cp into a FIFO would wait for a reader)
    special "config.json: is a FIFO (a named pipe)" "$TMP/m2/config.json" "$CTXSIM" run "${R[@]}" model.path="$TMP/m2" output.dir="$TMP/o4"
    special "$TMP/x.gguf: is a FIFO (a named pipe), not a GGUF file" "$TMP/x.gguf" "$CTXSIM" model-info "$TMP/x.gguf"
    special "not a regular file" "$TMP/store.h5" "$CTXSIM" status "$TMP/store.h5"
    # A socket and a device: the same, by their kind.
    RC=1 one_error "$TMP/socket: is a socket or a device without a reader, not the vocabulary" timeout -s KILL 30 "$CTXSIM" tokenize --vocab "$TMP/socket"
    RC=1 one_error "/dev/zero: is a device, not the config file" timeout -s KILL 30 "$CTXSIM" run /dev/zero
    for o in o1 o2 o3 o4; do [ ! -e "$TMP/$o/store.h5" ] || fail "a refused job left $o/store.h5"; done
    # In a corpus folder, a FIFO is skipped and said, as a folder is.
    cp data/brown/ca01 "$TMP/c/" && mkfifo "$TMP/c/pipe"
    timeout -s KILL 60 "$CTXSIM" run "${R[@]}" corpus.format=brown corpus.path="$TMP/c" corpus.split=all output.dir="$TMP/o5" > "$TMP/log" 2>&1 ||
      fail "a corpus folder with a FIFO: $(tail -3 "$TMP/log")"
    contains "$(cat "$TMP/log")" "pipe (not a file)"
    ;;
  shared_folders)  # B7: reports into one folder at once, and into another store's report folder
    tiny_model "$TMP/m"
    for seed in 1 2; do
      "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" samples.seed=$seed statistics.examples=[0] output.report=true output.dir="$TMP/r$seed" \
        > /dev/null 2>&1 || fail "run $seed"
    done
    # The same store twice at once into one folder: both succeed, one page, no staging left.
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/x" > "$TMP/a.out" 2>&1 & p1=$!
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/x" > "$TMP/b.out" 2>&1 & p2=$!
    wait $p1 || fail "first of two reports: $(cat "$TMP/a.out")"
    wait $p2 || fail "second of two reports: $(cat "$TMP/b.out")"
    [ -z "$(ls -a "$TMP/x" | grep -e partial -e '\.tmp')" ] || fail "staging left behind: $(ls -a "$TMP/x")"
    /usr/bin/python3 - "$TMP/x" <<'PY' || fail "the page does not match its figures"
import json, os, sys
d = sys.argv[1]
index = json.load(open(os.path.join(d, "figures", "index.json")))
assert {e["source"]["store"] for e in index} == {os.path.realpath(os.path.join(d, "..", "r1", "store.h5"))}, index[0]["source"]
for e in index:
    assert os.path.exists(os.path.join(d, "figures", e["stem"] + ".png")), e["stem"]
PY
    # Two stores at once into one folder: one report is written whole, the other refused.
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/y" > "$TMP/a.out" 2>&1 & p1=$!
    "$CTXSIM" report "$TMP/r2/store.h5" --out "$TMP/y" > "$TMP/b.out" 2>&1 & p2=$!
    wait $p1; rc1=$?; wait $p2; rc2=$?
    [ $((rc1 + rc2)) -eq 1 ] || fail "expected one report written and one refused, got exit codes $rc1 and $rc2"
    winner=r1; [ $rc1 -eq 0 ] || winner=r2
    grep -q "report.html: was made from .*store.h5, not from .*store.h5; the report would replace it" "$TMP/a.out" "$TMP/b.out" || fail "the refusal does not say why"
    grep -qF "ctxsim summary of $TMP/$winner/store.h5" "$TMP/y/report.html" || fail "the page is not the written store's"
    # A report of B into A's folder would replace A's report: refused, A's files untouched.
    before=$(cd "$TMP/r1" && find . -type f | sort | xargs sha256sum | sha256sum)
    one_error "$TMP/r1/report.html: was made from $TMP/r1/store.h5, not from $TMP/r2/store.h5" "$CTXSIM" report "$TMP/r2/store.h5" --out "$TMP/r1"
    [ "$before" = "$(cd "$TMP/r1" && find . -type f | sort | xargs sha256sum | sha256sum)" ] || fail "A's report changed"
    # The same store, copied with its folder, reports into the copy (the same store elsewhere).
    cp -r "$TMP/r1" "$TMP/r1copy"
    "$CTXSIM" report "$TMP/r1copy/store.h5" > /dev/null 2> "$TMP/err" || fail "report of a copied store: $(cat "$TMP/err")"
    # --overwrite replaces a page made from other stores; without it, a comparison is refused too.
    "$CTXSIM" report "$TMP/r1/store.h5" --out "$TMP/z" > /dev/null 2>&1 || fail "report into z"
    "$CTXSIM" report "$TMP/r2/store.h5" --out "$TMP/z" --overwrite > /dev/null 2> "$TMP/err" || fail "report --overwrite: $(cat "$TMP/err")"
    grep -qF "ctxsim summary of $TMP/r2/store.h5" "$TMP/z/report.html" || fail "--overwrite did not replace the report"
    "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/c" > /dev/null 2>&1 || fail "compare"
    "$CTXSIM" compare "$TMP/r1/store.h5" "$TMP/r2/store.h5" --out "$TMP/c" > /dev/null 2>&1 || fail "the same comparison again"
    before=$(cd "$TMP/c" && find . -type f | sort | xargs sha256sum | sha256sum)
    one_error "$TMP/c/compare.html: was made from $TMP/r1/store.h5 + $TMP/r2/store.h5, not from $TMP/r2/store.h5 + $TMP/r1/store.h5" \
      "$CTXSIM" compare "$TMP/r2/store.h5" "$TMP/r1/store.h5" --out "$TMP/c"
    [ "$before" = "$(cd "$TMP/c" && find . -type f | sort | xargs sha256sum | sha256sum)" ] || fail "the comparison changed"
    "$CTXSIM" compare "$TMP/r2/store.h5" "$TMP/r1/store.h5" --out "$TMP/c" --overwrite > /dev/null 2> "$TMP/err" || fail "compare --overwrite: $(cat "$TMP/err")"
    # A rerun over its own folder (output.overwrite) replaces its own report.
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" samples.seed=1 samples.num_samples=12 statistics.examples=[0] output.report=true \
      output.overwrite=true output.dir="$TMP/r1" > /dev/null 2> "$TMP/err" || fail "rerun with overwrite: $(tail -3 "$TMP/err")"
    ;;
  csv_cells)  # C: cells a spreadsheet would run as formulas are quoted as text (OWASP)
    tiny_model "$TMP/m"
    "$CTXSIM" run "${RUN[@]}" model.path="$TMP/m" output.dir="$TMP/r" > /dev/null 2>&1 || fail "run"
    for name in '=HYPERLINK("x.example","y")' '+1+2' '-3' '@SUM(A1)'; do
      mkdir -p "$TMP/sw/$name" && cp "$TMP/r/store.h5" "$TMP/sw/$name/store.h5"
    done
    "$CTXSIM" collect "$TMP/sw" > /dev/null 2> "$TMP/err" || fail "collect: $(cat "$TMP/err")"
    /usr/bin/python3 - "$TMP/sw/collect.csv" <<'PY' || fail "collect.csv has a formula cell"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
header, body = rows[0], rows[1:]
points = {r[0] for r in body}
assert points == {"'=HYPERLINK(\"x.example\",\"y\")", "'+1+2", "'-3", "'@SUM(A1)"}, points
for r in body:
    for i, cell in enumerate(r):
        if header[i] in ("point", "rule", "top_anchor"):
            assert not cell or cell[0] not in "=+-@\t\r", (header[i], cell)
PY
    grep -q "^\"'=HYPERLINK" "$TMP/sw/collect.csv" || fail "a formula cell is not quoted"
    ;;
  small_things)  # E: options that were ignored or wrapped, progress lines that said the wrong thing
    for bad in "--layers 0" "--layers -2" "--hidden 0" "--heads -1" "--ffn 0" "--positions 0" "--seed -1"; do
      read -r -a args <<< "$bad"
      "$CTXSIM" init-model --preset bert-tiny "${args[@]}" --vocab "$VOCAB" --out "$TMP/never" > "$TMP/o" 2> "$TMP/e"
      rc=$?
      [ $rc -ne 0 ] || fail "init-model $bad accepted"
      contains "$(cat "$TMP/e")" "${args[0]}"
      [ ! -e "$TMP/never" ] || fail "init-model $bad wrote a model"
    done
    # A % in the output folder reaches sbatch's --output as %%, not as a pattern.
    tiny_model "$TMP/m"
    out=$("$CTXSIM" submit configs/default.yaml model.path="$TMP/m" output.dir="$TMP/100%done" --dry-run 2>&1) || fail "submit --dry-run: $out"
    contains "$out" "--output=$TMP/100%%done/jobs/ctxsim-%j.log"
    # Literal special tokens in the corpus keep their ids (SPEC §1), said once; a literal [PAD] is a valid token.
    mkdir -p "$TMP/c" && printf 'The/at [SEP]/nn and/cc [PAD]/nn sat/vbd ./.\nA/at dog/nn [SEP]/nn ran/vbd ./.\n' > "$TMP/c/ca01"
    "$CTXSIM" samples configs/default.yaml corpus.path="$TMP/c" corpus.split=all samples.windows=documents --show 1 > "$TMP/o" 2> "$TMP/e" || fail "samples: $(cat "$TMP/e")"
    [ "$(grep -c "special tokens written out" "$TMP/e")" -eq 1 ] || fail "not said once: $(cat "$TMP/e")"
    contains "$(cat "$TMP/e")" "[PAD] x1, [SEP] x2"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/m" corpus.path="$TMP/c" corpus.split=all samples.windows=documents statistics.examples=[] output.report=false output.dir="$TMP/lit" \
      > /dev/null 2>&1 || fail "run on literal specials"
    /usr/bin/python3 - "$TMP/lit/store.h5" <<'PY' || fail "a literal [PAD] was taken for padding"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
ids, n = f["samples/token_ids"][0], int(f["samples/n_valid"][0])
assert 0 in ids[1:n - 1], (ids[:n], n)  # [PAD] (id 0) inside the valid positions
PY
    # GPT-2's too (SPEC §7: Hugging Face's tokenizers give <|endoftext|> its id): one token, valid.
    "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --layers 1 --vocab data/vocab/gpt2 --out "$TMP/g" > /dev/null || fail "init-model gpt2"
    printf 'The/at <|endoftext|>/nn sat/vbd ./.\n' > "$TMP/c/ca01"
    "$CTXSIM" run configs/default.yaml model.path="$TMP/g" corpus.path="$TMP/c" corpus.split=all samples.windows=documents statistics.examples=[] \
      output.report=false output.dir="$TMP/glit" > /dev/null 2> "$TMP/e" || fail "run on a literal <|endoftext|>: $(cat "$TMP/e")"
    contains "$(cat "$TMP/e")" "<|endoftext|> x1"
    contains "$(cat "$TMP/e")" "they keep their ids, as Hugging Face's tokenizers give them, and a literal <|endoftext|> is not padding"
    /usr/bin/python3 - "$TMP/glit/store.h5" <<'PY' || fail "a literal <|endoftext|> was not its one token"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
ids, n = list(f["samples/token_ids"][0]), int(f["samples/n_valid"][0])
assert ids[1:n].count(50256) == 1 and n == 6, (ids[:n], n)  # <|endoftext|> The <|endoftext|> sat . : the frame's, then the text's
PY
    # Issue 46 goal 6: messages in the user's terms. inspect names the file the user gave (not
    # its input.txt) with the fix for what is wrong; a text past HDF5's 64 KiB attribute limit is
    # stored whole (its command line an attribute); segment --text refuses a GPU as the job does.
    tiny_model "$TMP/m"
    one_error "$TMP/none.txt: cannot open the text file" "$CTXSIM" inspect --file "$TMP/none.txt" --model "$TMP/m" --out "$TMP/i1"
    contains "$(cat "$TMP/stderr")" "fix: give --file a readable UTF-8 text file"
    printf 'caf\xe9 au lait.\n' > "$TMP/latin1.txt"
    one_error "$TMP/latin1.txt: is not UTF-8 text (invalid UTF-8 at line 1, column 4" "$CTXSIM" inspect --file "$TMP/latin1.txt" --model "$TMP/m" --out "$TMP/i2"
    long=$(/usr/bin/python3 -c "print('The cat sat on the mat. ' * 3500)")
    "$CTXSIM" inspect --text "$long" --model "$TMP/m" --out "$TMP/i3" > /dev/null 2> "$TMP/err" || fail "inspect of an 84 KB text: $(tail -2 "$TMP/err")"
    /usr/bin/python3 -c "import h5py, sys; assert len(h5py.File(sys.argv[1], 'r').attrs['command_line']) > 84000" "$TMP/i3/store.h5" ||
      fail "the long command line was not stored whole"
    RC=1 one_error "runtime.device: segment --text runs its model on the CPU" "$CTXSIM" segment configs/segment/choi.yaml --text "$TMP/latin1.txt" \
      model.path="$TMP/m" runtime.device=cuda
    contains "$("$CTXSIM" model-info --help)" "(bert, distilbert, roberta, gpt2, llama, mistral, qwen2, qwen3) or a GGUF file"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
