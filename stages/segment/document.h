// Every segmentation method of the benchmark on one test document, scored against its gold
// boundaries: the lexical baselines (TextTiling, C99), random and evenly spaced boundaries, and
// the model-derived methods on each layer (block comparison with depth scores and C99 on the
// sentence similarity of the layer's heads, SPEC's context similarity lifted to sentences; depth
// scores on the attention across each gap) and on the final layers' attention; and C99 on each
// head's similarity alone, to say which heads segment. Each with the gold number of boundaries
// (as Choi reports) and with the method's own estimate. No MPI, no HDF5.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stages/segment/encode.h"
#include "stages/segment/lexical.h"
#include "stages/segment/metrics.h"
#include "stages/segment/similarity_methods.h"

namespace ctxsim::segment {

struct MethodOptions {
  BlockOptions block;             // TextTiling and every depth-score method
  C99Options c99;                 // C99, lexical and model-derived
  int32_t attention_layers = 2;   // the final layers whose gap attention "attention-final" averages
  std::vector<int32_t> stop_ids;  // token ids the lexical methods never count (specials, punctuation)
};

// The methods in the order of the store's /methods: baselines, then per layer, then the final
// layers' attention; each "<method>/given" and, where the method can estimate, "/estimated".
std::vector<std::string> method_names(int64_t layers);

struct DocumentResult {
  std::vector<Boundaries> boundaries;  // [M] in method_names order
  std::vector<SegmentScores> scores;   // [M]
  std::vector<SegmentScores> heads;    // [L * H] C99 on one head's similarity, the gold count
};

// The attention across each gap of an encoded document, averaged over layers [first, last): the
// gap scores of the attention methods ([S-1]).
std::vector<double> gap_attention(const EncodedDocument& encoded, int64_t first, int64_t last);

// sentences: the document's sentences as token ids; encoded: the model's view of them (same
// sentences); seed: the random baseline's (per document).
DocumentResult segment_document(const std::vector<TokenIds>& sentences, const EncodedDocument& encoded, const Boundaries& gold,
                                const MethodOptions& options, uint64_t seed);

}  // namespace ctxsim::segment
