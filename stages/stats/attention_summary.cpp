#include "stages/stats/attention_summary.h"

#include <algorithm>
#include <cmath>

#include "stages/base/error.h"
#include "stages/stats/accumulator.h"
#include "stages/stats/head_rows.h"

namespace ctxsim {

using namespace head_rows;

namespace {

// A row's entries >= beta: a softmax row holds at most 1/beta of them, so a counting pass finds
// the rows that have any and a scan of those the entries; each as the pair (min, max).
template <class A>
void high_entries(const A* row, int64_t i, int64_t n, typename Scalar<A>::type beta, std::vector<uint32_t>& out) {
  if (count_at_least(row, n, beta) == 0) return;
  for (int64_t j = 0; j < n; ++j)
    if (j != i && Scalar<A>::get(row[j]) >= beta) out.push_back(j > i ? pack(i, j) : pack(j, i));
}

template <class A>
double row_mass(const A* row, const std::vector<int32_t>& positions) {
  double m = 0;
  for (int32_t p : positions) m += double(Scalar<A>::get(row[p]));
  return m;
}

int64_t fixed_mean(double total, int64_t n) {
  return n == 0 ? 0 : static_cast<int64_t>(std::nearbyint(total / double(n) * kFixedPointScale));
}

}  // namespace

void AttentionSummary::begin(const SampleFacts& s, const std::vector<double>& betas) {
  high_.resize(betas.size());
  for (auto& h : high_) h.clear();
  mass_.assign(s.separator_positions.size() + 1, 0.0);
  rows_ = 0;
}

void AttentionSummary::add_rows(const SampleFacts& s, int64_t T, MatrixRef rows, int64_t first, int64_t count,
                                const std::vector<double>& betas) {
  static const std::vector<int32_t> first_position = {0};
  const auto with = [&](const auto* a) {
    using A = std::remove_const_t<std::remove_pointer_t<decltype(a)>>;
    using AF = typename Scalar<A>::type;
    for (int64_t i = first; i < std::min(first + count, s.n); ++i) {
      const A* row = a + (i - first) * T;
      for (size_t b = 0; b < betas.size(); ++b) high_entries(row, i, s.n, ceil_to<AF>(betas[b]), high_[b]);
      for (size_t u = 0; u < s.separator_positions.size(); ++u) mass_[u] += row_mass(row, s.separator_positions[u]);
      mass_.back() += row_mass(row, first_position);
      ++rows_;
    }
  };
  switch (rows.type) {
    case ValueType::F32: with(static_cast<const float*>(rows.data)); break;
    case ValueType::F64: with(static_cast<const double*>(rows.data)); break;
    case ValueType::BF16: with(static_cast<const uint16_t*>(rows.data)); break;
  }
}

void AttentionSummary::finish(const SampleFacts& s) {
  CTXSIM_CHECK(rows_ == s.n, "attention summary: rows missing or repeated, or the last layer's map again");
  rows_ = -1;  // a map is finished once: a layer whose rows never came fails above, not with stale counts
  for (auto& h : high_) {
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
  }
}

bool AttentionSummary::high(size_t beta, uint32_t pair) const { return std::binary_search(high_[beta].begin(), high_[beta].end(), pair); }

int64_t AttentionSummary::separator_mass(size_t u, int64_t n) const { return fixed_mean(mass_[u], n); }

int64_t AttentionSummary::first_mass(int64_t n) const { return fixed_mean(mass_.back(), n); }

}  // namespace ctxsim
