// Topic segmentation from a sentence x sentence similarity matrix: block comparison with depth
// scores (TextTiling's boundary finding, Hearst 1997), C99's rank matrix and divisive clustering
// (Choi 2000), and the random and evenly spaced baselines. The matrix may come from anything
// (lexical cosines, attention-head vectors); these functions never see text or models.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/segment/metrics.h"

namespace ctxsim::segment {

// `count` arguments: how many boundaries to place (0 … n-1), or kEstimate to let the method's
// own stopping rule decide. Any other value throws ctxsim::Error.
inline constexpr int32_t kEstimate = -1;

// Similarity matrices are [n, n] row-major doubles, symmetric, n >= 1. Gap g (1 … n-1) lies
// between sentences g-1 and g; gap vectors hold gap g at index g-1.

// ---- block comparison with depth scores --------------------------------------------------
struct BlockOptions {
  int32_t window = 3;            // w: sentences per block on each side of a gap (clipped at edges), >= 1
  int32_t smoothing_radius = 1;  // gap scores averaged over gaps g-r … g+r (clipped); 0: none
  double cutoff_stds = 0.5;      // estimated count: keep depths > mean - cutoff_stds · std (0.5:
                                 // Hearst's conservative HC cutoff, NLTK's default; 1.0: liberal LC)
  int32_t min_segment = 2;       // sentences per segment the picker keeps to while it can, >= 1
};

// Gap score of gap g: the mean of similarity[a][b] over a in the w sentences before the gap and
// b in the w after it (fewer at the document's edges). Returns [n-1].
std::vector<double> gap_scores(const std::vector<double>& similarity, int32_t n, int32_t window);

// Centred moving average: entry j becomes the mean of entries j-r … j+r that exist.
std::vector<double> smooth_scores(const std::vector<double>& scores, int32_t radius);

// Depth of each entry: (left peak - it) + (right peak - it), where a peak is reached by climbing
// from the entry while the next neighbour on that side is >= the current one (plateaus are
// crossed). An entry on a rising or falling slope has one side 0; a peak has depth 0.
std::vector<double> depth_scores(const std::vector<double>& scores);

// Boundaries from depths ([n-1], index g-1 for gap g). Candidates are taken in order of depth,
// largest first, ties to the earlier gap. A peak is a gap with depth > 0, > its left neighbour's
// and >= its right neighbour's (so of a plateau only the first gap). "Separated": the boundary
// leaves at least min_segment sentences to every accepted boundary and to both document edges.
//  - count = kEstimate: every separated peak whose depth > mean - cutoff_stds · std (population
//    std over all n-1 depths).
//  - count given: separated peaks first; if fewer than count, any separated gap; if still fewer,
//    any gap. Exactly count boundaries come back.
Boundaries pick_by_depth(const std::vector<double>& depths, int32_t count, double cutoff_stds, int32_t min_segment);

// smooth_scores → depth_scores → pick_by_depth on gap scores from any source ([n-1]).
Boundaries boundaries_from_gap_scores(const std::vector<double>& gaps, const BlockOptions& o, int32_t count);

// The whole method: gap_scores → boundaries_from_gap_scores.
Boundaries block_comparison(const std::vector<double>& similarity, int32_t n, const BlockOptions& o, int32_t count = kEstimate);

// ---- C99: rank matrix and divisive clustering ---------------------------------------------
struct C99Options {
  int32_t rank_mask = 11;    // r: side of the square rank mask, odd, >= 1 (Choi's 11)
  double threshold_c = 1.2;  // c in the stopping rule mean + c · std (Choi's 1.2)
};

// Each entry replaced by the fraction of its neighbours (the other entries of the r x r mask
// centred on it, clipped at the matrix's edges) whose value is strictly lower; 0 when the mask
// holds no neighbour (n = 1, r = 1). Returns [n, n].
std::vector<double> rank_matrix(const std::vector<double>& similarity, int32_t n, int32_t mask);

// Top-down divisive clustering of [n, n] `rank`: each step splits one segment [a, b) at the
// position m (a < m < b) that maximises the inside density D = Σ block sums / Σ block areas over
// all segments after the split; ties go to the earlier position. Stops after max_splits steps.
struct DivisiveSplits {
  std::vector<int32_t> order;   // the boundary each step placed, in step order
  std::vector<double> density;  // density[j]: D after j steps (density[0]: the whole document)
};
DivisiveSplits divisive_clustering(const std::vector<double>& rank, int32_t n, int32_t max_splits);

// Choi's stopping rule: with gains δ(j) = density[j] - density[j-1] (j = 1 … steps), their mean μ
// and population std σ, the number of boundaries is the largest j with δ(j) > μ + c · σ, or 0 when
// no gain is that unusual (always so with a single gain, whose σ is 0, or with none).
int32_t choi_boundary_count(const std::vector<double>& density, double c);

// The whole method: rank_matrix → divisive_clustering (to count steps, or to n-1 steps and then
// choi_boundary_count) → the first boundaries of the step order, sorted.
Boundaries c99(const std::vector<double>& similarity, int32_t n, const C99Options& o, int32_t count = kEstimate);

// ---- baselines ------------------------------------------------------------------------------
// count distinct gaps drawn uniformly (draw_candidates of stages/base/random.h over the n-1 gaps,
// seeded SplitMix64), sorted. count must be given (0 … n-1).
Boundaries random_boundaries(int32_t n, int32_t count, uint64_t seed);

// Boundary j (1 … count) at round(j · n / (count + 1)), half up: count segments of equal length
// to within one sentence, distinct because the spacing is at least one sentence.
Boundaries evenly_spaced_boundaries(int32_t n, int32_t count);

// Throws ctxsim::Error unless count is kEstimate (when allowed) or within 0 … n-1.
void check_boundary_count(int32_t n, int32_t count, bool estimate_allowed);

}  // namespace ctxsim::segment
