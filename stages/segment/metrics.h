// Segmentation error metrics as SPEC §6 defines them: Pk (Beeferman et al. 1999) and WindowDiff
// (Pevzner & Hearst 2002) of a hypothesis against a reference, both over the same probes. Pure
// arithmetic on boundary lists; knows nothing of models, corpora or stores.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim::segment {

// A segmentation of a document of n sentences: the sorted 0-based indices of the sentences that
// start segments 2…K, each in 1…n-1 (segment 1 always starts at sentence 0). Empty: one segment.
using Boundaries = std::vector<int32_t>;

// Throws ctxsim::Error (where: `where`) unless n >= 1 and `b` is strictly increasing within
// 1…n-1; the message names the first offending entry.
void validate_boundaries(const Boundaries& b, int32_t n, const std::string& where);

// The probe distance k for a document of n sentences whose reference has `reference_boundaries`
// boundaries: round(n / (2·(|R| + 1))) (half away from zero), at least 2, and then at most n-1 so
// that a short document still has one probe (n = 2 gives k = 1; n = 1 gives k = 0: no probe).
int32_t probe_distance(int32_t n, size_t reference_boundaries);

struct SegmentScores {
  double pk = 0;           // fraction of probes where "same segment" differs, in [0, 1]
  double window_diff = 0;  // fraction of probes where the boundary counts differ, in [0, 1]
  int32_t k = 0;           // probe distance used (probe_distance)
  int32_t probes = 0;      // n - k; 0 only for a one-sentence document, whose scores are 0
};

// Both metrics over probes i = 0 … n-k-1, each comparing the boundaries b with i < b <= i+k.
// Validates both boundary lists (throws ctxsim::Error naming "reference" or "hypothesis").
SegmentScores score_segmentation(const Boundaries& reference, const Boundaries& hypothesis, int32_t n);
double pk(const Boundaries& reference, const Boundaries& hypothesis, int32_t n);
double window_diff(const Boundaries& reference, const Boundaries& hypothesis, int32_t n);

// Macro averages over documents (each document weighs the same, SPEC §6); k and probes are 0.
// An empty list averages to zeros.
SegmentScores mean_scores(const std::vector<SegmentScores>& documents);

}  // namespace ctxsim::segment
