// Which tokenizer a model folder or vocabulary file is (SPEC §7), by its files:
//   a folder: vocab.txt → WordPiece; else tokenizer.json → WordPiece or byte-level BPE by its
//             model (tokenizer_json.h); else vocab.json + merges.txt → byte-level BPE; with both
//             kinds there, the model's family decides;
//   a file:   *.json → a tokenizer.json (the same); *.gguf → a GGUF file's byte-level BPE
//             vocabulary (tokenizer.ggml.*); anything else → a WordPiece vocab.txt.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "stages/text/tokenizer.h"

namespace ctxsim {

enum class TokenizerKind { WordPiece, ByteLevelBpe };

struct TokenizerFiles {
  TokenizerKind kind = TokenizerKind::WordPiece;
  std::string vocab, merges;  // vocab.txt | vocab.json (+ merges.txt) | tokenizer.json (merges empty)

  bool wordpiece_json() const;    // a WordPiece tokenizer.json rather than a vocab.txt
  bool gguf() const;              // a GGUF file's vocabulary
  Vocab wordpiece_vocab() const;  // WordPiece: the tokens of vocab.txt or of the tokenizer.json
};

// The files of `path`, or an Error naming it and what a tokenizer folder holds. A folder that holds
// both a WordPiece vocab.txt and byte-level BPE files (vocab.json + merges.txt, or a BPE
// tokenizer.json) is the model's: `family` (the tokenizer kind of its config.json's model_type)
// decides, and without one it is an Error naming both.
TokenizerFiles find_tokenizer_files(const std::string& path, std::optional<TokenizerKind> family = std::nullopt);

struct BpeModel;
// A byte-level BPE's files read: vocab.json + merges.txt, a tokenizer.json, or a GGUF file.
std::shared_ptr<const BpeModel> load_bpe_model(const TokenizerFiles& files);

// The tokenizer of `path` (WordPiece with `wordpiece` options, or a WordPiece tokenizer.json's
// own; BPE takes none).
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece,
                                          std::optional<TokenizerKind> family = std::nullopt);

}  // namespace ctxsim
