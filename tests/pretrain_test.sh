#!/usr/bin/env bash
# `ctxsim pretrain` end to end on the real Brown corpus and vocabulary, run by ctest:
# pretrain_test.sh CTXSIM CASE. ranks, kill_resume: real MPI ranks (label mpi); sigterm, learns,
# families, bad_input: one process (label cli).
set -uo pipefail
CTXSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CASE=$2
TMP=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BG=""
. "$(dirname "$0")/kill_job.sh"
cleanup() { [ -n "$BG" ] && kill_job "$BG"; [ -n "${KEEP:-}" ] || rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
MPI="mpiexec --bind-to none"

# A small model on the first 40 Brown documents (every 5th held out), T = 32, 8 samples a step;
# one thread per rank, so that reruns are bitwise comparable.
TINY=(configs/pretrain/brown.yaml corpus.max_documents=40 corpus.heldout_every=5 samples.seq_len=32
      pretrain.layers=2 pretrain.hidden=32 pretrain.heads=2 pretrain.intermediate=64 pretrain.steps=24 pretrain.batch_size=8
      pretrain.warmup_steps=4 pretrain.checkpoint_steps=4 pretrain.eval_steps=8 pretrain.eval_samples=16 pretrain.save_dtype=float32
      'pretrain.model_out=""' 'pretrain.init_out=""' runtime.threads=1)
train() {  # train NP OUT [overrides…]
  local np=$1 out=$2; shift 2
  timeout 300 $MPI -n "$np" "$CTXSIM" pretrain "${TINY[@]}" output.dir="$out" "$@" > "$out.log" 2>&1
}
rows() { [ -f "$1/loss.csv" ] && echo $(($(wc -l < "$1/loss.csv") - 1)) || echo 0; }
wait_rows() {  # wait_rows DIR N: until N steps are checkpointed (bounded)
  for _ in $(seq 1 600); do
    [ "$(rows "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no checkpoint after 60 s"
}
# column NAME FILE: that column of a loss.csv
column() { awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$2"; }

# one_error EXPECTED COMMAND…: one clear error, exit 1.
one_error() {
  local expect=$1; shift
  "$@" > /dev/null 2> "$TMP/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "exit $rc (expected 1): $* -- $(cat "$TMP/err")"
  [ "$(grep -c '^ctxsim: error: ' "$TMP/err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/err")"
  contains "$(cat "$TMP/err")" "$expect"
  contains "$(cat "$TMP/err")" "; fix: "
}

case "$CASE" in
  ranks)  # 1 vs 2 ranks: the same batches and masks (digests), the same losses within float tolerance
    train 1 "$TMP/r1" || fail "1 rank: $(tail -3 "$TMP/r1.log")"
    train 2 "$TMP/r2" || fail "2 ranks: $(tail -3 "$TMP/r2.log")"
    contains "$(cat "$TMP/r2.log")" "2 rank(s)"
    [ "$(column batch_digest "$TMP/r1/loss.csv")" = "$(column batch_digest "$TMP/r2/loss.csv")" ] || fail "the batches differ"
    [ "$(column batch_digest "$TMP/r1/loss.csv" | sort -u | wc -l)" -eq 24 ] || fail "steps share a batch digest"
    # Float sums over 1 or 2 ranks associate differently: the trajectories agree to float precision.
    paste -d, <(column train_loss "$TMP/r1/loss.csv") <(column train_loss "$TMP/r2/loss.csv") |
      awk -F, '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-3 * $1) { print "step " NR ": " $1 " vs " $2; bad = 1 } } END { exit bad }' ||
      fail "training losses differ beyond float tolerance"
    paste -d, <(column heldout_loss "$TMP/r1/loss.csv") <(column heldout_loss "$TMP/r2/loss.csv") | grep -v '^,$' |
      awk -F, '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-3 * $1) { print; bad = 1 } } END { exit bad }' ||
      fail "held-out losses differ beyond float tolerance"
    [ "$(column heldout_loss "$TMP/r1/loss.csv" | grep -c .)" -eq 3 ] || fail "expected 3 evaluations (every 8 steps)"
    ;;
  kill_resume)  # SIGKILL mid-training, rerun: bitwise the weights of an uninterrupted run
    train 2 "$TMP/ref" || fail "reference: $(tail -3 "$TMP/ref.log")"
    CTXSIM_UNIT_DELAY_MS=150 setsid $MPI -n 2 "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/k" > "$TMP/k1.log" 2>&1 &
    BG=$!
    wait_rows "$TMP/k" 8
    kill_job "$BG"; BG=""
    [ "$(rows "$TMP/k")" -lt 24 ] || fail "finished before it was killed"
    [ ! -e "$TMP/k/model/model.safetensors" ] || fail "a killed run exported its model"
    train 2 "$TMP/k" || fail "resume: $(tail -3 "$TMP/k.log")"
    contains "$(cat "$TMP/k.log")" "resuming"
    cmp "$TMP/ref/model/model.safetensors" "$TMP/k/model/model.safetensors" || fail "resumed weights differ from the uninterrupted run's"
    cmp "$TMP/ref/loss.csv" "$TMP/k/loss.csv" || fail "resumed loss history differs"
    cmp "$TMP/ref/init/model.safetensors" "$TMP/k/init/model.safetensors" || fail "step-0 weights differ"
    # A finished run asked again trains nothing and keeps its model.
    train 2 "$TMP/k" || fail "rerun of a finished run"
    contains "$(cat "$TMP/k.log")" "trained 0 step(s)"
    cmp "$TMP/ref/model/model.safetensors" "$TMP/k/model/model.safetensors" || fail "a rerun changed the model"
    ;;
  sigterm)  # SIGTERM (SLURM's warning) and Ctrl-C: the checkpoint saved, exit 75, the rerun continues the same trajectory
    "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/ref" > /dev/null 2>&1 || fail "reference"
    for sig in TERM INT; do
      CTXSIM_UNIT_DELAY_MS=150 "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/$sig" > /dev/null 2> "$TMP/$sig.err" &
      pid=$!
      wait_rows "$TMP/$sig" 4
      kill -$sig $pid
      wait $pid
      rc=$?
      [ $rc -eq 75 ] || fail "exit $rc after SIG$sig, expected 75: $(cat "$TMP/$sig.err")"
      contains "$(cat "$TMP/$sig.err")" "SIG$sig: progress saved"
      grep "progress:" "$TMP/$sig.err" | tail -1 | grep -q "stopped$" || fail "SIG$sig: last progress line: $(grep "progress:" "$TMP/$sig.err" | tail -1)"
      n=$(rows "$TMP/$sig")
      [ "$n" -gt 4 ] && [ "$n" -lt 24 ] || fail "SIG$sig left $n steps checkpointed"
      "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/$sig" > /dev/null 2> "$TMP/$sig.err2" || fail "resume: $(cat "$TMP/$sig.err2")"
      contains "$(cat "$TMP/$sig.err2")" "resuming"
      cmp "$TMP/ref/model/model.safetensors" "$TMP/$sig/model/model.safetensors" || fail "after SIG$sig: weights differ"
    done
    ;;
  learns)  # a few minutes of training make a model measurably better than its init on held-out documents
    # 2 layers, hidden 128, T = 64: 500 steps of 16 samples (about 2.5 min on 2 cores). At step 1
    # the held-out loss is about ln(30522) = 10.3 nats (a uniform guess); the unigram baseline (a
    # model that learned the token frequencies and nothing of the context) is about 7.2 here, and
    # this short run ends near it (7.15 measured). Asked: the held-out loss falls by more than 2.5
    # nats. Its standard error over the ~1,100 held-out predictions (per-token losses spread by
    # about 3 nats) is under 0.1 nat, so 2.5 nats is no fluctuation; an untrained or broken
    # model (no update, wrong gradients, labels misaligned) stays near 10.3.
    L=(configs/pretrain/brown.yaml corpus.max_documents=200 samples.seq_len=64 pretrain.layers=2 pretrain.hidden=128 pretrain.heads=2
       pretrain.intermediate=512 pretrain.steps=500 pretrain.batch_size=16 pretrain.warmup_steps=50 pretrain.learning_rate=0.002
       pretrain.eval_steps=50 pretrain.eval_samples=128 pretrain.checkpoint_steps=500 'pretrain.model_out=""' 'pretrain.init_out=""'
       output.dir="$TMP/l")
    "$CTXSIM" pretrain "${L[@]}" pretrain.steps=1 pretrain.warmup_steps=1 output.dir="$TMP/l0" > /dev/null 2> "$TMP/l0.err" || fail "init: $(cat "$TMP/l0.err")"
    "$CTXSIM" pretrain "${L[@]}" > "$TMP/l.out" 2> "$TMP/l.err" || fail "training: $(tail -3 "$TMP/l.err")"
    first=$(column heldout_loss "$TMP/l0/loss.csv" | tail -1)
    last=$(column heldout_loss "$TMP/l/loss.csv" | tail -1)
    unigram=$(column unigram_loss "$TMP/l/loss.csv" | tail -1)
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(a - b > 2.5) }' ||
      fail "held-out loss $first after one step, $last after 500 (unigram baseline $unigram)"
    echo "held-out loss: $first after 1 step, $last after 500 (unigram $unigram)"
    contains "$(cat "$TMP/l.out")" "held-out masked-LM loss"
    # The trained model is a Hugging Face BertForMaskedLM folder that model-info and run read.
    contains "$("$CTXSIM" model-info "$TMP/l/model")" "2 layers"
    contains "$(cat "$TMP/l/model/config.json")" '"BertForMaskedLM"'
    "$CTXSIM" run configs/default.yaml model.path="$TMP/l/model" samples.seq_len=64 samples.num_samples=16 corpus.max_documents=200 \
      corpus.heldout_every=10 corpus.split=heldout output.report=false output.dir="$TMP/run" > /dev/null 2> "$TMP/run.err" ||
      fail "run on the trained model: $(tail -3 "$TMP/run.err")"
    [ -s "$TMP/l/loss.png" ] && [ -s "$TMP/l/loss.svg" ] || fail "no loss figure"
    ;;
  families)  # pretrain.family: an encoder with its masked-LM head, decoders with the next-token loss
    # Each family's row gives its layers, head and objective. 24 steps at a learning rate of 0.005
    # take every one well below its initial loss of about ln(V) (10.8 for GPT-2's 50,257 tokens,
    # 11.8 for Llama 3's 128,256: measured 9.0, 9.4 and 10.2); a model whose gradients, norms or
    # targets were wrong stays near it. The exported folder is the family's language-model class,
    # and transformers computes its heads and logits as ctxsim does (tests/hf_reference.py folder).
    "$CTXSIM" init-model --family roberta --preset roberta-tiny --vocab data/vocab/gpt2 --out "$TMP/roberta-tokenizer" > /dev/null ||
      fail "a RoBERTa tokenizer folder"
    for row in "gpt2 data/vocab/gpt2 GPT2LMHeadModel next-token" "roberta $TMP/roberta-tokenizer RobertaForMaskedLM masked-LM" \
               "llama data/tokenizers/llama3 LlamaForCausalLM next-token"; do
      set -- $row
      "$CTXSIM" pretrain "${TINY[@]}" runtime.threads=2 pretrain.learning_rate=0.005 pretrain.family="$1" model.vocab="$2" \
        output.dir="$TMP/$1" > "$TMP/$1.out" 2> "$TMP/$1.err" || fail "$1: $(tail -3 "$TMP/$1.err")"
      contains "$(cat "$TMP/$1.out")" "held-out $4 loss"
      contains "$(cat "$TMP/$1/model/config.json")" "\"$3\""
      first=$(column train_loss "$TMP/$1/loss.csv" | head -1)
      last=$(column train_loss "$TMP/$1/loss.csv" | tail -1)
      awk -v a="$first" -v b="$last" 'BEGIN { exit !(a - b > 1.0) }' || fail "$1: training loss $first at step 1, $last at step 24"
      echo "$1: training loss $first at step 1, $last at step 24"
      .venv/bin/python tests/hf_reference.py folder "$CTXSIM" "$TMP/$1/model" "$TMP/ref-$1" || fail "$1: against transformers"
    done
    # A family without a language-model head, and a tokenizer without the head's mask token.
    one_error "pretrain.family: expected one of" "$CTXSIM" pretrain "${TINY[@]}" pretrain.family=bart output.dir="$TMP/f1"
    one_error "it lacks <s>, the token that starts every RoBERTa sample" \
      "$CTXSIM" pretrain "${TINY[@]}" pretrain.family=roberta model.vocab=data/vocab/gpt2 output.dir="$TMP/f2"
    mkdir "$TMP/nomask" && cp "$TMP/roberta-tokenizer/merges.txt" "$TMP/nomask/" &&
      /usr/bin/python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); del v["<mask>"]; json.dump(v, open(sys.argv[2], "w"))' \
        "$TMP/roberta-tokenizer/vocab.json" "$TMP/nomask/vocab.json" || fail "a vocabulary without <mask>"
    one_error "has no <mask> token, which masked-LM training needs" \
      "$CTXSIM" pretrain "${TINY[@]}" pretrain.family=roberta model.vocab="$TMP/nomask" output.dir="$TMP/f3"
    # A model folder of another family than pretrain.family: refused, not trained as the folder's.
    one_error "pretrain.family: is roberta, and model.path/model.name name a GPT-2 folder" \
      "$CTXSIM" pretrain "${TINY[@]}" pretrain.family=roberta model.path="$TMP/gpt2/model" model.vocab=data/vocab/gpt2 output.dir="$TMP/f4"
    [ ! -e "$TMP/f1" ] && [ ! -e "$TMP/f3/model" ] && [ ! -e "$TMP/f4/model" ] || fail "a refused pretraining wrote a model"
    ;;
  bad_input)  # one clear error each, exit 1, nothing trained
    one_error "pretrain.heads: 3 heads do not divide pretrain.hidden=32" "$CTXSIM" pretrain "${TINY[@]}" pretrain.heads=3 output.dir="$TMP/b1"
    [ ! -e "$TMP/b1" ] || fail "a refused shape left $TMP/b1"
    grep -v '^\[MASK\]$' data/vocab/bert-base-uncased.txt > "$TMP/nomask.txt"
    one_error "has no [MASK] token" "$CTXSIM" pretrain "${TINY[@]}" model.vocab="$TMP/nomask.txt" output.dir="$TMP/b2"
    one_error "no document of the held-out split has text (corpus.heldout_every=50, 40 documents)" \
      "$CTXSIM" pretrain "${TINY[@]}" corpus.heldout_every=50 output.dir="$TMP/b3"
    one_error "corpus.heldout_every: pretraining holds documents out" "$CTXSIM" pretrain "${TINY[@]}" corpus.heldout_every=0 output.dir="$TMP/b4"
    # On every rank the same check: the message once (from rank 0), exit 1.
    timeout 120 $MPI -n 9 "$CTXSIM" pretrain "${TINY[@]}" output.dir="$TMP/b5" > /dev/null 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "9 ranks for 8 samples: exit $rc"
    [ "$(grep -c 'ctxsim: error: ' "$TMP/err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "pretrain.batch_size: 8 samples a step cannot be shared by 9 ranks"
    [ ! -e "$TMP/b5" ] || fail "a refused run left $TMP/b5"
    one_error "pretrain.warmup_steps: 50 warmup steps exceed the 24 steps" "$CTXSIM" pretrain "${TINY[@]}" pretrain.warmup_steps=50 output.dir="$TMP/b6"
    # A checkpoint folder of another config: the keys that differ are named.
    "$CTXSIM" pretrain "${TINY[@]}" pretrain.steps=4 pretrain.warmup_steps=1 output.dir="$TMP/c" > /dev/null 2>&1 || fail "first run"
    one_error "checkpoint of a different config: pretrain.hidden: 32 → 64" \
      "$CTXSIM" pretrain "${TINY[@]}" pretrain.steps=4 pretrain.warmup_steps=1 pretrain.hidden=64 output.dir="$TMP/c"
    contains "$(cat "$TMP/err")" "output.overwrite=true"
    # Damage in the middle of the weights: the checksum tells.
    size=$(stat -c %s "$TMP/c/checkpoint.safetensors")
    printf '\x7f\x7f\x7f\x7f' | dd of="$TMP/c/checkpoint.safetensors" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
    one_error "checkpoint.safetensors: the checkpoint is damaged (its checksum does not match)" \
      "$CTXSIM" pretrain "${TINY[@]}" pretrain.steps=8 pretrain.warmup_steps=1 output.dir="$TMP/c"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
