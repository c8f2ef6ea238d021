// Segmentation from a similarity matrix: block comparison with depth scores, C99, baselines.
#include "stages/segment/similarity_methods.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "stages/base/error.h"
#include "stages/base/random.h"

namespace ctxsim::segment {
namespace {

void check_matrix(const std::vector<double>& m, int32_t n) {
  CTXSIM_CHECK(n >= 1 && m.size() == static_cast<size_t>(n) * static_cast<size_t>(n),
               "similarity matrix of " + std::to_string(m.size()) + " values for n = " + std::to_string(n));
}

double at(const std::vector<double>& m, int32_t n, int32_t i, int32_t j) {
  return m[static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(j)];
}

// Whether boundary g leaves min_segment sentences to both edges and to every accepted boundary.
bool separated(int32_t g, int32_t n, const Boundaries& accepted, int32_t min_segment) {
  if (g < min_segment || n - g < min_segment) return false;
  for (const int32_t a : accepted)
    if (std::abs(g - a) < min_segment) return false;
  return true;
}

// Sums of square blocks [a, b) x [a, b) of an [n, n] matrix through 2-D prefix sums.
struct BlockSums {
  int32_t n = 0;
  std::vector<double> prefix;  // [n+1, n+1]: prefix[i][j] = sum of m[0…i-1][0…j-1]
  BlockSums(const std::vector<double>& m, int32_t size) : n(size), prefix(static_cast<size_t>(size + 1) * (size + 1), 0.0) {
    for (int32_t i = 0; i < n; ++i)
      for (int32_t j = 0; j < n; ++j) p(i + 1, j + 1) = at(m, n, i, j) + p(i, j + 1) + p(i + 1, j) - p(i, j);
  }
  double& p(int32_t i, int32_t j) { return prefix[static_cast<size_t>(i) * (n + 1) + static_cast<size_t>(j)]; }
  double block(int32_t a, int32_t b) { return p(b, b) - p(a, b) - p(b, a) + p(a, a); }
};

}  // namespace

void check_boundary_count(int32_t n, int32_t count, bool estimate_allowed) {
  if (count == kEstimate && estimate_allowed) return;
  if (count < 0 || count > n - 1)
    throw Error("segments",
                "asked for " + std::to_string(count) + " boundaries in a document of " + std::to_string(n) + " sentences (at most " +
                    std::to_string(std::max(0, n - 1)) + ")",
                count < 0 && !estimate_allowed ? "give the number of boundaries; this method cannot estimate it"
                                               : "ask for fewer segments than the document has sentences");
}

// ---- block comparison -------------------------------------------------------------------------

std::vector<double> gap_scores(const std::vector<double>& similarity, int32_t n, int32_t window) {
  check_matrix(similarity, n);
  if (window < 1)
    throw Error("block comparison", "window " + std::to_string(window) + " is not positive", "use a window of 1 or more sentences");
  std::vector<double> gaps(static_cast<size_t>(n - 1));
  for (int32_t g = 1; g < n; ++g) {
    const int32_t lo = std::max(0, g - window), hi = std::min(n, g + window);
    double sum = 0;
    for (int32_t a = lo; a < g; ++a)
      for (int32_t b = g; b < hi; ++b) sum += at(similarity, n, a, b);
    gaps[static_cast<size_t>(g - 1)] = sum / (static_cast<double>(g - lo) * static_cast<double>(hi - g));
  }
  return gaps;
}

std::vector<double> smooth_scores(const std::vector<double>& scores, int32_t radius) {
  if (radius < 0) throw Error("block comparison", "smoothing radius " + std::to_string(radius) + " is negative", "use 0 (none) or more");
  const auto m = static_cast<int64_t>(scores.size());
  std::vector<double> out(scores.size());
  for (int64_t j = 0; j < m; ++j) {
    const int64_t lo = std::max<int64_t>(0, j - radius), hi = std::min<int64_t>(m - 1, j + radius);
    double sum = 0;
    for (int64_t x = lo; x <= hi; ++x) sum += scores[static_cast<size_t>(x)];
    out[static_cast<size_t>(j)] = sum / static_cast<double>(hi - lo + 1);
  }
  return out;
}

std::vector<double> depth_scores(const std::vector<double>& s) {
  const size_t m = s.size();
  std::vector<double> depth(m);
  for (size_t g = 0; g < m; ++g) {
    size_t l = g, r = g;
    while (l > 0 && s[l - 1] >= s[l]) --l;
    while (r + 1 < m && s[r + 1] >= s[r]) ++r;
    depth[g] = (s[l] - s[g]) + (s[r] - s[g]);
  }
  return depth;
}

Boundaries pick_by_depth(const std::vector<double>& d, int32_t count, double cutoff_stds, int32_t min_segment) {
  const auto m = static_cast<int32_t>(d.size()), n = m + 1;
  check_boundary_count(n, count, true);
  if (min_segment < 1)
    throw Error("block comparison", "min_segment " + std::to_string(min_segment) + " is not positive", "use 1 or more sentences");
  std::vector<int32_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return d[a] > d[b]; });
  auto peak = [&](int32_t j) { return d[j] > 0 && (j == 0 || d[j] > d[j - 1]) && (j == m - 1 || d[j] >= d[j + 1]); };
  Boundaries out;
  if (count == kEstimate) {
    if (m == 0) return out;
    const double mean = std::accumulate(d.begin(), d.end(), 0.0) / m;
    double var = 0;
    for (const double x : d) var += (x - mean) * (x - mean);
    const double cutoff = mean - cutoff_stds * std::sqrt(var / m);
    for (const int32_t j : order)
      if (peak(j) && d[j] > cutoff && separated(j + 1, n, out, min_segment)) out.push_back(j + 1);
  } else {
    std::vector<char> taken(static_cast<size_t>(m), 0);
    for (int pass = 0; pass < 3; ++pass)
      for (const int32_t j : order) {
        if (static_cast<int32_t>(out.size()) == count) break;
        if (taken[j] || (pass == 0 && !peak(j)) || (pass < 2 && !separated(j + 1, n, out, min_segment))) continue;
        taken[j] = 1;
        out.push_back(j + 1);
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Boundaries boundaries_from_gap_scores(const std::vector<double>& gaps, const BlockOptions& o, int32_t count) {
  return pick_by_depth(depth_scores(smooth_scores(gaps, o.smoothing_radius)), count, o.cutoff_stds, o.min_segment);
}

Boundaries block_comparison(const std::vector<double>& similarity, int32_t n, const BlockOptions& o, int32_t count) {
  check_boundary_count(n, count, true);
  return boundaries_from_gap_scores(gap_scores(similarity, n, o.window), o, count);
}

// ---- C99 ----------------------------------------------------------------------------------------

std::vector<double> rank_matrix(const std::vector<double>& similarity, int32_t n, int32_t mask) {
  check_matrix(similarity, n);
  if (mask < 1 || mask % 2 == 0)
    throw Error("C99", "rank mask " + std::to_string(mask) + " is not a positive odd number", "use an odd size such as 11 (Choi's)");
  const int32_t h = mask / 2;
  std::vector<double> rank(similarity.size(), 0.0);
  // Rows are independent (each cell's rank reads the similarity only): the threads take rows of a
  // long text (`segment --text` of thousands of sentences: n^2 mask^2 comparisons), the same
  // arithmetic per cell whatever the thread count; a benchmark document's few dozen rows stay on one.
#pragma omp parallel for schedule(static) if (int64_t(n) * n * mask * mask > (int64_t(1) << 24))
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = 0; j < n; ++j) {
      const double v = at(similarity, n, i, j);
      int64_t lower = 0, seen = 0;
      for (int32_t a = std::max(0, i - h); a <= std::min(n - 1, i + h); ++a)
        for (int32_t b = std::max(0, j - h); b <= std::min(n - 1, j + h); ++b) {
          if (a == i && b == j) continue;
          ++seen;
          lower += at(similarity, n, a, b) < v;
        }
      rank[static_cast<size_t>(i) * n + j] = seen == 0 ? 0.0 : static_cast<double>(lower) / static_cast<double>(seen);
    }
  return rank;
}

DivisiveSplits divisive_clustering(const std::vector<double>& rank, int32_t n, int32_t max_splits) {
  check_matrix(rank, n);
  BlockSums sums(rank, n);
  std::vector<int32_t> cuts{0, n};  // segment starts, then n
  double inside = sums.block(0, n), area = static_cast<double>(n) * n;
  DivisiveSplits out;
  out.density.push_back(inside / area);
  auto sq = [](int32_t x) { return static_cast<double>(x) * x; };
  for (int32_t step = 0; step < max_splits; ++step) {
    double best = -std::numeric_limits<double>::infinity(), best_inside = 0, best_area = 0;
    int32_t best_m = -1;
    for (size_t s = 0; s + 1 < cuts.size(); ++s) {
      const int32_t a = cuts[s], b = cuts[s + 1];
      const double rest_inside = inside - sums.block(a, b), rest_area = area - sq(b - a);
      for (int32_t m = a + 1; m < b; ++m) {
        const double in = rest_inside + sums.block(a, m) + sums.block(m, b);
        const double ar = rest_area + sq(m - a) + sq(b - m);
        if (in / ar > best) {
          best = in / ar;
          best_m = m;
          best_inside = in;
          best_area = ar;
        }
      }
    }
    if (best_m < 0) break;  // every segment is a single sentence
    cuts.insert(std::upper_bound(cuts.begin(), cuts.end(), best_m), best_m);
    inside = best_inside;
    area = best_area;
    out.order.push_back(best_m);
    out.density.push_back(best);
  }
  return out;
}

int32_t choi_boundary_count(const std::vector<double>& density, double c) {
  if (density.size() < 2) return 0;
  std::vector<double> gain(density.size() - 1);
  for (size_t j = 1; j < density.size(); ++j) gain[j - 1] = density[j] - density[j - 1];
  const double mean = std::accumulate(gain.begin(), gain.end(), 0.0) / static_cast<double>(gain.size());
  double var = 0;
  for (const double g : gain) var += (g - mean) * (g - mean);
  const double threshold = mean + c * std::sqrt(var / static_cast<double>(gain.size()));
  int32_t count = 0;
  for (size_t j = 0; j < gain.size(); ++j)
    if (gain[j] > threshold) count = static_cast<int32_t>(j + 1);
  return count;
}

Boundaries c99(const std::vector<double>& similarity, int32_t n, const C99Options& o, int32_t count) {
  check_boundary_count(n, count, true);
  const auto splits = divisive_clustering(rank_matrix(similarity, n, o.rank_mask), n, count == kEstimate ? n - 1 : count);
  const int32_t keep = count == kEstimate ? choi_boundary_count(splits.density, o.threshold_c) : count;
  Boundaries out(splits.order.begin(), splits.order.begin() + keep);
  std::sort(out.begin(), out.end());
  return out;
}

// ---- baselines ------------------------------------------------------------------------------------

Boundaries random_boundaries(int32_t n, int32_t count, uint64_t seed) {
  check_boundary_count(n, count, false);
  Boundaries out;
  for (const int64_t g : draw_candidates(n - 1, count, seed)) out.push_back(static_cast<int32_t>(g + 1));
  return out;
}

Boundaries evenly_spaced_boundaries(int32_t n, int32_t count) {
  check_boundary_count(n, count, false);
  Boundaries out;
  const int64_t parts = int64_t(count) + 1;
  for (int64_t j = 1; j <= count; ++j) out.push_back(static_cast<int32_t>((2 * j * n + parts) / (2 * parts)));
  return out;
}

}  // namespace ctxsim::segment
