#!/usr/bin/env bash
# Job scripts on a real one-node SLURM cluster (munged + slurmctld + slurmd on loopback, brought
# up by jobs/local_cluster.sh in a temp folder and stopped by PID at the end, even on failure).
#   slurm_test.sh CTXSIM CASE      CASE: submit_sweep | requeue
set -uo pipefail
CTXSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TMP=$(mktemp -d)
cleanup() { bash "$ROOT/jobs/local_cluster.sh" stop "$TMP/cluster" > /dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup EXIT
fail() {
  echo "FAIL [$CASE]: $*"
  for f in "$TMP"/out/*/*.log "$TMP"/out/*/*/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  tail -20 "$TMP/cluster/log/slurmctld.log" 2>/dev/null
  exit 1
}
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
command -v sbatch > /dev/null || fail "slurm-wlm is not installed (scripts/setup.sh installs it)"

chmod 755 "$TMP"  # munged runs as user munge and must reach its folder
env_line=$(bash "$ROOT/jobs/local_cluster.sh" start "$TMP/cluster") || fail "the local cluster did not start"
eval "$env_line"
export SLURM_CONF
cd "$ROOT"
"$CTXSIM" init-model --preset bert-tiny --seed 6 --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
cat > "$TMP/base.yaml" <<YAML
corpus: {format: brown, path: data/brown, max_documents: 60}
samples: {num_samples: 48, seed: 3}
model: {path: $TMP/m, dtype: float64}
selection: [{top_fraction: 0.02}]
statistics: {examples: [0]}
output: {dir: $TMP/out}
runtime: {unit_size: 6, batch_size: 3}
YAML

wait_idle() {  # wait_idle SECONDS: until the queue is empty
  for _ in $(seq 1 $(( $1 * 5 ))); do
    [ -z "$(squeue -h 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  fail "jobs still queued after $1 s: $(squeue)"
}

case "$CASE" in
  submit_sweep)
    { cat "$TMP/base.yaml"; printf 'sweep:\n  name: seeds\n  samples.seed: [3, 4]\n'; } > "$TMP/sweep.yaml"
    out=$("$CTXSIM" submit "$TMP/sweep.yaml" --ranks 2 --overcommit) || fail "submit: $out"
    contains "$out" "(2 array tasks)"
    wait_idle 240
    for p in "samples.seed=3" "samples.seed=4"; do
      s=$("$CTXSIM" status "$TMP/out/seeds/$p/store.h5" 2>/dev/null)
      [[ $s == complete* ]] || fail "point $p: $s"
    done
    ls "$TMP"/out/seeds/ctxsim-*_0.log "$TMP"/out/seeds/ctxsim-*_1.log > /dev/null || fail "one log per point expected"
    contains "$(cat "$TMP"/out/seeds/ctxsim-*_1.log)" "2 rank(s)"
    out=$("$CTXSIM" collect "$TMP/out/seeds") || fail "collect: $out"
    contains "$out" "8 rows from 2 store(s)"  # 2 points x 1 rule x 2 layers x 2 heads
    ;;
  requeue)
    "$CTXSIM" run "$TMP/base.yaml" output.dir="$TMP/ref" > /dev/null 2>&1 || fail "reference run"
    out=$(CTXSIM_UNIT_DELAY_MS=1500 "$CTXSIM" submit "$TMP/base.yaml" --ranks 2 --overcommit) || fail "submit: $out"
    job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' <<< "$out")
    [ -n "$job" ] || fail "no job id in: $out"
    for _ in $(seq 1 600); do
      s=$("$CTXSIM" status "$TMP/out/store.h5" 2>/dev/null)
      n=$(sed -n 's/^units done: \([0-9]*\) of.*/\1/p' <<< "$s")
      [ -n "$n" ] && [ "$n" -ge 2 ] && break
      [[ $s == complete* ]] && fail "finished before it could be interrupted"
      sleep 0.1
    done
    [ -n "${n:-}" ] || fail "no progress: $s"
    # What --signal=B:TERM@120 does before the time limit: SIGTERM to the batch shell.
    scancel --batch --signal=TERM "$job" || fail "scancel"
    wait_idle 300
    s=$("$CTXSIM" status "$TMP/out/store.h5")
    [[ $s == complete* ]] || fail "after requeue: $s"
    log=$(cat "$TMP"/out/jobs/ctxsim-"$job".log)
    contains "$log" "requeueing"
    contains "$log" "resuming"
    /usr/bin/python3 "$HERE/compare_stores.py" "$TMP/ref/store.h5" "$TMP/out/store.h5" || fail "requeued run differs from an uninterrupted one"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
