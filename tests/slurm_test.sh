#!/usr/bin/env bash
# Job scripts on a real one-node SLURM cluster (munged + slurmctld + slurmd on loopback, brought
# up by jobs/local_cluster.sh in a temp folder and stopped by PID at the end, even on failure).
#   slurm_test.sh CTXSIM CASE      CASE: submit_sweep | requeue | mpirun
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
    # A 4-point sweep, at most 2 tasks at once, resources from plan, and a collect after it.
    { cat "$TMP/base.yaml"; printf 'sweep:\n  name: seeds\n  samples.seed: [3, 4, 5, 6]\n'; } > "$TMP/sweep.yaml"
    out=$("$CTXSIM" submit "$TMP/sweep.yaml" --ranks 2 --overcommit --array-throttle 2 --then collect --plan-batches 1) || fail "submit: $out"
    contains "$out" "(4 array tasks, one per point of sweep seeds (at most 2 at once))"
    contains "$out" "ctxsim collect $TMP/out/seeds, after job"
    array=$(sed -n 's/^submitted job \([0-9]*\) (4 array.*/\1/p' <<< "$out")
    then_job=$(sed -n 's/^submitted job \([0-9]*\) (ctxsim collect.*/\1/p' <<< "$out")
    [ -n "$array" ] && [ -n "$then_job" ] || fail "no job ids in: $out"
    time=$(grep -o -- '--time=[0-9:-]*' <<< "$out" | cut -d= -f2)
    mem=$(grep -o -- '--mem-per-cpu=[0-9]*M' <<< "$out" | cut -d= -f2)
    [ -n "$time" ] && [ -n "$mem" ] || fail "no resources from plan in: $out"
    show=$(scontrol show job "${array}_0" 2>&1; scontrol show job "$array" 2>&1)
    contains "$show" "JobName=ctxsim-seeds"
    contains "$show" "TimeLimit=$time"
    contains "$show" "MinMemoryCPU=$mem"
    contains "$(scontrol show job "$array" 2>&1)" "ArrayTaskThrottle=2"
    dep=$(scontrol show job "$then_job")
    contains "$dep" "JobName=ctxsim-seeds-collect"
    contains "$dep" "Dependency=afterok:${array}_*"
    # Never more than 2 of the sweep's tasks running at once.
    most=0
    for _ in $(seq 1 1500); do
      n=$(squeue -h -r -t R -j "$array" 2>/dev/null | wc -l)
      [ "$n" -gt "$most" ] && most=$n
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.2
    done
    [ "$most" -le 2 ] || fail "$most array tasks ran at once under --array-throttle 2"
    wait_idle 300
    for seed in 3 4 5 6; do
      p="$TMP/out/seeds/samples.seed-$seed"
      s=$("$CTXSIM" status "$p/store.h5" 2>/dev/null)
      [[ $s == complete* ]] || fail "point seed $seed: $s"
      grep -q "^samples:" "$p/config.yaml" || fail "no config.yaml beside point $seed"
      grep -qx "# sweep seeds, point $((seed - 3)): samples.seed=$seed" "$p/config.yaml" || fail "config.yaml does not name point $seed: $(head -3 "$p/config.yaml")"
    done
    ls "$TMP"/out/seeds/ctxsim-"$array"_{0,1,2,3}.log > /dev/null || fail "one log per point expected"
    contains "$(cat "$TMP"/out/seeds/ctxsim-"$array"_1.log)" "2 rank(s)"
    # The dependent collect ran after them: its CSV has a column for the swept key.
    contains "$(scontrol show job "$then_job")" "JobState=COMPLETED"
    contains "$(cat "$TMP"/out/seeds/ctxsim-collect-"$then_job".log)" "16 rows from 4 store(s)"  # 4 points x 1 rule x 2 layers x 2 heads
    # Provenance read back from each point's store: the array task, its host, the command line.
    /usr/bin/python3 - "$TMP/out/seeds" "$array" "$(hostname)" <<'PY' || fail "provenance"
import csv, sys, h5py
folder, array, host = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(f"{folder}/collect.csv", newline="")))
assert len(rows) == 16, len(rows)
assert sorted({r["samples.seed"] for r in rows}) == ["3", "4", "5", "6"], {r["samples.seed"] for r in rows}
for i, seed in enumerate([3, 4, 5, 6]):
    f = h5py.File(f"{folder}/samples.seed-{seed}/store.h5", "r")
    a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    assert a["slurm_array_job_id"] == array, (a["slurm_array_job_id"], array)
    assert a["slurm_array_task_id"] == str(i), a["slurm_array_task_id"]
    assert a["slurm_job_id"].isdigit(), a["slurm_job_id"]
    assert a["slurm_job_name"] == "ctxsim-seeds", a["slurm_job_name"]
    assert a["slurm_restart_count"] == "0", a["slurm_restart_count"]
    assert a["hosts"] == host, (a["hosts"], host)
    assert " run " in a["command_line"] and f"--sweep-index {i}" in a["command_line"], a["command_line"]
    assert a["sweep"] == "seeds" and a["sweep_index"] == str(i) and a["sweep_point"] == f"samples.seed={seed}", a
PY
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
    # The session that finished the store is the requeued one: SLURM's restart count says so.
    /usr/bin/python3 - "$TMP/out/store.h5" "$job" <<'PY' || fail "provenance after the requeue"
import sys, h5py
a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in h5py.File(sys.argv[1], "r").attrs.items()}
assert a["slurm_job_id"] == sys.argv[2], (a["slurm_job_id"], sys.argv[2])
assert a["slurm_restart_count"] == "1", a["slurm_restart_count"]
assert a["slurm_array_job_id"] == "" and a["sweep"] == "", a
PY
    /usr/bin/python3 "$HERE/compare_stores.py" "$TMP/ref/store.h5" "$TMP/out/store.h5" || fail "requeued run differs from an uninterrupted one"
    ;;
  mpirun)
    # runtime.launcher=mpirun: Open MPI's mpirun inside the allocation starts the ranks (as root
    # here, which Open MPI refuses unless told). Debian's Open MPI has no PMI-2, so srun-pmi2 is
    # for sites whose MPI has it and is not run here.
    out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$CTXSIM" submit "$TMP/base.yaml" runtime.launcher=mpirun --ranks 2 \
      --overcommit --plan-batches 1) || fail "submit: $out"
    job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' <<< "$out")
    wait_idle 240
    s=$("$CTXSIM" status "$TMP/out/store.h5" 2>/dev/null)
    [[ $s == complete* ]] || fail "mpirun job: $s"
    contains "$(cat "$TMP/out/jobs/ctxsim-$job.log")" "2 rank(s)"
    contains "$(cat "$TMP/out/jobs/ctxsim.sbatch")" "LAUNCHER=mpirun"
    [ "$(h5dump -a /ranks "$TMP/out/store.h5" | grep -o '(0): [0-9]*')" = "(0): 2" ] || fail "not 2 ranks: $(h5dump -a /ranks "$TMP/out/store.h5")"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
