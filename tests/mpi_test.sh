#!/usr/bin/env bash
# Multi-rank checks with real MPI ranks (mpiexec, oversubscribed on 2 cores), run by ctest:
# mpi_test.sh CTXSIM CASE. Stores are compared with tests/compare_stores.py (h5py).
set -uo pipefail
CTXSIM=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BG=""
. "$(dirname "$0")/kill_job.sh"
cleanup() { [ -n "$BG" ] && kill_job "$BG"; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
MPI="mpiexec --bind-to none"

"$CTXSIM" init-model --preset bert-tiny --seed 4 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
# float64: count-for-count comparisons across thread counts (SPEC §4 note).
ARGS=(configs/default.yaml model.path="$TMP/m" model.dtype=float64 samples.num_samples=90 runtime.unit_size=6
      runtime.batch_size=4 'selection=[{top_fraction: 0.02}, {relative_to_max: 0.98}]' statistics.examples=[0,50])
run() {  # run NP OUT [extra overrides…]
  local np=$1 out=$2; shift 2
  timeout 300 $MPI -n "$np" "$CTXSIM" run "${ARGS[@]}" output.dir="$out" "$@" > "$out.log" 2>&1
}
compare() { /usr/bin/python3 "$HERE/compare_stores.py" "$1/store.h5" "$2/store.h5" || fail "stores differ: $1 vs $2"; }
wait_units() {  # wait_units STORE N: poll the resume state until N units are done (bounded)
  for _ in $(seq 1 600); do
    s=$("$CTXSIM" status "$1" 2>/dev/null)
    n=$(sed -n 's/^units done: \([0-9]*\) of.*/\1/p' <<< "$s")
    [ -n "$n" ] && [ "$n" -ge "$2" ] && return 0
    [[ $s == complete* ]] && fail "finished before it could be interrupted"
    sleep 0.1
  done
  fail "no progress after 60 s: $s"
}

case "$CASE" in
  rank_invariance)
    for np in 1 2 3; do run "$np" "$TMP/r$np" || fail "run on $np ranks: $(tail -3 "$TMP/r$np.log")"; done
    contains "$(cat "$TMP/r3.log")" "3 rank(s)"
    compare "$TMP/r1" "$TMP/r2"
    compare "$TMP/r1" "$TMP/r3"
    [ "$(grep -c 'ctxsim: progress' "$TMP/r3.log")" -ge 1 ] || fail "no progress line"
    [ "$(grep -c 'done:' "$TMP/r3.log")" -eq 1 ] || fail "rank 0 alone should report"
    # The units' sums are the same on any rank count, so the intervals are (SPEC 5.1).
    for np in 1 3; do "$CTXSIM" summary "$TMP/r$np/store.h5" | tail -n +2 > "$TMP/s$np.txt" || fail "summary of r$np"; done
    contains "$(cat "$TMP/s1.txt")" "95% bootstrap intervals (1000 resamples of the 15 work units)"
    cmp -s "$TMP/s1.txt" "$TMP/s3.txt" || fail "the summaries of 1 and 3 ranks differ: $(diff "$TMP/s1.txt" "$TMP/s3.txt" | head -5)"
    ;;
  kill_resume)
    run 1 "$TMP/ref" || fail "reference run"
    CTXSIM_UNIT_DELAY_MS=400 setsid $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/k" > "$TMP/k1.log" 2>&1 &
    BG=$!
    wait_units "$TMP/k/store.h5" 4
    kill_job "$BG"; BG=""
    s=$("$CTXSIM" status "$TMP/k/store.h5")
    contains "$s" "units done:"
    # Resume with another rank count.
    run 3 "$TMP/k" || fail "resume: $(tail -3 "$TMP/k.log")"
    contains "$(cat "$TMP/k.log")" "resuming"
    compare "$TMP/ref" "$TMP/k"
    [ ! -e "$TMP/k/store.h5.progress" ] || fail "resume state left behind"
    ;;
  sigterm)
    run 1 "$TMP/ref" || fail "reference run"
    CTXSIM_UNIT_DELAY_MS=400 setsid $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/t" > "$TMP/t1.log" 2>&1 &
    BG=$!
    wait_units "$TMP/t/store.h5" 2
    # As SLURM does (srun delivers the signal to every task): SIGTERM to the ranks themselves.
    pkill -TERM -P "$BG" || fail "no rank to signal"
    wait "$BG"; rc=$?; BG=""
    [ $rc -eq 75 ] || fail "exit code $rc after SIGTERM, expected 75: $(tail -5 "$TMP/t1.log")"
    contains "$(cat "$TMP/t1.log")" "SIGTERM: progress saved"
    # The last progress line of a stopped job says so (not "ETA 0s").
    grep "progress: samples" "$TMP/t1.log" | tail -1 | grep -q "stopped$" || fail "last progress line: $(grep "progress:" "$TMP/t1.log" | tail -1)"
    "$CTXSIM" summary "$TMP/t/store.h5" 2>/dev/null && fail "an interrupted store reads as complete"
    run 2 "$TMP/t" || fail "rerun: $(tail -3 "$TMP/t.log")"
    compare "$TMP/ref" "$TMP/t"
    ;;
  tensor_path)
    # The whole-tensor statistics of GPU ranks, run on the CPU (a test hook): on 2 ranks, their
    # device counts folded in at each flush, the same store as the kernels on 1 rank.
    run 1 "$TMP/ref" || fail "reference run"
    CTXSIM_TENSOR_STATISTICS=1 run 2 "$TMP/t" runtime.flush_units=2 || fail "tensor path: $(tail -3 "$TMP/t.log")"
    compare "$TMP/ref" "$TMP/t"
    ;;
  errors)
    # A config error: every rank finds it; one message, exit 1, nothing written.
    timeout 60 $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/e1" samples.seq_len=banana > /dev/null 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "config error: exit $rc"
    [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] || fail "config error printed $(grep -c 'error:' "$TMP/err") times: $(cat "$TMP/err")"
    [ ! -e "$TMP/e1" ] || fail "config error wrote output"
    # The corpus unreadable on rank 1 only (injected): rank 1's message, once; no hang.
    CTXSIM_FAULT=setup@1 timeout 60 $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/e2" > /dev/null 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "rank-local error: exit $rc: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "[rank 1] ctxsim: error:"
    [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] || fail "printed more than once: $(cat "$TMP/err")"
    # A stage failing on one rank mid-run: one message, exit 1, store not complete.
    CTXSIM_FAULT=unit@1 timeout 60 $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/e3" > /dev/null 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "stage error: exit $rc"
    [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] || fail "printed more than once: $(cat "$TMP/err")"
    s=$("$CTXSIM" status "$TMP/e3/store.h5")
    [[ $s != complete* ]] || fail "failed run marked complete: $s"
    # A corrupt checkpoint: truncated weights.
    mkdir -p "$TMP/bad"; cp "$TMP/m/config.json" "$TMP/m/vocab.txt" "$TMP/bad/"
    head -c 5000 "$TMP/m/model.safetensors" > "$TMP/bad/model.safetensors"
    timeout 60 $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" model.path="$TMP/bad" output.dir="$TMP/e4" > /dev/null 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "corrupt checkpoint: exit $rc"
    contains "$(cat "$TMP/err")" "model.safetensors"
    [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] || fail "printed more than once: $(cat "$TMP/err")"
    [ ! -e "$TMP/e4/store.h5" ] || fail "corrupt checkpoint wrote a store"
    # NCCL asked of a build without CUDA: says how to build it.
    if ! grep -q "CTXSIM_CUDA:BOOL=ON" "$(dirname "$CTXSIM")/CMakeCache.txt" 2>/dev/null; then
      timeout 60 $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" runtime.device=cuda output.dir="$TMP/e5" > /dev/null 2> "$TMP/err"
      rc=$?
      [ $rc -eq 1 ] || fail "device=cuda without CUDA: exit $rc"
      contains "$(cat "$TMP/err")" "reconfigure with -DCTXSIM_CUDA=ON"
      [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] || fail "printed more than once: $(cat "$TMP/err")"
    fi
    ;;
  gpt2_ranks_resume | llama_ranks_resume)
    # SPEC §5 for a causal decoder in its own frame (SPEC §7): a GPT-2 store, and a Llama one (the
    # Llama 3 tokenizer: rotary positions, grouped-query heads), is the same on 1 and 3 ranks, and
    # after a SIGKILL on 2 ranks and a resume on 3.
    if [ "$CASE" = gpt2_ranks_resume ]; then
      [ -f data/vocab/gpt2/merges.txt ] || { echo "skip: no data/vocab/gpt2 (scripts/setup.sh)"; exit 77; }
      "$CTXSIM" init-model --family gpt2 --preset gpt2-tiny --seed 4 --vocab data/vocab/gpt2 --out "$TMP/g" > /dev/null || fail "init gpt2"
      family=gpt2 shape="(gpt2, 2 layers, 2 heads, float64)"
    else
      [ -f data/tokenizers/llama3/tokenizer.json ] || { echo "skip: no data/tokenizers/llama3 (scripts/setup.sh)"; exit 77; }
      "$CTXSIM" init-model --family llama --preset smollm2-135m --layers 2 --hidden 96 --heads 6 --ffn 128 --seed 4 \
        --vocab data/tokenizers/llama3 --out "$TMP/g" > /dev/null || fail "init llama"
      family=llama shape="(llama, 2 layers, 6 heads, float64)"
    fi
    G=(model.path="$TMP/g")
    run 1 "$TMP/r1" "${G[@]}" || fail "run on 1 rank: $(tail -3 "$TMP/r1.log")"
    run 3 "$TMP/r3" "${G[@]}" || fail "run on 3 ranks: $(tail -3 "$TMP/r3.log")"
    contains "$(cat "$TMP/r1.log")" "$shape"
    compare "$TMP/r1" "$TMP/r3"
    CTXSIM_UNIT_DELAY_MS=400 setsid $MPI -n 2 "$CTXSIM" run "${ARGS[@]}" "${G[@]}" output.dir="$TMP/k" > "$TMP/k1.log" 2>&1 &
    BG=$!
    wait_units "$TMP/k/store.h5" 4
    kill_job "$BG"; BG=""
    run 3 "$TMP/k" "${G[@]}" || fail "resume: $(tail -3 "$TMP/k.log")"
    contains "$(cat "$TMP/k.log")" "resuming"
    compare "$TMP/r1" "$TMP/k"
    [ "$(/usr/bin/python3 -c 'import sys, h5py; f = h5py.File(sys.argv[1]); print(f.attrs["model_family"].decode(), f.attrs["causal"])' \
        "$TMP/k/store.h5")" = "$family 1" ] || fail "the store does not name the decoder's causal attention"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
