// Samples (SPEC §1, §7): tokenized documents → candidate windows → the seeded draw → fixed-length
// rows in the family's frame (`[CLS] w… [SEP] [PAD]…`, frame.h) with per-token sentence and word ids.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/base/random.h"
#include "stages/text/corpus.h"
#include "stages/text/frame.h"
#include "stages/text/tokenizer.h"

namespace ctxsim {

struct TokenizedSentence {
  std::vector<int32_t> ids;       // token ids
  std::vector<int32_t> word_ids;  // whitespace word of each token, from 0 within the sentence
  int32_t num_words = 0;
};

struct TokenizedDocument {
  std::vector<TokenizedSentence> sentences;  // sentences with at least one token
};

struct TokenizedCorpus {
  std::vector<TokenizedDocument> documents;  // same order and count as the corpus
  int64_t num_sentences = 0;
  int64_t num_tokens = 0;
  int64_t dropped_sentences = 0;  // sentences that produced no token at all
};

// Each sentence through frame.encode (byte-level BPE: " " + text).
TokenizedCorpus tokenize_corpus(const Corpus& corpus, Tokenizer& tokenizer, const SampleFrame& frame);

enum class WindowMode { Sentences, Documents };

// Which documents samples come from. With heldout_every = N > 0, documents N-1, 2N-1, … (every
// N-th, by index in the corpus as read) are held out: pretraining never trains on them, and a
// run can measure on exactly them. N = 0: no document is held out.
enum class DocumentSplit { All, Train, Heldout };
struct DocumentFilter {
  DocumentSplit split = DocumentSplit::All;
  int64_t heldout_every = 0;
  bool heldout(int64_t document) const { return heldout_every > 0 && document % heldout_every == heldout_every - 1; }
  bool keeps(int64_t document) const { return split == DocumentSplit::All || (split == DocumentSplit::Heldout) == heldout(document); }
};

// What the draw's errors name (the pipeline says which config key set it).
inline constexpr const char* kDocumentSplit = "the document split";
inline constexpr const char* kCorpusText = "the corpus's text";

struct SampleOptions {
  int32_t seq_len = 128;  // T, tokens per sample including the frame's ([CLS] and [SEP])
  WindowMode windows = WindowMode::Sentences;
  int32_t stride_sentences = 1;  // sentences mode: a window at every stride-th sentence
  int64_t num_samples = 20000;   // how many windows to draw
  uint64_t seed = 42;            // SplitMix64 seed of the draw
  DocumentFilter documents;      // the documents windows may come from
};

struct SampleSource {
  int32_t document = 0;  // index in the corpus
  int32_t sentence = 0;  // the window's first sentence within the document
};

// Candidate windows in corpus order (of the documents o.documents keeps), from each document's
// count of sentences that give tokens.
std::vector<SampleSource> enumerate_candidates(const std::vector<int32_t>& sentences_per_document, const SampleOptions& o);
std::vector<SampleSource> enumerate_candidates(const TokenizedCorpus& corpus, const SampleOptions& o);

// Whether a sentence gives at least one token, i.e. whether tokenize_corpus keeps it. A printable
// ASCII character always makes a token (no cleaning removes it, any word gives at least [UNK], and
// byte-level BPE has a token for every byte); other text is tokenized to find out.
bool yields_tokens(std::string_view text, Tokenizer& tokenizer, const SampleFrame& frame);

// The sentences of each document that give tokens (their indices in the document, as read): the
// sentences tokenize_corpus keeps, found without tokenizing them.
struct SentenceIndex {
  std::vector<std::vector<int32_t>> kept;  // per document
  int64_t sentences = 0;                   // kept, in all documents
  int64_t dropped = 0;                     // sentences that give no token
};
SentenceIndex index_sentences(const Corpus& corpus, Tokenizer& tokenizer, const SampleFrame& frame);

// Row-major [N, T] arrays; sentence and word ids are -1 on the frame's tokens ([CLS], [SEP], [PAD]).
struct SampleSet {
  int32_t seq_len = 0;
  std::vector<int32_t> token_ids;     // [N, T]
  std::vector<int16_t> sentence_ids;  // [N, T]
  std::vector<int16_t> word_ids;      // [N, T]
  std::vector<int16_t> n_valid;       // [N]  valid positions are 0 … n_valid-1
  std::vector<SampleSource> source;   // [N]
  std::vector<int64_t> candidate;     // [N]  index among the candidates
  int64_t num_candidates = 0;
  int64_t requested = 0;            // num_samples asked for
  int64_t truncated_sentences = 0;  // sentences cut at the window's end, over the drawn samples
  int64_t size() const { return static_cast<int64_t>(n_valid.size()); }
  int64_t valid_tokens() const;  // including the frame's ([CLS] and [SEP])
  int64_t shortfall() const { return requested > num_candidates ? requested - num_candidates : 0; }
};

// Writes one window into row-major slots of length T; returns whether a sentence was cut.
bool build_window(const TokenizedDocument& doc, int32_t first_sentence, int32_t seq_len, const SampleFrame& frame, int32_t* token_ids,
                  int16_t* sentence_ids, int16_t* word_ids, int16_t& n_valid);

SampleSet build_samples(const TokenizedCorpus& corpus, const SampleOptions& o, const SampleFrame& frame);

// build_samples(tokenize_corpus(corpus, tokenizer, frame), o, frame), bit for bit, tokenizing only the
// sentences that the drawn windows take: the work grows with the samples, not with the corpus (a
// 200-sample draw from the Brown corpus tokenizes about a thousand of its 57,340 sentences).
SampleSet draw_samples(const Corpus& corpus, const SentenceIndex& index, Tokenizer& tokenizer, const SampleOptions& o,
                       const SampleFrame& frame);

}  // namespace ctxsim
