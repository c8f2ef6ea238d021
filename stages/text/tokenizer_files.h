// Which tokenizer a model folder or vocabulary file is (SPEC §7), by its files:
//   a folder: vocab.json + merges.txt → byte-level BPE; vocab.txt → WordPiece; tokenizer.json
//             (model BPE with a ByteLevel pre-tokenizer) → byte-level BPE;
//   a file:   *.json → a tokenizer.json; anything else → a WordPiece vocab.txt.
#pragma once
#include <memory>
#include <string>

#include "stages/text/tokenizer.h"

namespace ctxsim {

enum class TokenizerKind { WordPiece, ByteLevelBpe };

struct TokenizerFiles {
  TokenizerKind kind = TokenizerKind::WordPiece;
  std::string vocab, merges;  // vocab.txt | vocab.json (+ merges.txt) | tokenizer.json (merges empty)
};

// The files of `path`, or an Error naming it and what a tokenizer folder holds.
TokenizerFiles find_tokenizer_files(const std::string& path);

// The tokenizer of `path` (WordPiece with `wordpiece` options; BPE takes none).
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece);

}  // namespace ctxsim
