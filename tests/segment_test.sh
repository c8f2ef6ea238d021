#!/usr/bin/env bash
# `ctxsim segment` (SPEC §6) on the real Brown corpus with the model trained here, run by ctest:
# segment_test.sh CTXSIM CASE.
#   ranks_resume  1 vs 2 ranks and a SIGKILL + resume on other ranks give the same store, byte for byte
#   learned       a small slice of the benchmark: the trained model's best layer beats random boundaries
#   text          --text: the file's sentences back, segments apart, nothing else on stdout
#   bad_input     one clear error for each kind of bad input, and nothing written
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
    seg() { local np=$1 out=$2; shift 2; timeout 600 $MPI -n "$np" "$CTXSIM" segment $CONFIG "${SLICE[@]}" output.dir="$out" "$@" > "$out.log" 2>&1; }
    seg 1 "$TMP/r1" || fail "1 rank: $(tail -3 "$TMP/r1.log")"
    seg 2 "$TMP/r2" || fail "2 ranks: $(tail -3 "$TMP/r2.log")"
    contains "$(cat "$TMP/r2.log")" "2 rank(s)"
    compare "$TMP/r1" "$TMP/r2"
    # The summary of the store is the job's closing table.
    [ "$("$CTXSIM" summary "$TMP/r1/store.h5")" = "$(sed -n '/^segmentation:/,$p' "$TMP/r1.log")" ] || fail "summary differs from the job's table"
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
    # It takes 9-10 minutes here beside another test (0.11-0.18 documents/s on 2 cores): the
    # timeout only catches a hang.
    out=$(timeout 1500 "$CTXSIM" segment $CONFIG segment.documents=20 segment.dev_documents=20 output.dir="$TMP/l" 2> "$TMP/err") \
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
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
