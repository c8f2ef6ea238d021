// Choi's (2000) segmentation benchmark, regenerated from any corpus (SPEC §6): test documents of
// 10 segments, each the first n sentences of a distinct, randomly drawn document. Works on
// (document, sentence count) pairs only: the caller picks the split and reads the sentences.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stages/segment/metrics.h"

namespace ctxsim::segment {

inline constexpr int32_t kChoiSegments = 10;  // segments per test document, as in Choi (2000)

// A subset of the benchmark: the range of n and how many test documents to draw.
struct ChoiSubset {
  std::string name;           // "3-11", "3-5", "6-8", "9-11"
  int32_t min_sentences = 3;  // n is uniform in min_sentences…max_sentences (inclusive)
  int32_t max_sentences = 11;
  int32_t documents = 400;  // test documents to draw
};

// Choi's four subsets, in this order: {"3-11", 400}, {"3-5", 100}, {"6-8", 100}, {"9-11", 100}.
std::vector<ChoiSubset> choi_standard_subsets();
// One of them by name; throws ctxsim::Error listing the names otherwise.
ChoiSubset choi_standard_subset(const std::string& name);

// A document the benchmark may draw from (the caller has filtered the corpus split).
struct EligibleDocument {
  int32_t document = 0;   // index in the corpus
  int32_t sentences = 0;  // how many sentences it has
};

// One segment of a test document: sentences 0…sentences-1 of corpus document `document`.
struct ChoiSegment {
  int32_t document = 0;
  int32_t sentences = 0;
};

struct ChoiDocument {
  std::string subset;                 // the subset's name
  std::vector<ChoiSegment> segments;  // kChoiSegments of them, in reading order
  Boundaries boundaries;              // gold: the first sentence of segments 2…10
  int32_t total_sentences = 0;        // sum of the segments' sentence counts
};

// subset.documents test documents drawn with SplitMix64(seed). For each segment in turn: first
// n = min + next() % (max - min + 1), then the document, uniformly (next() % count) among the
// eligible documents that have at least n sentences and are not yet in this test document. So a
// document too short for the drawn n is never used for that segment (as if redrawn), yet serves
// for a smaller n; documents recur only across test documents. The `% m` bias is below
// m / 2^64, far under anything measurable here. Throws ctxsim::Error when fewer than
// kChoiSegments distinct eligible documents have max_sentences sentences (then some draw could
// find no document), or when the subset is malformed.
std::vector<ChoiDocument> choi_test_documents(const std::vector<EligibleDocument>& eligible, const ChoiSubset& subset, uint64_t seed);

// The seed of the i-th subset of a benchmark: the (i+1)-th output of SplitMix64(seed), so the
// subsets' draws are independent and adding a subset at the end changes none of the others.
uint64_t choi_subset_seed(uint64_t seed, size_t index);

// Every subset in turn (by default Choi's four), subset i drawn with choi_subset_seed(seed, i);
// the test documents of all subsets, concatenated in subset order.
std::vector<ChoiDocument> choi_benchmark(const std::vector<EligibleDocument>& eligible, uint64_t seed,
                                         const std::vector<ChoiSubset>& subsets = choi_standard_subsets());

}  // namespace ctxsim::segment
