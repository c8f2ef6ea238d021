#!/usr/bin/env bash
# `ctxsim segment` (SPEC §6) on the real Brown corpus with the model trained here, run by ctest:
# segment_test.sh CTXSIM CASE.
#   ranks_resume  1 vs 2 ranks and a SIGKILL + resume on other ranks give the same store, byte for byte
#   learned       a small slice of the benchmark: the trained model's best layer beats random boundaries
#   text          --text: the file's sentences back, segments apart, nothing else on stdout
#   bad_input     one clear error for each kind of bad input, and nothing written
#   store_integrity  a segmentation store is checked as a run store is: a changed value, an
#                 impossible one, swapped labels, a downgraded version, a store of the other job;
#                 every reader refuses it (status too), none crashes
set -uo pipefail
CTXSIM=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
BG=""
. "$HERE/kill_job.sh"
cleanup() { [ -n "$BG" ] && kill_job "$BG"; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
[ -d data/brown ] && [ -f models/brown-bert/model.safetensors ] || { echo "SKIP: data/brown or models/brown-bert missing (scripts/setup.sh)"; exit 77; }
MPI="mpiexec --bind-to none"
CONFIG=configs/segment/choi.yaml
# A slice: 4 test documents per subset and 4 dev documents (20 in all). One thread per rank
# whatever the rank count: float sums in the GEMMs depend on the thread count (SPEC §5: results are
# compared at a fixed thread count, or in float64), not on the ranks.
SLICE=(segment.documents=4 segment.dev_documents=4 runtime.threads=1)
compare() { /usr/bin/python3 "$HERE/compare_stores.py" --bytes "$1/store.h5" "$2/store.h5" || fail "stores differ: $1 vs $2"; }

case "$CASE" in
  ranks_resume)
    # stdout (the job's table) and stderr (its log) apart: mpiexec forwards the two streams
    # separately, so in one file a log line can land inside the table.
    seg() {
      local np=$1 out=$2; shift 2
      timeout 600 $MPI -n "$np" "$CTXSIM" segment $CONFIG "${SLICE[@]}" output.dir="$out" "$@" > "$out.out" 2> "$out.log"
    }
    seg 1 "$TMP/r1" || fail "1 rank: $(tail -3 "$TMP/r1.log")"
    seg 2 "$TMP/r2" || fail "2 ranks: $(tail -3 "$TMP/r2.log")"
    contains "$(cat "$TMP/r2.log")" "2 rank(s)"
    compare "$TMP/r1" "$TMP/r2"
    # The summary of the store is the job's closing table.
    [ "$("$CTXSIM" summary "$TMP/r1/store.h5")" = "$(sed -n '/^segmentation:/,$p' "$TMP/r1.out")" ] || fail "summary differs from the job's table"
    # SIGKILL to every rank mid-job, then the same command on 1 rank finishes it.
    CTXSIM_UNIT_DELAY_MS=300 setsid $MPI -n 2 "$CTXSIM" segment $CONFIG "${SLICE[@]}" output.dir="$TMP/k" > "$TMP/k1.log" 2>&1 &
    BG=$!
    for _ in $(seq 1 600); do
      n=$("$CTXSIM" status "$TMP/k/store.h5" 2>/dev/null | sed -n 's/^units done: \([0-9]*\) of.*/\1/p')
      [ -n "$n" ] && [ "$n" -ge 6 ] && break
      sleep 0.1
    done
    [ -n "$n" ] && [ "$n" -ge 6 ] || fail "no progress to interrupt: $(tail -3 "$TMP/k1.log")"
    kill_job "$BG"; BG=""
    "$CTXSIM" summary "$TMP/k/store.h5" > /dev/null 2>&1 && fail "an interrupted store reads as complete"
    seg 1 "$TMP/k" || fail "resume: $(tail -3 "$TMP/k.log")"
    contains "$(cat "$TMP/k.log")" "resuming"
    compare "$TMP/r1" "$TMP/k"
    [ ! -e "$TMP/k/store.h5.progress" ] || fail "resume state left behind"
    echo "1 vs 2 ranks and kill + resume: identical"
    ;;
  learned)
    # 20 test documents per subset and 20 dev documents of held-out Brown text. Measured on this
    # slice: the trained model's best layer 37.7% Pk on 3-11 against random boundaries' 46.7%
    # (9.0 points); its step-0 weights 45.3% (1.4 points) and the seed-1 random model 45.9%
    # (0.8). The 6 points asked lie between (the full benchmark: 36.8% vs 49.1%,
    # docs/FINDINGS.md "Segmentation").
    # 40-70 s on 2 cores with one OpenMP thread (ctest's OMP_NUM_THREADS=1) beside another test or
    # a CPU burner (9-10 minutes when two 2-thread jobs spun against each other): the timeout
    # only catches a hang.
    out=$(timeout 600 "$CTXSIM" segment $CONFIG segment.documents=20 segment.dev_documents=20 output.dir="$TMP/l" 2> "$TMP/err") \
      || fail "segment: $(tail -3 "$TMP/err")"
    echo "$out"
    random=$(awk '$1 == "random/given" { print $3 }' <<< "$out")
    best=$(awk '$1 ~ /^layer[0-9]+\/heads-(c99|depth)\/given$/ { print $3 }' <<< "$out" | sort -g | head -1)
    [ -n "$random" ] && [ -n "$best" ] || fail "no random or model row in the table"
    awk -v b="$best" -v r="$random" 'BEGIN { exit !(b <= r - 6) }' || fail "best model layer Pk $best% is not 6 points under random's $random%"
    echo "best model layer Pk $best% vs random $random%"
    ;;
  text)
    # Three Brown documents' first sentences, one per line: the output is the same lines in order,
    # with exactly K-1 empty lines between them and nothing else.
    /usr/bin/python3 - "$TMP/in.txt" <<'PY' || fail "making the text"
import sys
out = []
for name in ["ca01", "cj42", "cr09"]:
    n = 0
    for line in open("data/brown/" + name, encoding="utf-8"):
        if line.strip() and n < 8:
            out.append(" ".join(t.rsplit("/", 1)[0] for t in line.split()))
            n += 1
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
    "$CTXSIM" segment $CONFIG --text "$TMP/in.txt" --segments 3 > "$TMP/out.txt" 2> "$TMP/err" || fail "--text: $(cat "$TMP/err")"
    [ "$(grep -c '^$' "$TMP/out.txt")" -eq 2 ] || fail "expected 2 empty lines (3 segments): $(cat "$TMP/out.txt")"
    diff <(grep -v '^$' "$TMP/out.txt") "$TMP/in.txt" > /dev/null || fail "the sentences did not come back unchanged and in order"
    [ "$(head -1 "$TMP/out.txt")" != "" ] && [ "$(tail -1 "$TMP/out.txt")" != "" ] || fail "an empty line at an end"
    contains "$(cat "$TMP/err")" "24 sentences in 3 segments"
    # Without --segments the method's own estimate: still the same sentences.
    "$CTXSIM" segment $CONFIG --text "$TMP/in.txt" > "$TMP/out2.txt" 2> /dev/null || fail "--text without --segments"
    diff <(grep -v '^$' "$TMP/out2.txt") "$TMP/in.txt" > /dev/null || fail "estimated: the sentences did not come back"
    # Under a launcher one process segments the file: printed once, not once per rank.
    timeout 300 $MPI -n 2 "$CTXSIM" segment $CONFIG --text "$TMP/in.txt" --segments 3 > "$TMP/out3.txt" 2> "$TMP/err3" \
      || fail "--text under mpiexec -n 2: $(cat "$TMP/err3")"
    cmp -s "$TMP/out.txt" "$TMP/out3.txt" || fail "--text under mpiexec -n 2 printed $(wc -l < "$TMP/out3.txt") lines, not the file once"
    ;;
  bad_input)
    one_error() {  # one_error EXPECTED COMMAND…: exit 1 (or 2), one error line, nothing on stdout
      local expected=$1; shift
      "$@" > "$TMP/o" 2> "$TMP/e"; local rc=$?
      [ $rc -ne 0 ] || fail "accepted: $*"
      contains "$(cat "$TMP/e")" "$expected"
      [ ! -s "$TMP/o" ] || fail "stdout not empty: $(cat "$TMP/o")"
      grep -q "internal error" "$TMP/e" && fail "internal error: $(cat "$TMP/e")"
      return 0
    }
    : > "$TMP/empty.txt"
    one_error "empty.txt: has no sentences" "$CTXSIM" segment $CONFIG --text "$TMP/empty.txt"
    printf 'a\0b\n' > "$TMP/bin.txt"
    one_error "bin.txt: holds NUL bytes" "$CTXSIM" segment $CONFIG --text "$TMP/bin.txt"
    printf 'caf\xe9 au lait\n' > "$TMP/latin1.txt"
    one_error "latin1.txt: byte 3: is not valid UTF-8" "$CTXSIM" segment $CONFIG --text "$TMP/latin1.txt"
    printf 'one sentence.\nanother one.\n' > "$TMP/two.txt"
    one_error "two.txt has only 2 sentences" "$CTXSIM" segment $CONFIG --text "$TMP/two.txt" --segments 3
    { echo "short."; for i in $(seq 1 200); do printf 'word%d ' "$i"; done; echo; } > "$TMP/long.txt"
    one_error "long.txt:2: this sentence has" "$CTXSIM" segment $CONFIG --text "$TMP/long.txt"
    one_error "--segments: goes with --text" "$CTXSIM" segment $CONFIG --segments 3
    one_error "corpus.split" "$CTXSIM" segment $CONFIG corpus.max_documents=40 output.dir="$TMP/few"
    [ ! -e "$TMP/few/store.h5" ] || fail "a store was written for a benchmark that cannot be drawn"
    one_error "samples.seq_len" "$CTXSIM" segment $CONFIG samples.seq_len=512 output.dir="$TMP/long"
    one_error "segment.layer" "$CTXSIM" segment $CONFIG segment.layer=6 --text "$TMP/two.txt"
    one_error "is a folder, not a text file" "$CTXSIM" segment $CONFIG --text "$TMP"
    # Caught by validate, before any store exists.
    one_error "segment.c99_mask: 10 is even" "$CTXSIM" validate $CONFIG segment.c99_mask=10
    one_error "segment.c99_mask: 10 is even" "$CTXSIM" segment $CONFIG segment.c99_mask=10 output.dir="$TMP/even"
    [ ! -e "$TMP/even" ] || fail "an even c99_mask left $TMP/even"
    # What segment does not do is said: a sweep, GPU ranks.
    printf 'sweep: {segment.seed: [1, 2]}\n' > "$TMP/sweep.yaml"
    cat $CONFIG "$TMP/sweep.yaml" > "$TMP/swept.yaml"
    one_error "segment runs one configuration" "$CTXSIM" segment "$TMP/swept.yaml" output.dir="$TMP/sw"
    one_error "runtime.device" "$CTXSIM" segment $CONFIG runtime.device=cuda output.dir="$TMP/gpu"
    # A vocabulary with more tokens than the model's embedding rows: refused by the job and --text.
    cp -r models/brown-bert "$TMP/bigvocab"
    for i in $(seq 1 10); do echo "extratoken$i"; done >> "$TMP/bigvocab/vocab.txt"
    one_error "tokens but the model's vocab_size is 30522" "$CTXSIM" segment $CONFIG model.path="$TMP/bigvocab" output.dir="$TMP/bv"
    [ ! -e "$TMP/bv/store.h5" ] || fail "a refused vocabulary left a store"
    one_error "tokens but the model's vocab_size is 30522" "$CTXSIM" segment $CONFIG model.path="$TMP/bigvocab" --text "$TMP/two.txt"
    # Sentences longer than the window are cut to it: said, not silent.
    "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 samples.seq_len=24 output.report=false output.dir="$TMP/cut" \
      > /dev/null 2> "$TMP/e" || fail "a short window: $(tail -3 "$TMP/e")"
    contains "$(cat "$TMP/e")" "sentences are longer than the window's 22 tokens"
    # Issue 35 goal 1: a segmentation of another config over that store is refused and leaves it as
    # it was; output.overwrite=true replaces it.
    before=$(sha256sum < "$TMP/cut/store.h5")
    "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 samples.seq_len=32 output.report=false output.dir="$TMP/cut" \
      > /dev/null 2> "$TMP/e" && fail "a segmentation of another config over the store"
    contains "$(cat "$TMP/e")" "holds a run with a different config: samples.seq_len: 24 → 32"
    [ "$before" = "$(sha256sum < "$TMP/cut/store.h5")" ] || fail "a refused segmentation changed the store"
    "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 samples.seq_len=32 output.report=false output.dir="$TMP/cut" \
      output.overwrite=true > /dev/null 2> "$TMP/e" || fail "output.overwrite=true: $(tail -3 "$TMP/e")"
    ;;
  store_integrity)
    seg() { "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 runtime.threads=1 output.dir="$1" "${@:2}" > "$TMP/log" 2>&1 \
              || fail "segment $1: $(tail -3 "$TMP/log")"; }
    seg "$TMP/s"
    [ -s "$TMP/s/report.html" ] || fail "segment did not write its report (output.report is true by default)"
    status=$("$CTXSIM" status "$TMP/s/store.h5" 2> "$TMP/e") || fail "status of an intact store: $status $(cat "$TMP/e")"
    [ "$status" = complete ] || fail "status printed '$status'"
    contains "$(cat "$TMP/e")" "segmentation store: 5 documents, 44 methods, 6 layers x 8 heads; every check passed"
    refused() {  # refused NAME EXPECTED PYTHON: the store edited, then summary, report and status each refuse it
      local name=$1 expect=$2
      mkdir -p "$TMP/$name" && cp "$TMP/s/store.h5" "$TMP/$name/store.h5"
      /usr/bin/python3 -c "import h5py, numpy as np
f = h5py.File('$TMP/$name/store.h5', 'r+')
$3
f.close()" || fail "crafting $name"
      for cmd in summary report status; do
        "$CTXSIM" $cmd "$TMP/$name/store.h5" > "$TMP/o" 2> "$TMP/e"; rc=$?
        [ $rc -eq 1 ] || fail "$name: $cmd exit $rc (expected 1): $(head -c 400 "$TMP/e")"
        contains "$(cat "$TMP/e")" "$expect"
        contains "$(cat "$TMP/e")" "$TMP/$name/store.h5"
        grep -q "internal error" "$TMP/e" && fail "$name: $cmd: internal error"
      done
      [ ! -e "$TMP/$name/report.html" ] || fail "$name: a report was written from a damaged store"
    }
    digest="do not match the SHA-256 written with them (results_sha256)"
    refused changed "$digest" 'f["methods/pk"][0, 0] = 0.4321'
    refused swapped "$digest" 'n = f["methods"].attrs["names"].split(b"\n"); n[0], n[1] = n[1], n[0]; f["methods"].attrs["names"] = np.bytes_(b"\n".join(n))'
    refused heads "$digest" 'f["heads/pk"][0, 0, 0] = 0.987654'
    # Setting the version back does not turn the check off while the digest is there.
    refused downgraded "$digest" 'f.attrs["schema_version"] = np.int64(1); f["methods/pk"][0, 0] = 0.4321'
    # Nor does dropping the digest with it while the store shows it is of schema 3.
    refused nodigest "results_sha256" 'del f.attrs["results_sha256"]; f.attrs["schema_version"] = np.int64(2); f["methods/pk"][0, 0] = 0.4321'
    # A store of an older ctxsim (no digest) is still checked for what no segmentation can hold.
    legacy='del f.attrs["results_sha256"]; del f.attrs["model_config_sha256"]; f.attrs["schema_version"] = np.int64(2); '
    refused nan "is not a share in [0, 1]" "$legacy"'f["methods/pk"][0, 0] = float("nan")'
    refused negative "is not a share in [0, 1]" "$legacy"'f["methods/window_diff"][1, 2] = -0.25'
    refused over "is not a share in [0, 1]" "$legacy"'f["heads/pk"][0, 0, 0] = 1.5'
    refused count "/methods/count" "$legacy"'f["methods/count"][0, 0] = 10000'
    refused order "/methods/boundaries" "$legacy"'b = f["methods/boundaries"][...]; b[0, 0, 0] = 0; f["methods/boundaries"][...] = b'
    refused gold "/documents/gold" "$legacy"'g = f["documents/gold"][...]; g[0, 0] = 10000; f["documents/gold"][...] = g'
    # No room for any boundary ([D, M, 0]): it crashed the report once.
    refused empty "disagree with each other" "$legacy"'D, M, G = f["methods/boundaries"].shape; del f["methods/boundaries"]; f["methods"].create_dataset("boundaries", shape=(D, M, 0), dtype="<i4")'
    # An intact segmentation store where a run store is expected, and the other way round: said as such.
    "$CTXSIM" run configs/default.yaml model.path=models/brown-bert samples.num_samples=8 output.report=false output.dir="$TMP/r" > "$TMP/log" 2>&1 \
      || fail "run: $(tail -3 "$TMP/log")"
    mkdir -p "$TMP/sweep/a" && cp "$TMP/s/store.h5" "$TMP/sweep/a/store.h5"
    "$CTXSIM" collect "$TMP/sweep" > "$TMP/o" 2> "$TMP/e" && fail "collect took a segmentation store"
    contains "$(cat "$TMP/e")" "is a segmentation store (ctxsim segment); collect gathers the run stores of a sweep"
    "$CTXSIM" compare "$TMP/s/store.h5" "$TMP/r/store.h5" --out "$TMP/c1" > "$TMP/o" 2> "$TMP/e" && fail "compare mixed a run in"
    contains "$(cat "$TMP/e")" "compare draws stores of one kind"
    "$CTXSIM" compare "$TMP/r/store.h5" "$TMP/s/store.h5" --out "$TMP/c2" > "$TMP/o" 2> "$TMP/e" && fail "compare mixed a segmentation in"
    contains "$(cat "$TMP/e")" "compare draws stores of one kind"
    # Options that mean nothing for a segmentation store are refused, not ignored.
    "$CTXSIM" compare "$TMP/s/store.h5" "$TMP/s/store.h5" --labels one --out "$TMP/c3" > "$TMP/o" 2> "$TMP/e" && fail "--labels count ignored"
    contains "$(cat "$TMP/e")" "1 labels for 2 stores"
    "$CTXSIM" compare "$TMP/s/store.h5" "$TMP/s/store.h5" --rule top_fraction=0.01 --out "$TMP/c4" > "$TMP/o" 2> "$TMP/e" && fail "--rule ignored"
    contains "$(cat "$TMP/e")" "segmentation stores have no selection rules"
    "$CTXSIM" report "$TMP/s/store.h5" --heads 0:0 --out "$TMP/c5" > "$TMP/o" 2> "$TMP/e" && fail "--heads ignored"
    contains "$(cat "$TMP/e")" "keeps no per-head examples"
    # Each job refuses the other's store, whether complete or not.
    "$CTXSIM" run configs/default.yaml model.path=models/brown-bert samples.num_samples=8 output.dir="$TMP/s" > "$TMP/o" 2> "$TMP/e" \
      && fail "run took a segmentation store for its own"
    contains "$(cat "$TMP/e")" "holds the store of 'ctxsim segment', and this is 'ctxsim run'"
    "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 output.dir="$TMP/r" > "$TMP/o" 2> "$TMP/e" \
      && fail "segment took a run store for its own"
    contains "$(cat "$TMP/e")" "holds the store of 'ctxsim run', and this is 'ctxsim segment'"
    # A model is every file that decides its outputs: a changed tokenizer_config.json is another model.
    cp -r models/brown-bert "$TMP/model"
    seg "$TMP/t" model.path="$TMP/model"
    echo '{"do_lower_case": false}' > "$TMP/model/tokenizer_config.json"
    "$CTXSIM" segment $CONFIG segment.documents=1 segment.dev_documents=1 model.path="$TMP/model" output.dir="$TMP/t" > "$TMP/o" 2> "$TMP/e" \
      && fail "a changed tokenizer_config.json answered by the old store"
    contains "$(cat "$TMP/e")" "the model's config.json or tokenizer_config.json"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
