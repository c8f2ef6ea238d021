#include "stages/segment/document.h"

#include <algorithm>

#include "stages/base/error.h"

namespace ctxsim::segment {
namespace {

const char* const kBaselines[] = {"texttiling/given", "texttiling/estimated", "c99/given", "c99/estimated", "random/given", "even/given"};
const char* const kPerLayer[] = {"heads-depth/given",   "heads-depth/estimated", "heads-c99/given",
                                 "heads-c99/estimated", "attention/given",       "attention/estimated"};

// Both counts of one method: the gold number of boundaries, then the method's own.
template <class Method>
void both_counts(int32_t gold_count, Method&& method, std::vector<Boundaries>& out) {
  out.push_back(method(gold_count));
  out.push_back(method(kEstimate));
}

}  // namespace

std::vector<std::string> method_names(int64_t layers) {
  std::vector<std::string> names(std::begin(kBaselines), std::end(kBaselines));
  for (int64_t l = 0; l < layers; ++l)
    for (const char* m : kPerLayer) names.push_back("layer" + std::to_string(l) + "/" + m);
  names.push_back("attention-final/given");
  names.push_back("attention-final/estimated");
  return names;
}

std::vector<double> gap_attention(const EncodedDocument& e, int64_t first, int64_t last) {
  const int64_t n = e.S;
  std::vector<double> g(size_t(std::max<int64_t>(0, n - 1)), 0.0);
  for (int64_t l = first; l < last; ++l)
    for (int64_t q = 0; q + 1 < n; ++q) g[size_t(q)] += e.cross[size_t(l * (n - 1) + q)] / double(last - first);
  return g;
}

DocumentResult segment_document(const std::vector<TokenIds>& sentences, const EncodedDocument& e, const Boundaries& gold,
                                const MethodOptions& o, uint64_t seed) {
  const int32_t n = int32_t(sentences.size()), count = int32_t(gold.size());
  CTXSIM_CHECK(e.S == n, "segment_document: the encoding is of another document");
  DocumentResult r;
  auto& b = r.boundaries;
  both_counts(
      count, [&](int32_t k) { return texttiling(sentences, o.stop_ids, o.block, k); }, b);
  both_counts(
      count, [&](int32_t k) { return c99_lexical(sentences, o.stop_ids, o.c99, k); }, b);
  b.push_back(random_boundaries(n, count, seed));
  b.push_back(evenly_spaced_boundaries(n, count));
  for (int64_t l = 0; l < e.L; ++l) {
    const std::vector<double> sim = e.similarity(l, -1);
    both_counts(
        count, [&](int32_t k) { return block_comparison(sim, n, o.block, k); }, b);
    both_counts(
        count, [&](int32_t k) { return c99(sim, n, o.c99, k); }, b);
    const std::vector<double> gaps = gap_attention(e, l, l + 1);
    both_counts(
        count, [&](int32_t k) { return boundaries_from_gap_scores(gaps, o.block, k); }, b);
  }
  const std::vector<double> final_gaps = gap_attention(e, std::max<int64_t>(0, e.L - o.attention_layers), e.L);
  both_counts(
      count, [&](int32_t k) { return boundaries_from_gap_scores(final_gaps, o.block, k); }, b);
  for (const Boundaries& h : b) r.scores.push_back(score_segmentation(gold, h, n));
  for (int64_t l = 0; l < e.L; ++l)
    for (int64_t h = 0; h < e.H; ++h) r.heads.push_back(score_segmentation(gold, c99(e.similarity(l, h), n, o.c99, count), n));
  return r;
}

}  // namespace ctxsim::segment
