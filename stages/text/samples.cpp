#include "stages/text/samples.h"

#include <algorithm>
#include <numeric>

#include "stages/base/error.h"
#include "stages/base/limits.h"

namespace ctxsim {

TokenizedCorpus tokenize_corpus(const Corpus& corpus, Tokenizer& tokenizer, const SampleFrame& frame) {
  TokenizedCorpus out;
  out.documents.resize(corpus.documents.size());
  Encoding enc;
  for (size_t d = 0; d < corpus.documents.size(); ++d) {
    for (const auto& text : corpus.documents[d].sentences) {
      enc.ids.clear();
      enc.word_ids.clear();
      enc.num_words = 0;
      frame.encode(tokenizer, text, enc);
      if (enc.ids.empty()) {
        ++out.dropped_sentences;
        continue;
      }
      out.num_tokens += static_cast<int64_t>(enc.ids.size());
      out.documents[d].sentences.push_back(TokenizedSentence{enc.ids, enc.word_ids, enc.num_words});
    }
    out.num_sentences += static_cast<int64_t>(out.documents[d].sentences.size());
  }
  return out;
}

std::vector<SampleSource> enumerate_candidates(const std::vector<int32_t>& sentences_per_document, const SampleOptions& o) {
  std::vector<SampleSource> out;
  for (size_t d = 0; d < sentences_per_document.size(); ++d) {
    const int32_t n = sentences_per_document[d];
    if (n == 0 || !o.documents.keeps(int64_t(d))) continue;
    if (o.windows == WindowMode::Documents) {
      out.push_back({static_cast<int32_t>(d), 0});
    } else {
      for (int32_t s = 0; s < n; s += o.stride_sentences) out.push_back({static_cast<int32_t>(d), s});
    }
  }
  return out;
}

namespace {

std::vector<int32_t> sentence_counts(const TokenizedCorpus& corpus) {
  std::vector<int32_t> n;
  n.reserve(corpus.documents.size());
  for (const auto& d : corpus.documents) n.push_back(static_cast<int32_t>(d.sentences.size()));
  return n;
}

std::vector<int32_t> sentence_counts(const SentenceIndex& index) {
  std::vector<int32_t> n;
  n.reserve(index.kept.size());
  for (const auto& d : index.kept) n.push_back(static_cast<int32_t>(d.size()));
  return n;
}

}  // namespace

std::vector<SampleSource> enumerate_candidates(const TokenizedCorpus& corpus, const SampleOptions& o) {
  return enumerate_candidates(sentence_counts(corpus), o);
}

bool yields_tokens(std::string_view text, Tokenizer& tokenizer, const SampleFrame& frame) {
  for (char c : text)
    if (c > ' ' && c < 0x7f) return true;
  return !frame.encode(tokenizer, text).ids.empty();
}

SentenceIndex index_sentences(const Corpus& corpus, Tokenizer& tokenizer, const SampleFrame& frame) {
  SentenceIndex index;
  index.kept.resize(corpus.documents.size());
  for (size_t d = 0; d < corpus.documents.size(); ++d) {
    const auto& sentences = corpus.documents[d].sentences;
    for (size_t s = 0; s < sentences.size(); ++s) {
      if (yields_tokens(sentences[s], tokenizer, frame))
        index.kept[d].push_back(static_cast<int32_t>(s));
      else
        ++index.dropped;
    }
    index.sentences += static_cast<int64_t>(index.kept[d].size());
  }
  return index;
}

bool build_window(const TokenizedDocument& doc, int32_t first_sentence, int32_t seq_len, const SampleFrame& frame, int32_t* tok,
                  int16_t* sent, int16_t* word, int16_t& n_valid) {
  const int32_t room_total = frame.room(seq_len);
  int32_t pos = 0;
  if (frame.begin >= 0) {
    tok[pos] = frame.begin;
    sent[pos] = -1;
    word[pos] = -1;
    ++pos;
  }
  int32_t word_base = 0;
  bool truncated = false;
  const auto n = static_cast<int32_t>(doc.sentences.size());
  for (int32_t s = first_sentence; s < n; ++s) {
    const auto& sentence = doc.sentences[s];
    const int32_t room = room_total - (pos - frame.words_from());
    if (room <= 0) break;
    const auto len = static_cast<int32_t>(sentence.ids.size());
    const int32_t take = std::min(len, room);
    const auto sid = static_cast<int16_t>(s - first_sentence);
    for (int32_t i = 0; i < take; ++i, ++pos) {
      tok[pos] = sentence.ids[i];
      sent[pos] = sid;
      word[pos] = static_cast<int16_t>(word_base + sentence.word_ids[i]);
    }
    if (take < len) {
      truncated = true;
      break;
    }
    word_base += sentence.num_words;
  }
  if (frame.end >= 0) {
    tok[pos] = frame.end;
    sent[pos] = -1;
    word[pos] = -1;
    ++pos;
  }
  n_valid = static_cast<int16_t>(pos);
  for (; pos < seq_len; ++pos) {
    tok[pos] = frame.pad;
    sent[pos] = -1;
    word[pos] = -1;
  }
  return truncated;
}

int64_t SampleSet::valid_tokens() const {
  int64_t n = 0;
  for (auto v : n_valid) n += v;
  return n;
}

namespace {

// The draw over documents with these counts of token-giving sentences, each drawn window written
// by write(source, tokens, sentence ids, word ids, n_valid) → whether it cut a sentence.
template <class WriteWindow>
SampleSet draw_windows(const std::vector<int32_t>& sentences_per_document, const SampleOptions& o, WriteWindow&& write) {
  if (!kSeqLen.holds(o.seq_len))
    throw Error(kSeqLen.quantity,
                std::to_string(o.seq_len) + " is outside " + std::to_string(kSeqLen.lo) +
                    " (a begin token, one word token, an end token) to " + std::to_string(kSeqLen.hi),
                "use a length in that range");
  const auto candidates = enumerate_candidates(sentences_per_document, o);
  if (candidates.empty()) {
    if (o.documents.split != DocumentSplit::All)
      throw Error(kDocumentSplit,
                  std::string("no candidate windows: no document of the ") +
                      (o.documents.split == DocumentSplit::Heldout ? "held-out" : "training") + " split has text (corpus.heldout_every=" +
                      std::to_string(o.documents.heldout_every) + ", " + std::to_string(sentences_per_document.size()) + " documents)",
                  o.documents.heldout_every == 0 ? "set corpus.heldout_every (e.g. 10) or corpus.split=all"
                                                 : "lower corpus.heldout_every, or use a corpus with more documents");
    throw Error(kCorpusText, "no candidate windows: the corpus has no tokenizable sentence", "point corpus.path at a corpus with text");
  }
  const auto drawn = draw_candidates(static_cast<int64_t>(candidates.size()), o.num_samples, o.seed);
  SampleSet set;
  set.seq_len = o.seq_len;
  set.num_candidates = static_cast<int64_t>(candidates.size());
  set.requested = o.num_samples;
  const size_t N = drawn.size(), T = static_cast<size_t>(o.seq_len);
  set.token_ids.resize(N * T);
  set.sentence_ids.resize(N * T);
  set.word_ids.resize(N * T);
  set.n_valid.resize(N);
  set.source.resize(N);
  set.candidate = drawn;
  for (size_t n = 0; n < N; ++n) {
    const SampleSource src = candidates[static_cast<size_t>(drawn[n])];
    set.source[n] = src;
    if (write(src, &set.token_ids[n * T], &set.sentence_ids[n * T], &set.word_ids[n * T], set.n_valid[n])) ++set.truncated_sentences;
  }
  return set;
}

}  // namespace

SampleSet build_samples(const TokenizedCorpus& corpus, const SampleOptions& o, const SampleFrame& frame) {
  return draw_windows(
      sentence_counts(corpus), o, [&](const SampleSource& src, int32_t* tok, int16_t* sent, int16_t* word, int16_t& n_valid) {
        return build_window(corpus.documents[size_t(src.document)], src.sentence, o.seq_len, frame, tok, sent, word, n_valid);
      });
}

SampleSet draw_samples(const Corpus& corpus, const SentenceIndex& index, Tokenizer& tokenizer, const SampleOptions& o,
                       const SampleFrame& frame) {
  CTXSIM_CHECK(index.kept.size() == corpus.documents.size(), "draw_samples: the sentence index is of another corpus");
  TokenizedDocument window;  // the window's sentences, tokenized until they fill it
  return draw_windows(sentence_counts(index), o,
                      [&](const SampleSource& src, int32_t* tok, int16_t* sent, int16_t* word, int16_t& n_valid) {
                        const auto& kept = index.kept[size_t(src.document)];
                        const auto& texts = corpus.documents[size_t(src.document)].sentences;
                        window.sentences.clear();
                        int64_t tokens = 0;
                        for (size_t k = size_t(src.sentence); k < kept.size() && tokens < frame.room(o.seq_len); ++k) {
                          Encoding e = frame.encode(tokenizer, texts[size_t(kept[k])]);
                          tokens += static_cast<int64_t>(e.ids.size());
                          window.sentences.push_back(TokenizedSentence{std::move(e.ids), std::move(e.word_ids), e.num_words});
                        }
                        return build_window(window, 0, o.seq_len, frame, tok, sent, word, n_valid);
                      });
}

}  // namespace ctxsim
