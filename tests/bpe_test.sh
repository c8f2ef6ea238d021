#!/usr/bin/env bash
# GPT-2's byte-level BPE gives exactly the ids of two independent implementations, and Llama 3's
# those of a third: bpe_test.sh CTXSIM. 12,000 lines (Brown sentences; accents, CJK, Cyrillic,
# Arabic, emoji with skin tones and ZWJ, contractions, runs of spaces and tabs, digits, long
# words) go through `ctxsim tokenize --vocab data/vocab/gpt2`, npm's gpt-3-encoder@1.1.4 and
# js-tiktoken's gpt2 encoding, and through `ctxsim tokenize --vocab data/tokenizers/llama3` and
# llama3-tokenizer-js@1.2.0 (tests/bpe/package.json, installed here with npm ci); every line's ids
# must agree.
set -uo pipefail
CTXSIM=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [bpe]: $*"; exit 1; }
GPT2=data/vocab/gpt2
for need in data/brown "$GPT2/vocab.json" "$GPT2/merges.txt"; do
  [ -e "$need" ] || { echo "SKIP [bpe]: $need is missing (scripts/setup.sh fetches the data)"; exit 77; }
done
command -v node > /dev/null || { echo "SKIP [bpe]: node is not installed (scripts/setup.sh installs it)"; exit 77; }
if [ ! -d tests/bpe/node_modules/js-tiktoken ] || [ ! -d tests/bpe/node_modules/gpt-3-encoder ] || [ ! -d tests/bpe/node_modules/llama3-tokenizer-js ]; then
  (cd tests/bpe && npm ci --no-audit --no-fund --silent) || fail "npm ci in tests/bpe"
fi

N=12000
python3 tests/bpe/lines.py data/brown $N > "$TMP/lines.txt" || fail "making the lines"
[ "$(wc -l < "$TMP/lines.txt")" -eq $N ] || fail "expected $N lines"
"$CTXSIM" tokenize --vocab $GPT2 < "$TMP/lines.txt" > "$TMP/ctxsim.txt" 2> "$TMP/err" || fail "tokenize: $(cat "$TMP/err")"
"$CTXSIM" tokenize --vocab $GPT2 --tokens < "$TMP/lines.txt" > /dev/null 2> "$TMP/err" || fail "tokenize --tokens: $(cat "$TMP/err")"
node tests/bpe/encode.js "$TMP/gpt3.txt" "$TMP/tiktoken.txt" < "$TMP/lines.txt" || fail "node encoders"
for ref in gpt3 tiktoken; do
  [ "$(wc -l < "$TMP/$ref.txt")" -eq $N ] || fail "$ref wrote $(wc -l < "$TMP/$ref.txt") lines"
  if ! cmp -s "$TMP/ctxsim.txt" "$TMP/$ref.txt"; then
    line=$(cmp "$TMP/ctxsim.txt" "$TMP/$ref.txt" | sed -n 's/.* line \([0-9]*\)$/\1/p')
    fail "line $line differs from $ref: text '$(sed -n "${line}p" "$TMP/lines.txt")'; ctxsim: $(sed -n "${line}p" "$TMP/ctxsim.txt"); $ref: $(sed -n "${line}p" "$TMP/$ref.txt")"
  fi
done
echo "bpe: $N lines, $(wc -w < "$TMP/ctxsim.txt") ids, identical to gpt-3-encoder and js-tiktoken"
# Llama 3 (data/tokenizers/llama3: its tokenizer.json, the Split regex and ignore_merges).
LLAMA3=data/tokenizers/llama3/tokenizer.json
[ -f "$LLAMA3" ] || fail "$LLAMA3 is missing: scripts/setup.sh fetches it"
"$CTXSIM" tokenize --vocab $LLAMA3 < "$TMP/lines.txt" > "$TMP/ctxsim-llama3.txt" 2> "$TMP/err" || fail "tokenize llama3: $(cat "$TMP/err")"
node tests/bpe/encode_llama3.js "$TMP/llama3js.txt" < "$TMP/lines.txt" || fail "llama3-tokenizer-js"
[ "$(wc -l < "$TMP/llama3js.txt")" -eq $N ] || fail "llama3-tokenizer-js wrote $(wc -l < "$TMP/llama3js.txt") lines"
if ! cmp -s "$TMP/ctxsim-llama3.txt" "$TMP/llama3js.txt"; then
  line=$(cmp "$TMP/ctxsim-llama3.txt" "$TMP/llama3js.txt" | sed -n 's/.* line \([0-9]*\)$/\1/p')
  fail "Llama 3: line $line differs from llama3-tokenizer-js: text '$(sed -n "${line}p" "$TMP/lines.txt")'; ctxsim: $(sed -n "${line}p" "$TMP/ctxsim-llama3.txt"); llama3-tokenizer-js: $(sed -n "${line}p" "$TMP/llama3js.txt")"
fi
echo "bpe: Llama 3: $N lines, $(wc -w < "$TMP/ctxsim-llama3.txt") ids, identical to llama3-tokenizer-js"
