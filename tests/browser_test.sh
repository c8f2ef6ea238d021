#!/usr/bin/env bash
# report.html in a real browser (Debian's chromium, headless, driven by playwright-core from
# tests/browser; scripts/setup.sh installs both): browser_test.sh CTXSIM. A 3-layer, 4-head
# random model on 1024-token Brown samples: the example must render (block-pooled) within the
# size budget, and the explorer must redraw for every control.
set -uo pipefail
CTXSIM=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [browser]: $*"; exit 1; }
[ -x /usr/bin/chromium ] || fail "chromium is not installed: run scripts/setup.sh"
[ -d tests/browser/node_modules/playwright-core ] || fail "playwright-core is not installed: run scripts/setup.sh"

BUDGET=$((25 * 1024 * 1024))
"$CTXSIM" init-model --preset bert-tiny --layers 3 --heads 4 --positions 1024 --seed 11 \
  --vocab data/vocab/bert-base-uncased.txt --out "$TMP/m" > /dev/null || fail "init-model"
"$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.seq_len=1024 samples.num_samples=2 \
  statistics.examples=[0,1] output.dir="$TMP/out" runtime.batch_size=1 runtime.unit_size=1 > "$TMP/log" 2>&1 \
  || fail "run: $(tail -5 "$TMP/log")"
html="$TMP/out/report.html"
[ -s "$html" ] || fail "the run wrote no report.html"
n=$(/usr/bin/python3 -c "import h5py; f=h5py.File('$TMP/out/store.h5','r'); print(int(f['samples/n_valid'][f['examples/sample_ids'][0]]))")
[ "$n" -gt 512 ] || fail "the example has only $n tokens; the test wants a long one"
# Every figure the binary says the report makes must show in the page.
figures=$("$CTXSIM" report "$TMP/out/store.h5" --list-figures | paste -sd,) || fail "report --list-figures"
node tests/browser/report_test.js "$html" --max-bytes "$BUDGET" --figures "$figures" > "$TMP/browser" 2>&1
rc=$?
cat "$TMP/browser"
[ $rc -eq 0 ] || fail "browser checks failed"
grep -q '"note":"Block-pooled' "$TMP/browser" || fail "a $n-token example should be shown block-pooled"
# A smaller budget is honoured: the page stays under it, its examples pooled coarser; a budget
# the figures alone exceed is refused with the fix, leaving no report.
SMALL=$((6 * 1024 * 1024))
"$CTXSIM" report "$TMP/out/store.h5" --out "$TMP/small" --max-bytes $SMALL > /dev/null || fail "report with a 6 MiB budget"
node tests/browser/report_test.js "$TMP/small/report.html" --max-bytes $SMALL > "$TMP/small.log" 2>&1 || { cat "$TMP/small.log"; fail "6 MiB report"; }
block=$(grep -o '"block":[0-9]*' "$TMP/small/report.html" | head -1 | cut -d: -f2)
[ "$block" -gt 4 ] || fail "a 6 MiB budget should pool the $n-token example coarser than 4x4 (got $block)"
"$CTXSIM" report "$TMP/out/store.h5" --out "$TMP/tiny" --max-bytes 1048576 2> "$TMP/err" && fail "a 1 MiB budget was accepted"
grep -q "over the budget" "$TMP/err" || fail "no budget error: $(cat "$TMP/err")"
[ ! -e "$TMP/tiny/report.html" ] && [ ! -e "$TMP/tiny/figures" ] || fail "a refused report left files"
# A store without examples: figures only, and an explorer that says so without errors.
"$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=2 statistics.examples=[] output.dir="$TMP/noex" \
  > /dev/null 2>&1 || fail "run without examples"
node tests/browser/report_test.js "$TMP/noex/report.html" --no-examples --figures top_anchors,distance_overlay > "$TMP/noex.log" 2>&1 \
  || { cat "$TMP/noex.log"; fail "report without examples"; }
# ctxsim inspect's page: the explorer of one text, every layer and head, checked as a report.
"$CTXSIM" inspect --text "The cat sat on the mat. It purred, and the cat slept." --out "$TMP/inspect" > /dev/null 2> "$TMP/err" \
  || fail "inspect: $(cat "$TMP/err")"
node tests/browser/report_test.js "$TMP/inspect/report.html" --figures top_anchors > "$TMP/inspect.log" 2>&1 \
  || { cat "$TMP/inspect.log"; fail "the inspect page"; }
echo "ok [browser] $n-token example, $(stat -c %s "$html") bytes"
