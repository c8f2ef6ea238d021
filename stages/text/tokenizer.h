// BERT tokenization: the basic tokenizer (cleaning, CJK split, lower-case + accent strip,
// punctuation split) and greedy longest-match WordPiece over a vocab.txt, giving exactly the
// ids of Hugging Face's BertTokenizer (transformers 4.x) for the same vocabulary.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ctxsim {

// The tokens of a vocabulary's text as Vocab::lines() writes it and stores keep it (/vocab/text),
// one per line, the line number the id. A text whose every line ends in CR LF is a vocab.txt saved
// on Windows (the CRs dropped); otherwise a CR belongs to its token (Llama 2's ";\r").
std::vector<std::string> vocab_lines(std::string_view text);

// A WordPiece vocabulary: one token per line, the line number is the id.
class Vocab {
 public:
  static Vocab load(const std::string& path);  // throws ctxsim::Error
  static Vocab from_tokens(const std::vector<std::string>& tokens);
  std::string lines() const;  // the tokens as a vocab.txt spells them: one per line, by id

  int32_t size() const { return static_cast<int32_t>(offsets_.size()); }
  std::string_view token(int32_t id) const;               // "[UNK]" for out-of-range ids
  int32_t id(std::string_view token) const;               // -1 when absent
  int32_t start_id(std::string_view piece) const;         // a word-initial piece, -1 if absent
  int32_t continuation_id(std::string_view piece) const;  // piece of "##piece", -1 if absent

  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t mask_id() const { return mask_; }
  // The ids of [PAD] [UNK] [CLS] [SEP] [MASK] this vocabulary has: never counted as a repeated
  // token, never masked for prediction.
  std::vector<int32_t> special_ids() const;
  // The literal special tokens that keep their id when they appear in text.
  const std::vector<std::pair<std::string, int32_t>>& specials() const { return specials_; }

 private:
  void index();
  // All tokens back to back. Shared and never modified after loading, so the string_view keys
  // of the maps stay valid when a Vocab is copied or moved (an inline std::string would not).
  std::shared_ptr<std::string> arena_ = std::make_shared<std::string>();
  std::vector<std::pair<uint32_t, uint32_t>> offsets_;  // (offset, length) per id
  std::unordered_map<std::string_view, int32_t> start_, cont_, all_;
  std::vector<std::pair<std::string, int32_t>> specials_;
  int32_t pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1, mask_ = -1;
};

struct TokenizerOptions {
  bool lower_case = true;        // BertTokenizer do_lower_case
  bool strip_accents = true;     // HF: strip_accents=None follows lower_case
  bool split_cjk = true;         // tokenize_chinese_chars
  int max_chars_per_word = 100;  // longer words become [UNK]
};

// Options from a Hugging Face model folder's tokenizer_config.json (defaults when absent).
TokenizerOptions read_tokenizer_options(const std::string& model_dir, bool default_lower_case);

// Token ids of one text, with the whitespace word each token came from.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> word_ids;  // same length; words numbered from 0 within this text
  int32_t num_words = 0;          // whitespace words that produced at least one token
};

// What every tokenizer does (WordPiece, byte-level BPE in bpe.h): text → ids, with the word
// each id came from. open_tokenizer (tokenizer_files.h) picks one from a model folder's files.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Appends the ids of `text` (valid UTF-8) to out; no special tokens are added.
  virtual void encode(std::string_view text, Encoding& out) = 0;
  Encoding encode(std::string_view text) {
    Encoding e;
    encode(text, e);
    return e;
  }
  virtual std::vector<std::string> tokens(const std::vector<int32_t>& ids) const = 0;
  // The text of n ids for people to read: WordPiece's pieces joined at ## (words spaced), a
  // byte-level BPE's bytes (invalid UTF-8 of a cut character replaced by U+FFFD).
  virtual std::string decode(const int32_t* ids, size_t n) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual const Vocab& vocab() const = 0;  // the tokens by id, as the vocabulary file spells them
  virtual const char* kind() const = 0;    // "WordPiece", "byte-level BPE"
};

// Not thread-safe (it caches word pieces): use one instance per thread.
class BertTokenizer final : public Tokenizer {
 public:
  BertTokenizer(Vocab vocab, TokenizerOptions options);
  const Vocab& vocab() const override { return vocab_; }
  const TokenizerOptions& options() const { return options_; }

  // `text` must be valid UTF-8.
  void encode(std::string_view text, Encoding& out) override;  // appends to out
  using Tokenizer::encode;
  std::vector<std::string> tokens(const std::vector<int32_t>& ids) const override;
  std::string decode(const int32_t* ids, size_t n) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  const char* kind() const override { return "WordPiece"; }

  // The basic tokenizer alone: the words after cleaning, lower-casing and punctuation split.
  std::vector<std::string> basic_tokenize(std::string_view text);

 private:
  // Appends the pieces of one basic-tokenized segment (no special tokens inside).
  void encode_segment(std::string_view text, Encoding& out);
  void wordpiece(std::string_view word, std::vector<int32_t>& ids);
  void normalise(std::string_view text, std::string& out) const;  // clean, CJK, NFC
  void lower_and_strip(std::string_view word, std::string& out) const;
  // Calls on_word for each whitespace word after cleaning, lower-casing and accent stripping.
  template <class OnWord>
  void for_each_word(std::string_view text, OnWord&& on_word);
  // Splits one word at punctuation: each punctuation character is a piece of its own.
  template <class OnPiece>
  static void for_each_piece(std::string_view word, OnPiece&& on_piece);

  Vocab vocab_;
  TokenizerOptions options_;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
  std::string buf_, word_buf_;
};

}  // namespace ctxsim
