#!/usr/bin/env bash
# End-to-end checks of the ctxsim command line on the real data (run by ctest from the source
# folder): cli_test.sh CTXSIM CASE. Each case asserts exit codes, output and that bad input
# writes nothing.
set -uo pipefail
CTXSIM=$1
CASE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [$CASE]: $*"; exit 1; }
contains() { grep -qF -- "$2" <<< "$1" || fail "expected '$2' in: $1"; }

case "$CASE" in
  samples_default)
    out=$("$CTXSIM" samples configs/default.yaml --show 3 2>"$TMP/err") || fail "exit $? $(cat "$TMP/err")"
    [ "$(grep -c '^sample [0-9]' <<< "$out")" -eq 3 ] || fail "expected 3 samples: $out"
    contains "$out" "[CLS] | s0: "
    contains "$out" "| [SEP]"
    contains "$out" "documents:           500"
    contains "$out" "sentences:           57340"
    contains "$out" "candidates:          57340 (sentences windows)"
    contains "$out" "drawn samples:       2000 of 2000 requested (seed 42)"
    grep -qE '^truncated sentences: [0-9]+$' <<< "$out" || fail "no truncation count: $out"
    # Same config, same samples: the draw is deterministic.
    again=$("$CTXSIM" samples configs/default.yaml --show 3 2>/dev/null)
    [ "$out" = "$again" ] || fail "two runs differ"
    # Overrides change the draw: another seed, documents mode.
    docs=$("$CTXSIM" samples configs/default.yaml --show 0 samples.windows=documents 2>/dev/null) || fail "documents mode"
    contains "$docs" "candidates:          500 (documents windows)"
    contains "$docs" "drawn samples:       500 of 2000 requested"
    ;;
  validate_default)
    out=$("$CTXSIM" validate configs/default.yaml) || fail "default.yaml does not validate"
    contains "$out" "seq_len: 128"
    contains "$out" "num_samples: 2000"
    "$CTXSIM" validate configs/paper.yaml > "$TMP/paper" || fail "paper.yaml does not validate"
    contains "$(cat "$TMP/paper")" "num_samples: 20000"
    ;;
  tokenize)
    out=$(printf 'Hello, world!\nthe.\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt) || fail "exit $?"
    [ "$out" = $'7592 1010 2088 999\n1996 1012' ] || fail "ids: $out"
    out=$(printf 'Héllo\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt --tokens)
    [ "$out" = "hello" ] || fail "tokens: $out"
    printf 'bad \xff\n' | "$CTXSIM" tokenize --vocab data/vocab/bert-base-uncased.txt 2>"$TMP/err" && fail "invalid UTF-8 accepted"
    contains "$(cat "$TMP/err")" "stdin:1: invalid UTF-8"
    ;;
  version_and_help)
    out=$("$CTXSIM" --version) || fail "--version"
    contains "$out" "(git "
    for sub in validate samples tokenize run bench-tokenizer; do
      "$CTXSIM" "$sub" --help > "$TMP/help" || fail "$sub --help"
      contains "$(cat "$TMP/help")" "Usage:"
    done
    "$CTXSIM" frobnicate 2>/dev/null && fail "unknown subcommand accepted"
    true
    ;;
  bad_configs)
    # Each bad config: exit 1, one error line naming file/key and a fix, nothing written.
    check_bad() {  # check_bad NAME YAML EXPECTED [OVERRIDES...]
      local name=$1 yaml=$2 expect=$3; shift 3
      printf '%s' "$yaml" > "$TMP/$name.yaml"
      "$CTXSIM" run "$TMP/$name.yaml" output.dir="$TMP/out_$name" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
      local rc=$?
      [ $rc -eq 1 ] || fail "$name: exit $rc, expected 1"
      [ "$(wc -l < "$TMP/stderr")" -eq 1 ] || fail "$name: not one line: $(cat "$TMP/stderr")"
      contains "$(cat "$TMP/stderr")" "$expect"
      contains "$(cat "$TMP/stderr")" "; fix: "
      [ ! -s "$TMP/stdout" ] || fail "$name: printed output: $(cat "$TMP/stdout")"
      [ ! -e "$TMP/out_$name" ] || fail "$name: wrote $TMP/out_$name"
    }
    check_bad unknown  $'samples:\n  sed: 3\n'            "samples.sed: unknown key; fix: did you mean 'samples.seed'?"
    check_bad type     $'samples:\n  seq_len: many\n'     "$TMP/type.yaml:2:12: samples.seq_len: expected an integer"
    check_bad range    $'samples:\n  seq_len: 100000\n'   "samples.seq_len: expected an integer in [3, 8192], got 100000"
    check_bad malformed $'samples:\n  seq_len: [1\n'     "$TMP/malformed.yaml:"
    check_bad empty    ''                                  "$TMP/empty.yaml: the config is empty"
    check_bad missing  $'corpus:\n  path: /nonexistent\nmodel:\n  vocab: data/vocab/bert-base-uncased.txt\n' \
                       "$TMP/missing.yaml:2:9: corpus.path: '/nonexistent' does not exist"
    check_bad override $'model:\n  vocab: data/vocab/bert-base-uncased.txt\n' \
                       "command line 'samples.windows=both': samples.windows: expected one of sentences, documents" samples.windows=both
    "$CTXSIM" run "$TMP/nope.yaml" 2> "$TMP/stderr" && fail "missing config accepted"
    contains "$(cat "$TMP/stderr")" "nope.yaml: the config file does not exist"
    ;;
  bad_corpus)
    mkdir -p "$TMP/corpus"
    printf 'good line.\n\nbad \xfe line.\n' > "$TMP/corpus/a.txt"
    printf 'corpus:\n  format: text\n  path: %s\nmodel:\n  vocab: data/vocab/bert-base-uncased.txt\noutput:\n  dir: %s/out\n' \
      "$TMP/corpus" "$TMP" > "$TMP/c.yaml"
    "$CTXSIM" samples "$TMP/c.yaml" 2> "$TMP/stderr" && fail "invalid UTF-8 accepted"
    contains "$(cat "$TMP/stderr")" "a.txt: invalid UTF-8 at line 3, column 5 (byte 16)"
    out=$("$CTXSIM" samples "$TMP/c.yaml" corpus.invalid_utf8=replace --show 0 2>/dev/null) || fail "replace mode failed"
    contains "$out" "documents:           2"
    : > "$TMP/corpus/a.txt"
    "$CTXSIM" samples "$TMP/c.yaml" 2> "$TMP/stderr" && fail "empty corpus accepted"
    contains "$(cat "$TMP/stderr")" "the corpus has no documents"
    [ ! -e "$TMP/out" ] || fail "wrote output"
    ;;
  *) fail "unknown case" ;;
esac
echo "ok [$CASE]"
