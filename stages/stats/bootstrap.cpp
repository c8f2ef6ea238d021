#include "stages/stats/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stages/base/error.h"
#include "stages/base/random.h"

namespace ctxsim {
namespace {

// A unit's sums with its distances folded to what the intervals need: d < kLongRange as they are
// and every d >= kLongRange in one last bin, so that short_range, long_range and their chances
// are exact while a replicate adds kLongRange + 1 bins rather than T (mean and median distance
// have no interval).
RuleStats folded(const RuleStats& s) {
  if (s.T <= kLongRange + 1) return s;
  RuleStats f = s;
  f.T = kLongRange + 1;
  const auto& hist = s.of(Stat::DistanceHist);
  std::vector<int64_t>& out = f.data[size_t(Stat::DistanceHist)];
  out.assign(size_t(s.L * s.H * f.T), 0);
  for (int64_t k = 0; k < s.L * s.H; ++k)
    for (int64_t d = 0; d < s.T; ++d) out[size_t(k * f.T + std::min<int64_t>(d, kLongRange))] += hist[size_t(k * s.T + d)];
  return f;
}

Baseline folded(const Baseline& b) {
  if (b.T() <= kLongRange + 1) return b;
  Baseline f = b;
  f.distance_all.assign(size_t(kLongRange + 1), 0);
  for (int64_t d = 0; d < b.T(); ++d) f.distance_all[size_t(std::min<int64_t>(d, kLongRange))] += b.distance_all[size_t(d)];
  return f;
}

}  // namespace

const Interval* Intervals::of(const Metric& m, int l, int h) const {
  if (empty()) return nullptr;
  const auto& table = metrics();
  const size_t k = size_t(&m - table.data());
  if (k >= table.size()) return nullptr;
  const auto& v = h < 0 ? layer[k] : head[k];
  const size_t i = h < 0 ? size_t(l) : size_t(l * H + h);
  return i < v.size() ? &v[i] : nullptr;
}

Intervals bootstrap_intervals(const UnitSums& units, int replicates, uint64_t seed, double level) {
  Intervals out;
  const size_t U = units.size();
  if (U == 0 || replicates <= 0) return out;
  CTXSIM_CHECK(units.base.size() == U, "bootstrap: a baseline per unit");
  std::vector<RuleStats> stats;
  std::vector<Baseline> base;
  for (size_t u = 0; u < U; ++u) stats.push_back(folded(units.stats[u])), base.push_back(folded(units.base[u]));
  const int L = int(stats[0].L), H = int(stats[0].H);
  out.units = int64_t(U), out.replicates = replicates, out.level = level, out.L = L, out.H = H;
  const auto& table = metrics();
  std::vector<size_t> with;  // the metrics that have an interval
  for (size_t k = 0; k < table.size(); ++k)
    if (table[k].interval) with.push_back(k);
  // values[metric][cell][replicate], cells: the L layers, then the L x H heads
  const size_t cells = size_t(L + L * H);
  std::vector<std::vector<std::vector<double>>> values(with.size(), std::vector<std::vector<double>>(cells));
  // The sums of the units, each `weight[u]` times (a replicate: as often as it was drawn).
  const auto sums = [&](const std::vector<int64_t>& weight) {
    RuleStats s = stats[0];
    Baseline b = base[0];
    for (auto& d : s.data) std::fill(d.begin(), d.end(), 0);
    b.value.fill(0);
    std::fill(b.distance_all.begin(), b.distance_all.end(), 0);
    for (size_t u = 0; u < U; ++u) {
      const int64_t w = weight[u];
      if (w == 0) continue;
      for (size_t f = 0; f < s.data.size(); ++f)
        for (size_t i = 0; i < s.data[f].size(); ++i) s.data[f][i] += w * stats[u].data[f][i];
      for (size_t f = 0; f < b.value.size(); ++f) b.value[f] += double(w) * base[u].value[f];
      for (size_t d = 0; d < b.distance_all.size(); ++d) b.distance_all[d] += w * base[u].distance_all[d];
    }
    return std::make_pair(std::move(s), std::move(b));
  };
  SplitMix64 rng(seed);
  std::vector<int64_t> weight(U);
  for (int r = 0; r < replicates; ++r) {
    std::fill(weight.begin(), weight.end(), 0);
    for (size_t k = 0; k < U; ++k) ++weight[size_t(rng.next() % U)];
    const auto [s, b] = sums(weight);
    for (int l = 0; l < L; ++l) {
      const Counts c = s.layer(l);
      for (size_t m = 0; m < with.size(); ++m) values[m][size_t(l)].push_back(table[with[m]].value(c, b));
      for (int h = 0; h < H; ++h) {
        const Counts ch = s.head(l, h);
        for (size_t m = 0; m < with.size(); ++m) values[m][size_t(L + l * H + h)].push_back(table[with[m]].value(ch, b));
      }
    }
  }
  // A mean over no count (a store that predates the statistic) has no interval: NaN, shown "-".
  // (a pair, not a structured binding: C++17 lambdas cannot capture those)
  const std::pair<RuleStats, Baseline> whole = sums(std::vector<int64_t>(U, 1));
  const RuleStats& all = whole.first;
  const Baseline& all_base = whole.second;
  const auto undefined = [&](const Metric& m, size_t cell) {
    const Counts c = cell < size_t(L) ? all.layer(int64_t(cell)) : all.head(int64_t(cell - L) / H, int64_t(cell - L) % H);
    return m.count && m.count(c, all_base) <= 0;
  };
  const size_t B = size_t(replicates);
  const size_t lo = size_t(std::floor(double(B) * (1 - level) / 2)), hi = size_t(std::ceil(double(B) * (1 + level) / 2)) - 1;
  out.layer.assign(table.size(), {});
  out.head.assign(table.size(), {});
  for (size_t m = 0; m < with.size(); ++m) {
    auto& by_layer = out.layer[with[m]];
    auto& by_head = out.head[with[m]];
    for (size_t cell = 0; cell < cells; ++cell) {
      std::vector<double>& v = values[m][cell];
      std::sort(v.begin(), v.end());
      const double nan = std::numeric_limits<double>::quiet_NaN();
      (cell < size_t(L) ? by_layer : by_head)
          .push_back(undefined(table[with[m]], cell) ? Interval{nan, nan} : Interval{v[std::min(lo, B - 1)], v[std::min(hi, B - 1)]});
    }
  }
  return out;
}

std::string interval_text(const Metric& m, const Interval& i, int digits) {
  if (std::isnan(i.lo)) return "  -  ";
  const double k = m.share() ? 100.0 : 1.0;
  return "[" + fixed(k * i.lo, digits) + ", " + fixed(k * i.hi, digits) + "]";
}

}  // namespace ctxsim
