#!/usr/bin/env bash
# The CUDA build's behaviour where no GPU is present (scripts/cuda_build.sh runs it in CI):
# cuda_build_test.sh CTXSIM [CPU_CTXSIM], from the repository root. --version says CUDA and NCCL are built in
# and that no device is present; runtime.device=cuda is one clear error that writes nothing; the
# CPU suite's core cases (a run on 1, 2 and 3 ranks, a kill and a resume) pass unchanged; given
# the CPU build's binary (Debian's LibTorch), a float64 run's integers equal its own.
# On a machine with a GPU the no-device checks are skipped (scripts/device_check.sh covers it).
set -uo pipefail
CTXSIM=$1
CPU_CTXSIM=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "FAIL [cuda build]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
say() { echo "[cuda-build test] $*"; }

version=$("$CTXSIM" --version) || fail "--version"
say "--version:"
sed 's/^/    /' <<< "$version"
[ "$(wc -l <<< "$version")" -eq 3 ] || fail "--version should print 3 lines"
contains "$(sed -n 2p <<< "$version")" "built in"
contains "$(sed -n 2p <<< "$version")" "CUDA 13."
contains "$(sed -n 3p <<< "$version")" "NCCL 2."
gpu=0
nvidia-smi -L 2> /dev/null | grep -q '^GPU' && gpu=1

"$CTXSIM" init-model --preset bert-tiny --seed 4 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
ARGS=(configs/default.yaml model.path="$TMP/m" samples.num_samples=12 runtime.unit_size=6 runtime.batch_size=4)
if [ $gpu = 0 ]; then
  contains "$(sed -n 2p <<< "$version")" "no CUDA device present"
  # runtime.device=cuda: one line naming the key, the reason and the fix (once, not per rank);
  # exit 1 (mpiexec adds its own banner); no store.
  for np in 1 2; do
    launch=()
    [ $np -gt 1 ] && launch=(mpiexec --bind-to none -n $np)
    "${launch[@]}" "$CTXSIM" run "${ARGS[@]}" runtime.device=cuda output.dir="$TMP/c$np" > "$TMP/out" 2> "$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "runtime.device=cuda on $np rank(s) exited $rc: $(cat "$TMP/err")"
    [ $np -gt 1 ] || [ "$(grep -c . "$TMP/err")" -eq 1 ] || fail "runtime.device=cuda: expected one line, got: $(cat "$TMP/err")"
    [ "$(grep -c 'ctxsim: error' "$TMP/err")" -eq 1 ] || fail "runtime.device=cuda on $np rank(s): expected one error, got: $(cat "$TMP/err")"
    contains "$(cat "$TMP/err")" "runtime.device: this ctxsim has CUDA built in, but no CUDA device is visible"
    contains "$(cat "$TMP/err")" "set runtime.device=cpu"
    [ ! -e "$TMP/c$np/store.h5" ] || fail "runtime.device=cuda left a store"
  done
  "$CTXSIM" bench-model --model "$TMP/m" --device cuda > /dev/null 2> "$TMP/err" && fail "bench-model --device cuda ran without a GPU"
  contains "$(cat "$TMP/err")" "no CUDA device is visible"
  say "runtime.device=cuda: one error, exit 1, nothing written (1 and 2 ranks, bench-model)"
fi
# runtime.device=auto without a GPU computes on the CPU (and says so).
"$CTXSIM" run "${ARGS[@]}" output.dir="$TMP/auto" > "$TMP/auto.log" 2>&1 || fail "run with runtime.device=auto: $(tail -3 "$TMP/auto.log")"
[ $gpu = 1 ] || contains "$(cat "$TMP/auto.log")" "thread(s), cpu;"

# Another LibTorch, the same counts: float64 makes them independent of the BLAS (SPEC §4 note).
if [ -n "$CPU_CTXSIM" ]; then
  for b in "$CTXSIM" "$CPU_CTXSIM"; do
    out=$TMP/f64-$(basename "$(dirname "$b")")
    "$b" run "${ARGS[@]}" samples.num_samples=60 model.dtype=float64 output.report=false output.dir="$out" > "$out.log" 2>&1 \
      || fail "float64 run of $b: $(tail -3 "$out.log")"
  done
  /usr/bin/python3 "$HERE/compare_stores.py" "$TMP/f64-$(basename "$(dirname "$CTXSIM")")/store.h5" \
    "$TMP/f64-$(basename "$(dirname "$CPU_CTXSIM")")/store.h5" || fail "the CUDA build's float64 counts differ from $CPU_CTXSIM's"
  say "float64 counts equal to $CPU_CTXSIM's ($("$CPU_CTXSIM" --version | sed -n 2p))"
fi

# The CPU suite's core cases, unchanged, on this binary.
for case in rank_invariance kill_resume; do
  bash "$HERE/mpi_test.sh" "$CTXSIM" "$case" || fail "mpi.$case on the CUDA build"
  say "mpi.$case passed"
done
say "passed"
