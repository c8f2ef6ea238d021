#!/usr/bin/env bash
# docs/FINDINGS.md "Pruning SmolLM2": `ctxsim prune configs/prune/smollm2.yaml` (next-token loss, 500
# held-out Brown windows, 30 x 9 heads, ten random orders and four ctxsim scores as orders), with
# the scores from a `ctxsim run` of the same model (2,000 windows, as scripts/real_models.sh runs it).
# The job is about 4-5 hours on 2 cores of an AMD EPYC at AVX-512, longer than one working session,
# so its resume state travels with the repository: results/real_models/prune_smollm2/state holds
# the pruning store and its progress file as the last stop left them; this script starts from
# them, and on a stop (SIGTERM: the unit in flight finishes, exit 75) puts the new state back.
# When the job completes it writes the summary (prune.txt), the store, its report and figures, and
# every run-store statistic against importance with the curves at 50% (scores.txt) there instead.
#   bash scripts/prune_smollm2.sh            # run or resume; Ctrl-C or SIGTERM stops it cleanly
# Both runs use OpenBLAS's SkylakeX kernels (AVX-512F) on 2 threads: their float32 products
# round the same at any thread count (docs/PERFORMANCE.md, "Machines and ISA levels"), so the
# scores store rebuilt on another session's machine has the same bytes, and the pruning store's
# units computed before and after a resume the same numbers. A CPU without AVX-512 cannot
# continue this state (the scores' digest would differ; ctxsim refuses it and says why), nor can a
# ctxsim whose forward computes other bits (times.txt names the revision of each stretch: build
# that one to continue).
set -euo pipefail
cd "$(dirname "$0")/.."
CTXSIM=${CTXSIM:-build/ctxsim}
RESULTS=results/real_models/prune_smollm2
STATE=$RESULTS/state
SMOLLM=data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
SCORES=runs/real_models/smollm2/store.h5
STORE=runs/prune/SmolLM2-135M-Instruct.Q4_1/store.h5  # configs/prune/smollm2.yaml's output.dir
OUTTXT=$(dirname "$STORE")/prune.txt  # ctxsim's summary, moved into results when the job completes
[ -e "$SMOLLM" ] || { echo "prune_smollm2.sh: $SMOLLM is missing: scripts/setup.sh writes it"; exit 1; }
grep -qw avx512f /proc/cpuinfo || { echo "prune_smollm2.sh: this CPU has no AVX-512, which the committed state was computed with; run on an AVX-512 node"; exit 1; }
export OPENBLAS_CORETYPE=SkylakeX
mkdir -p "$RESULTS" "$(dirname "$STORE")"
if [ -e "$RESULTS/store.h5" ]; then  # done before: its summary, not five more hours
  echo "[prune_smollm2] the job completed before ($RESULTS/store.h5):"
  cat "$RESULTS/prune.txt" "$RESULTS/scores.txt"
  exit 0
fi
# The scores (a complete store returns at once; a stopped one resumes).
echo "[prune_smollm2] the scores: ctxsim run of SmolLM2 on 2,000 windows into $(dirname "$SCORES")"
"$CTXSIM" run configs/default.yaml statistics.examples=[] output.report=false output.dir="$(dirname "$SCORES")" model.path="$SMOLLM" \
  samples.num_samples=2000 'statistics.separators=[".", ","]' runtime.threads=2 > /dev/null
if [ ! -e "$STORE" ] && [ -e "$STATE/store.h5" ]; then
  echo "[prune_smollm2] resuming from the committed state ($STATE)"
  cp "$STATE/store.h5" "$STATE/store.h5.progress" "$(dirname "$STORE")/"
fi
version=$("$CTXSIM" --version | head -1)
t0=$(date +%s)
# SIGTERM to this script reaches ctxsim, and Ctrl-C reaches it through the process group (this
# script waits on): the unit in flight finishes, the progress is saved, exit 75.
"$CTXSIM" prune configs/prune/smollm2.yaml prune.scores_from="$SCORES" runtime.threads=2 > "$OUTTXT" &
child=$!
trap 'kill -TERM "$child" 2> /dev/null || true' TERM
trap : INT
while kill -0 "$child" 2> /dev/null; do
  wait "$child" || true  # returns early when a signal's trap runs: ctxsim is still finishing
done
rc=0
wait "$child" || rc=$?  # its exit status (bash keeps it for a reaped child)
trap - TERM INT
seconds=$(( $(date +%s) - t0 ))
save_state() {
  mkdir -p "$STATE"
  cp "$STORE" "$STORE.progress" "$STATE/"
}
case $rc in
  0)
    mv "$OUTTXT" "$RESULTS/prune.txt"
    cp "$STORE" "$RESULTS/store.h5"
    # The report (the curves, importance by layer and head, each score against importance; its
    # figures inside it) and the figures as SVG.
    if [ -e "$(dirname "$STORE")/report.html" ]; then
      rm -rf "$RESULTS/figures" && mkdir -p "$RESULTS/figures"
      cp "$(dirname "$STORE")/report.html" "$RESULTS/" && cp "$(dirname "$STORE")"/figures/*.svg "$RESULTS/figures/"
    fi
    rm -rf "$STATE"
    echo "completed: $seconds s this stretch; $version; $(date -u +%F)" >> "$RESULTS/times.txt"
    # Every statistic of the score store against importance, not only the four ordered by.
    /usr/bin/python3 scripts/prune_scores.py "$RESULTS/store.h5" "$SCORES" > "$RESULTS/scores.txt"
    cat "$RESULTS/prune.txt" "$RESULTS/scores.txt" ;;
  75)
    rm -f "$OUTTXT"
    save_state
    echo "stopped: $seconds s this stretch; $version; $(date -u +%F)" >> "$RESULTS/times.txt"
    echo "[prune_smollm2] stopped; the state is in $STATE (commit it to carry the job to another session)"
    /usr/bin/python3 scripts/prune_scores.py "$STATE/store.h5" "$SCORES" || true ;;  # a first look at the units done
  *)
    # A failure or a kill: the units written so far are durable (the store and its progress file
    # are written so that a crash loses at most the unit in flight), so they are kept too.
    rm -f "$OUTTXT"
    if [ -e "$STORE.progress" ]; then
      save_state
      echo "failed (exit $rc): $seconds s this stretch; $version; $(date -u +%F)" >> "$RESULTS/times.txt"
    fi
    exit $rc ;;
esac
