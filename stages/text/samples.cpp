#include "stages/text/samples.h"

#include <algorithm>
#include <numeric>

#include "stages/base/error.h"

namespace ctxsim {

TokenizedCorpus tokenize_corpus(const Corpus& corpus, BertTokenizer& tokenizer) {
  TokenizedCorpus out;
  out.documents.resize(corpus.documents.size());
  Encoding enc;
  for (size_t d = 0; d < corpus.documents.size(); ++d) {
    for (const auto& text : corpus.documents[d].sentences) {
      enc.ids.clear();
      enc.word_ids.clear();
      enc.num_words = 0;
      tokenizer.encode(text, enc);
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

std::vector<SampleSource> enumerate_candidates(const TokenizedCorpus& corpus, const SampleOptions& o) {
  std::vector<SampleSource> out;
  for (size_t d = 0; d < corpus.documents.size(); ++d) {
    const auto n = static_cast<int32_t>(corpus.documents[d].sentences.size());
    if (n == 0 || !o.documents.keeps(int64_t(d))) continue;
    if (o.windows == WindowMode::Documents) {
      out.push_back({static_cast<int32_t>(d), 0});
    } else {
      for (int32_t s = 0; s < n; s += o.stride_sentences) out.push_back({static_cast<int32_t>(d), s});
    }
  }
  return out;
}

SpecialIds SpecialIds::from(const Vocab& vocab) {
  SpecialIds s{vocab.cls_id(), vocab.sep_id(), vocab.pad_id()};
  if (s.cls < 0 || s.sep < 0 || s.pad < 0)
    throw Error("vocabulary", "it lacks one of [CLS], [SEP], [PAD], which every sample needs", "use a BERT vocab.txt");
  return s;
}

bool build_window(const TokenizedDocument& doc, int32_t first_sentence, int32_t seq_len, const SpecialIds& special, int32_t* tok,
                  int16_t* sent, int16_t* word, int16_t& n_valid) {
  const int32_t room_total = seq_len - 2;
  int32_t pos = 0;
  tok[pos] = special.cls;
  sent[pos] = -1;
  word[pos] = -1;
  ++pos;
  int32_t word_base = 0;
  bool truncated = false;
  const auto n = static_cast<int32_t>(doc.sentences.size());
  for (int32_t s = first_sentence; s < n; ++s) {
    const auto& sentence = doc.sentences[s];
    const int32_t room = room_total - (pos - 1);
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
  tok[pos] = special.sep;
  sent[pos] = -1;
  word[pos] = -1;
  ++pos;
  n_valid = static_cast<int16_t>(pos);
  for (; pos < seq_len; ++pos) {
    tok[pos] = special.pad;
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

SampleSet build_samples(const TokenizedCorpus& corpus, const SampleOptions& o, const SpecialIds& special) {
  if (o.seq_len < 3) throw Error("samples.seq_len", "must be at least 3 ([CLS], one token, [SEP])", "raise it");
  if (o.seq_len > 32767) throw Error("samples.seq_len", "must be at most 32767", "lower it");
  const auto candidates = enumerate_candidates(corpus, o);
  if (candidates.empty()) {
    if (o.documents.split != DocumentSplit::All)
      throw Error("corpus.split",
                  std::string("no candidate windows: no document of the ") +
                      (o.documents.split == DocumentSplit::Heldout ? "held-out" : "training") + " split has text (corpus.heldout_every=" +
                      std::to_string(o.documents.heldout_every) + ", " + std::to_string(corpus.documents.size()) + " documents)",
                  o.documents.heldout_every == 0 ? "set corpus.heldout_every (e.g. 10) or corpus.split=all"
                                                 : "lower corpus.heldout_every, or use a corpus with more documents");
    throw Error("corpus", "no candidate windows: the corpus has no tokenizable sentence", "point corpus.path at a corpus with text");
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
    if (build_window(corpus.documents[src.document], src.sentence, o.seq_len, special, &set.token_ids[n * T], &set.sentence_ids[n * T],
                     &set.word_ids[n * T], set.n_valid[n]))
      ++set.truncated_sentences;
  }
  return set;
}

}  // namespace ctxsim
