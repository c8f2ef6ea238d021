#include "stages/text/tokenizer_files.h"

#include <filesystem>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/text/bpe.h"
#include "stages/text/tokenizer_json.h"

namespace fs = std::filesystem;

namespace ctxsim {

namespace {

// A tokenizer.json's kind by its model: WordPiece, else byte-level BPE (whose reader names any
// other model type).
TokenizerKind json_kind(const std::string& path) {
  return tokenizer_json_model_type(path) == "WordPiece" ? TokenizerKind::WordPiece : TokenizerKind::ByteLevelBpe;
}

}  // namespace

bool TokenizerFiles::wordpiece_json() const { return kind == TokenizerKind::WordPiece && fs::path(vocab).extension() == ".json"; }

bool TokenizerFiles::gguf() const { return kind == TokenizerKind::ByteLevelBpe && ModelFolder(vocab).is_gguf(); }

std::shared_ptr<const BpeModel> load_bpe_model(const TokenizerFiles& f) {
  if (f.gguf()) {
    const GgufFile file(f.vocab);
    return BpeModel::from_gguf(file.header(), f.vocab);
  }
  return f.merges.empty() ? BpeModel::load_tokenizer_json(f.vocab) : BpeModel::load(f.vocab, f.merges);
}

Vocab TokenizerFiles::wordpiece_vocab() const { return wordpiece_json() ? load_wordpiece_tokenizer_json(vocab).vocab : Vocab::load(vocab); }

TokenizerFiles find_tokenizer_files(const std::string& path, std::optional<TokenizerKind> family) {
  const PathKind kind = path_kind(path, path);
  if (kind == PathKind::Missing)
    throw Error(path, "does not exist", "give a model folder, a vocab.txt, a tokenizer.json, or a folder with vocab.json and merges.txt");
  TokenizerFiles f;
  if (kind != PathKind::Folder) {
    if (fs::path(path).filename() == ModelFolder::kMerges)
      throw Error(path, "is a merges.txt, one half of a byte-level BPE",
                  "give the folder that holds it and its vocab.json, or the model's tokenizer.json");
    f.vocab = path;
    f.kind = fs::path(path).extension() == ".json" ? json_kind(path)
             : ModelFolder(path).is_gguf()         ? TokenizerKind::ByteLevelBpe
                                                   : TokenizerKind::WordPiece;
    return f;
  }
  const ModelFolder folder(path);
  const auto in = [&](const char* name) { return folder.file(name); };
  const auto has = [&](const char* name) { return folder.has(name); };
  using F = ModelFolder;
  // vocab.txt (with tokenizer_config.json) says all a WordPiece tokenizer.json does. A BPE's
  // tokenizer.json says more than vocab.json + merges.txt (its added tokens and their flags), and
  // is what transformers' AutoTokenizer reads when a folder has both.
  // Beside a vocab.txt, a tokenizer.json counts as byte-level BPE when its model is BPE (one that
  // does not parse, or of another model, leaves vocab.txt the tokenizer, as it was).
  const auto bpe_model = [&] {
    try {
      return tokenizer_json_model_type(in(F::kTokenizerJson)) == "BPE";
    } catch (const Error&) { return false; }
  };
  const bool bpe_files = has(F::kVocabJson) && has(F::kMerges);
  const bool bpe_json = has(F::kVocabTxt) && has(F::kTokenizerJson) && bpe_model();
  if (has(F::kVocabTxt) && (bpe_json || bpe_files)) {  // both kinds: the model's family decides
    if (!family)
      throw Error(path,
                  std::string("holds both a WordPiece vocab.txt and byte-level BPE files (") +
                      (bpe_json ? "tokenizer.json" : "vocab.json + merges.txt") + ")",
                  "give the one to use (--vocab, model.vocab), or a config.json whose model_type names the family");
    if (*family == TokenizerKind::ByteLevelBpe)
      return bpe_json ? TokenizerFiles{TokenizerKind::ByteLevelBpe, in(F::kTokenizerJson), ""}
                      : TokenizerFiles{TokenizerKind::ByteLevelBpe, in(F::kVocabJson), in(F::kMerges)};
  }
  if (has(F::kVocabTxt)) return {TokenizerKind::WordPiece, in(F::kVocabTxt), ""};
  if (has(F::kTokenizerJson)) return {json_kind(in(F::kTokenizerJson)), in(F::kTokenizerJson), ""};
  if (has(F::kVocabJson) && has(F::kMerges)) return {TokenizerKind::ByteLevelBpe, in(F::kVocabJson), in(F::kMerges)};
  if (has(F::kVocabJson) || has(F::kMerges))
    throw Error(path, std::string("has ") + (has(F::kVocabJson) ? "vocab.json but no merges.txt" : "merges.txt but no vocab.json"),
                "a byte-level BPE needs both files (or a tokenizer.json)");
  throw Error(path, "holds no tokenizer (vocab.txt, vocab.json + merges.txt, or tokenizer.json)",
              "give the model's folder as Hugging Face saves it");
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece, std::optional<TokenizerKind> family) {
  const TokenizerFiles f = find_tokenizer_files(path, family);
  if (f.wordpiece_json()) {
    WordPieceJson j = load_wordpiece_tokenizer_json(f.vocab);
    return std::make_unique<BertTokenizer>(std::move(j.vocab), j.options);
  }
  if (f.kind == TokenizerKind::WordPiece) return std::make_unique<BertTokenizer>(Vocab::load(f.vocab), wordpiece);
  return std::make_unique<BpeTokenizer>(load_bpe_model(f));
}

}  // namespace ctxsim
