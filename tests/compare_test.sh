#!/usr/bin/env bash
# `ctxsim compare`: compare_test.sh CTXSIM CASE. page: three runs (two random seeds and a third
# model) drawn together and opened in headless chromium, every run's colour found in every
# figure's plot areas through the page's index (label browser). shapes: stores that cannot be
# drawn together are refused, naming the store (label cli).
set -uo pipefail
CTXSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CASE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }
VOCAB=data/vocab/bert-base-uncased.txt
run() {  # run MODEL OUT [overrides…]
  local m=$1 out=$2; shift 2
  "$CTXSIM" run configs/default.yaml model.path="$m" samples.num_samples=24 samples.seq_len=64 statistics.examples=[] \
    output.report=false output.dir="$out" "$@" > "$out.log" 2>&1 || fail "run $out: $(tail -3 "$out.log")"
}
for seed in 1 2; do "$CTXSIM" init-model --preset bert-tiny --layers 3 --seed $seed --vocab $VOCAB --out "$TMP/m$seed" > /dev/null || fail "init-model"; done

case "$CASE" in
  page)
    "$CTXSIM" init-model --preset bert-tiny --layers 3 --heads 4 --seed 3 --vocab $VOCAB --out "$TMP/m3" > /dev/null || fail "init-model"
    run "$TMP/m1" "$TMP/a"
    run "$TMP/m2" "$TMP/b"
    run "$TMP/m3" "$TMP/c" samples.windows=documents
    out=$("$CTXSIM" compare "$TMP/a/store.h5" "$TMP/b/store.h5" "$TMP/c/store.h5" --labels seed1,seed2,heads4 --out "$TMP/cmp") ||
      fail "compare: $out"
    contains "$out" "for 3 runs"
    # The figures the page lists (figures/index.json, what the binary made): each on disk and, in the
    # browser, drawn with every run's colour.
    stems=$(/usr/bin/python3 -c 'import json, sys; print(",".join(e["stem"] for e in json.load(open(sys.argv[1]))))' "$TMP/cmp/figures/index.json")
    for stem in distance_by_layer same_sentence_by_layer separator_attention_by_layer; do
      grep -q "\b$stem\b" <<< "$stems" || fail "no $stem in the index: $stems"
    done
    for stem in ${stems//,/ }; do
      [ -s "$TMP/cmp/figures/$stem.png" ] && [ -s "$TMP/cmp/figures/$stem.svg" ] || fail "no $stem figure"
    done
    node tests/browser/compare_test.js "$TMP/cmp/compare.html" --figures "$stems" > "$TMP/browser" 2>&1
    rc=$?
    cat "$TMP/browser"
    [ $rc -eq 0 ] || fail "browser checks failed"
    contains "$(cat "$TMP/cmp/compare.html")" "documents"
    # A folder is searched for complete stores.
    mkdir -p "$TMP/sweep"
    cp -r "$TMP/a" "$TMP/b" "$TMP/sweep/"
    out=$("$CTXSIM" compare "$TMP/sweep" --out "$TMP/cmp2") || fail "compare of a folder: $out"
    contains "$out" "for 2 runs"
    ;;
  shapes)
    run "$TMP/m1" "$TMP/a"
    run "$TMP/m2" "$TMP/t32" samples.seq_len=32
    "$CTXSIM" init-model --preset bert-tiny --layers 2 --seed 4 --vocab $VOCAB --out "$TMP/m4" > /dev/null || fail "init-model"
    run "$TMP/m4" "$TMP/l2"
    run "$TMP/m2" "$TMP/rel" 'selection=[{relative_to_max: 0.9}]'
    check() {  # check EXPECTED ARGS…: exit 1, one error line, nothing written
      local expected=$1; shift
      "$CTXSIM" compare "$@" --out "$TMP/never" > /dev/null 2> "$TMP/err"
      local rc=$?
      [ $rc -eq 1 ] || fail "exit $rc for: $* -- $(cat "$TMP/err")"
      [ "$(grep -c '^ctxsim: error: ' "$TMP/err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/err")"
      contains "$(cat "$TMP/err")" "$expected"
      [ ! -e "$TMP/never" ] || fail "a refused compare wrote $TMP/never"
    }
    check "$TMP/l2/store.h5: has 2 layers, $TMP/a/store.h5 has 3" "$TMP/a/store.h5" "$TMP/l2/store.h5"
    check "$TMP/t32/store.h5: has samples of T=32, $TMP/a/store.h5 of T=64" "$TMP/a/store.h5" "$TMP/t32/store.h5"
    check "$TMP/rel/store.h5: has no selection rule 'top_fraction=0.01'" "$TMP/a/store.h5" "$TMP/rel/store.h5"
    check "needs at least two stores, got 1" "$TMP/a/store.h5"
    check "--labels: 1 labels for 2 stores" "$TMP/a/store.h5" "$TMP/rel/store.h5" --labels one
    # The rule both have, named: drawn.
    run "$TMP/m1" "$TMP/both" 'selection=[{relative_to_max: 0.9}, {top_fraction: 0.01}]'
    "$CTXSIM" compare "$TMP/both/store.h5" "$TMP/rel/store.h5" --rule relative_to_max=0.9 --out "$TMP/ok" > /dev/null 2> "$TMP/err" ||
      fail "a shared rule named with --rule: $(cat "$TMP/err")"
    ;;
  hostile)
    # A store is shared between people, and so are labels: markup in a token of an example, in
    # --labels, --title and --note is shown as text and never runs (label browser).
    run "$TMP/m1" "$TMP/a" statistics.examples=[0] output.report=false
    run "$TMP/m2" "$TMP/b"
    /usr/bin/python3 - "$TMP/a/store.h5" <<'PY' || fail "crafting the store"
import hashlib, sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
vocab = f["vocab/text"][...].tobytes().decode().split("\n")
sample = int(f["examples/sample_ids"][0])
ids = f["samples/token_ids"][sample]
vocab[int(ids[1])] = "</script><script>window.__pwned=1</script>"
vocab[int(ids[2])] = "\"><img src=x onerror=window.__pwned=2><b id=pwned>"
vocab[int(ids[3])] = "<!--<script>"
data = np.frombuffer("\n".join(vocab).encode(), dtype=np.uint8)
del f["vocab/text"]
f.create_dataset("vocab/text", data=data)
# Whoever edits a store can write its digest too: the page must still show the tokens as text.
f.attrs["vocab_sha256"] = np.bytes_(hashlib.sha256(data.tobytes()).hexdigest())
f.close()
PY
    "$CTXSIM" report "$TMP/a/store.h5" > /dev/null 2> "$TMP/err" || fail "report: $(cat "$TMP/err")"
    node tests/browser/hostile_test.js "$TMP/a/report.html" --figures distance_overlay \
      --expect '</script><script>window.__pwned=1</script>' --expect '"><img src=x onerror=window.__pwned=2><b id=pwned>' \
      > "$TMP/browser" 2>&1 || { cat "$TMP/browser"; fail "report.html with hostile tokens"; }
    grep -q 'Content-Security-Policy' "$TMP/a/report.html" || fail "report.html has no Content-Security-Policy"
    label1='</script><script>window.__pwned=3</script>'
    label2='"><svg onload=window.__pwned=4><b id=pwned>'
    "$CTXSIM" compare "$TMP/a/store.h5" "$TMP/b/store.h5" --labels "$label1,$label2" --title "<script>window.__pwned=5</script>" \
      --note "<img src=x onerror=window.__pwned=6>" --out "$TMP/cmp" > /dev/null 2> "$TMP/err" || fail "compare: $(cat "$TMP/err")"
    node tests/browser/hostile_test.js "$TMP/cmp/compare.html" --figures distance_by_layer --expect "$label1" --expect "$label2" \
      --expect "<img src=x onerror=window.__pwned=6>" > "$TMP/browser" 2>&1 || { cat "$TMP/browser"; fail "compare.html with hostile labels"; }
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
