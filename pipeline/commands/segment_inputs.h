// What `ctxsim segment` works from, shared by the benchmark job (segment.cpp) and the text mode
// (segment_text.cpp): the config's tokenizer and model, the methods' options, the stop set of
// the lexical baselines, and Choi's benchmark drawn from the config's corpus split.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "stages/model/model.h"
#include "stages/segment/choi.h"
#include "stages/segment/document.h"
#include "stages/text/samples.h"
#include "stages/text/tokenizer.h"

namespace ctxsim {

// The lexical baselines' stop set: the family's special tokens, tokens without a letter or digit
// (punctuation), and a short list of English function words (as TextTiling and C99 use), each as
// a word-initial token of the vocabulary (byte-level BPE: also with its leading space, "Ġthe").
std::vector<int32_t> segment_stop_ids(const JobTokenizer& tokenizer);

// The config's segment.* options as the methods take them.
segment::MethodOptions segment_method_options(const Config& c, const JobTokenizer& tokenizer);

// The benchmark: Choi's subsets (segment.documents each when > 0), then "dev" (the documents the
// summary chooses each method's best layer on), drawn with segment.seed from the corpus split.
struct Benchmark {
  std::vector<std::string> subsets;  // names, "dev" last
  std::vector<segment::ChoiDocument> documents;
  std::vector<int32_t> subset_of;  // [documents] index into subsets
  // The sentences (token ids) of test document d.
  std::vector<segment::TokenIds> sentences(const TokenizedCorpus& corpus, size_t d) const;
};
Benchmark make_benchmark(const Config& c, const TokenizedCorpus& corpus);

// The model's input window for segment: samples.seq_len, which the model's positions must hold.
int32_t segment_window(const Config& c, const ModelConfig& model);

// "N of the benchmark's M sentences are longer than the window…" when any is (each is cut to the
// window, its tail unseen by the model), else "".
std::string cut_sentences_note(const Config& c, const Benchmark& bench, const TokenizedCorpus& corpus, int32_t window,
                               const SampleFrame& frame);

// What one work unit of `ctxsim segment` computes: test document d through the model (windows of
// `window` tokens, runtime.batch_size at a time) and every method, its random baseline seeded by
// the document (so it does not depend on who computes it). `encoded`, when given, receives the
// model's view of the document (document 0's similarity matrices are kept in the store).
segment::DocumentResult benchmark_document(const Config& c, const Benchmark& bench, const TokenizedCorpus& corpus, size_t d,
                                           const Encoder& model, const SampleFrame& frame, const segment::MethodOptions& options,
                                           int32_t window, segment::EncodedDocument* encoded = nullptr);

}  // namespace ctxsim
