#include "pipeline/commands/segment_inputs.h"

#include <algorithm>
#include <cctype>

#include "pipeline/commands/job_shell.h"
#include "pipeline/job/config/inputs.h"
#include "stages/base/error.h"
#include "stages/segment/encode.h"

namespace ctxsim {

std::vector<int32_t> segment_stop_ids(const JobTokenizer& tokenizer) {
  // Function words of English (a short list in the spirit of the SMART list TextTiling and C99
  // used): whole-word WordPiece tokens of bert-base-uncased.
  static const char* const kFunctionWords[] = {
      "a",   "about", "after", "all",  "also",  "an",    "and",    "any",   "are",   "as",   "at",   "be",   "been",  "but",  "by",
      "can", "could", "did",   "do",   "does",  "for",   "from",   "had",   "has",   "have", "he",   "her",  "him",   "his",  "how",
      "i",   "if",    "in",    "into", "is",    "it",    "its",    "me",    "more",  "most", "my",   "no",   "not",   "now",  "of",
      "on",  "one",   "only",  "or",   "other", "our",   "out",    "over",  "said",  "she",  "so",   "some", "such",  "than", "that",
      "the", "their", "them",  "then", "there", "these", "they",   "this",  "those", "to",   "up",   "upon", "us",    "very", "was",
      "we",  "were",  "what",  "when", "where", "which", "while",  "who",   "whom",  "why",  "will", "with", "would", "you",  "your",
      "s",   "t",     "mr",    "mrs",  "may",   "must",  "should", "being", "each",  "just", "many", "much", "own",   "same"};
  const Vocab& vocab = tokenizer.vocab();
  // Byte-level BPE spells a word's leading space as U+0120 ("Ġ").
  const std::string space = tokenizer.family->byte_level_bpe ? "\xC4\xA0" : "";
  std::vector<int32_t> stop = tokenizer.frame.specials;
  for (const char* w : kFunctionWords)
    for (const std::string& spelled : {std::string(w), space + w})
      if (const int32_t id = vocab.id(spelled); id >= 0) stop.push_back(id);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    std::string_view t = vocab.token(id);
    if (!space.empty() && t.substr(0, space.size()) == space) t.remove_prefix(space.size());
    if (std::none_of(t.begin(), t.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || (ch & 0x80); }))
      stop.push_back(id);
  }
  std::sort(stop.begin(), stop.end());
  stop.erase(std::unique(stop.begin(), stop.end()), stop.end());
  return stop;
}

segment::MethodOptions segment_method_options(const Config& c, const JobTokenizer& tokenizer) {
  segment::MethodOptions o;
  o.block.window = int32_t(c.segment.block_window);
  o.block.smoothing_radius = int32_t(c.segment.smoothing);
  o.c99.rank_mask = int32_t(c.segment.c99_mask);
  o.attention_layers = int32_t(c.segment.attention_layers);
  o.stop_ids = segment_stop_ids(tokenizer);
  return o;
}

std::vector<segment::TokenIds> Benchmark::sentences(const TokenizedCorpus& corpus, size_t d) const {
  std::vector<segment::TokenIds> out;
  for (const auto& part : documents[d].segments) {
    const auto& doc = corpus.documents[size_t(part.document)];
    for (int32_t s = 0; s < part.sentences; ++s) out.push_back(doc.sentences[size_t(s)].ids);
  }
  return out;
}

Benchmark make_benchmark(const Config& c, const TokenizedCorpus& corpus) {
  const DocumentFilter filter{c.corpus.split, c.corpus.heldout_every};
  std::vector<segment::EligibleDocument> eligible;
  for (size_t d = 0; d < corpus.documents.size(); ++d)
    if (filter.keeps(int64_t(d)) && !corpus.documents[d].sentences.empty())
      eligible.push_back({int32_t(d), int32_t(corpus.documents[d].sentences.size())});
  std::vector<segment::ChoiSubset> subsets = segment::choi_standard_subsets();
  if (c.segment.documents > 0)
    for (auto& s : subsets) s.documents = int32_t(c.segment.documents);
  subsets.push_back({"dev", 3, 11, int32_t(c.segment.dev_documents)});
  Benchmark b;
  try {
    b.documents = segment::choi_benchmark(eligible, uint64_t(c.segment.seed), subsets);
  } catch (const Error& e) {
    throw Error(c.where("corpus.split"),
                "the benchmark cannot be drawn from the " + std::to_string(eligible.size()) + " documents of this split: " + e.problem(),
                "choose a split with more documents (corpus.split=all, or a smaller corpus.heldout_every), or a larger corpus");
  }
  for (const auto& s : subsets) b.subsets.push_back(s.name);
  for (const auto& d : b.documents)
    b.subset_of.push_back(int32_t(std::find(b.subsets.begin(), b.subsets.end(), d.subset) - b.subsets.begin()));
  return b;
}

std::string cut_sentences_note(const Config& c, const Benchmark& bench, const TokenizedCorpus& corpus, int32_t window,
                               const SampleFrame& frame) {
  const int32_t room = frame.room(window);
  int64_t cut = 0, total = 0;
  for (size_t d = 0; d < bench.documents.size(); ++d)
    for (const auto& s : bench.sentences(corpus, d)) {
      ++total;
      cut += int64_t(s.size()) > int64_t(room);
    }
  if (cut == 0) return "";
  return "note: " + std::to_string(cut) + " of the benchmark's " + std::to_string(total) + " sentences are longer than the window's " +
         std::to_string(room) + " tokens (" + c.where("samples.seq_len") + " minus the frame's " + std::to_string(window - room) +
         ") and are cut to it: the model does not see their tails (raise samples.seq_len up to the model's "
         "positions to see them whole)";
}

segment::DocumentResult benchmark_document(const Config& c, const Benchmark& bench, const TokenizedCorpus& corpus, size_t d,
                                           const Encoder& model, const SampleFrame& frame, const segment::MethodOptions& options,
                                           int32_t window, segment::EncodedDocument* encoded) {
  const auto sentences = bench.sentences(corpus, d);
  segment::EncodedDocument e = segment::encode_document(model, sentences, window, frame, c.runtime.batch_size);
  const uint64_t seed = segment::choi_subset_seed(uint64_t(c.segment.seed) ^ 0x5e9e17ULL, d);
  segment::DocumentResult r = segment::segment_document(sentences, e, bench.documents[d].boundaries, options, seed);
  if (encoded) *encoded = std::move(e);
  return r;
}

int32_t segment_window(const Config& c, const ModelConfig& model) {
  check_positions(c, model.max_tokens());
  return int32_t(c.samples.seq_len);
}

}  // namespace ctxsim
