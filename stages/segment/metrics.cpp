// Pk and WindowDiff (SPEC §6), by prefix counts of boundaries so each probe is O(1).
#include "stages/segment/metrics.h"

#include <algorithm>
#include <cmath>

#include "stages/base/error.h"

namespace ctxsim::segment {
namespace {

// at[x] = number of boundaries <= x, for x = 0 … n-1; boundaries in (i, i+k] = at[i+k] - at[i].
std::vector<int32_t> boundaries_up_to(const Boundaries& b, int32_t n) {
  std::vector<int32_t> at(static_cast<size_t>(n), 0);
  for (const int32_t x : b) ++at[static_cast<size_t>(x)];
  for (size_t x = 1; x < at.size(); ++x) at[x] += at[x - 1];
  return at;
}

}  // namespace

void validate_boundaries(const Boundaries& b, int32_t n, const std::string& where) {
  if (n < 1)
    throw Error(where, "a document needs at least one sentence, got n = " + std::to_string(n),
                "leave empty documents out before segmenting");
  for (size_t j = 0; j < b.size(); ++j) {
    const std::string entry = "boundary #" + std::to_string(j) + " (" + std::to_string(b[j]) + ")";
    if (b[j] < 1 || b[j] > n - 1)
      throw Error(where, entry + " is outside 1…" + std::to_string(n - 1) + " for a document of " + std::to_string(n) + " sentences",
                  "boundaries are the 0-based indices of the sentences that start segments 2…K");
    if (j > 0 && b[j] <= b[j - 1])
      throw Error(where, entry + " does not come after the previous one (" + std::to_string(b[j - 1]) + ")",
                  "give boundaries sorted and without repeats");
  }
}

int32_t probe_distance(int32_t n, size_t reference_boundaries) {
  const double raw = std::round(static_cast<double>(n) / (2.0 * static_cast<double>(reference_boundaries + 1)));
  const int32_t k = std::max<int32_t>(2, static_cast<int32_t>(raw));
  // Why clamp: with k >= n there would be no probe and Pk would be 0/0. k = n-1 keeps one probe,
  // comparing the first and last sentences, which is still the definition's question.
  return std::max<int32_t>(0, std::min<int32_t>(k, n - 1));
}

SegmentScores score_segmentation(const Boundaries& reference, const Boundaries& hypothesis, int32_t n) {
  validate_boundaries(reference, n, "reference");
  validate_boundaries(hypothesis, n, "hypothesis");
  SegmentScores s;
  s.k = probe_distance(n, reference.size());
  s.probes = n - s.k;
  if (s.k == 0) {  // one sentence: nothing to compare, nothing wrong
    s.probes = 0;
    return s;
  }
  const auto r = boundaries_up_to(reference, n), h = boundaries_up_to(hypothesis, n);
  int64_t pk_miss = 0, wd_miss = 0;
  for (int32_t i = 0; i + s.k < n; ++i) {
    const int32_t in_r = r[static_cast<size_t>(i + s.k)] - r[static_cast<size_t>(i)];
    const int32_t in_h = h[static_cast<size_t>(i + s.k)] - h[static_cast<size_t>(i)];
    pk_miss += (in_r == 0) != (in_h == 0);
    wd_miss += in_r != in_h;
  }
  s.pk = static_cast<double>(pk_miss) / s.probes;
  s.window_diff = static_cast<double>(wd_miss) / s.probes;
  return s;
}

double pk(const Boundaries& reference, const Boundaries& hypothesis, int32_t n) { return score_segmentation(reference, hypothesis, n).pk; }

double window_diff(const Boundaries& reference, const Boundaries& hypothesis, int32_t n) {
  return score_segmentation(reference, hypothesis, n).window_diff;
}

SegmentScores mean_scores(const std::vector<SegmentScores>& documents) {
  SegmentScores m;
  if (documents.empty()) return m;
  for (const auto& d : documents) {
    m.pk += d.pk;
    m.window_diff += d.window_diff;
  }
  m.pk /= static_cast<double>(documents.size());
  m.window_diff /= static_cast<double>(documents.size());
  return m;
}

}  // namespace ctxsim::segment
