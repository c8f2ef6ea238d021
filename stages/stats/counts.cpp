#include "stages/stats/counts.h"

#include <algorithm>
#include <numeric>

namespace ctxsim {
namespace {

double sum_range(const std::vector<double>& v, int64_t lo, int64_t hi) {
  double s = 0;
  for (int64_t d = std::max<int64_t>(0, lo); d < std::min<int64_t>(hi, int64_t(v.size())); ++d) s += v[size_t(d)];
  return s;
}

}  // namespace

double Counts::mean_distance() const {
  double m = 0;
  for (size_t d = 0; d < distance.size(); ++d) m += double(d) * distance[d];
  return ratio(m, pairs());
}

int64_t Counts::median_distance() const {
  double cum = 0;
  for (size_t d = 0; d < distance.size(); ++d) {
    cum += distance[d];
    if (cum * 2 >= pairs()) return int64_t(d);
  }
  return 0;
}

double Counts::short_range() const { return ratio(sum_range(distance, 0, kShortRange + 1), pairs()); }
double Counts::long_range() const { return ratio(sum_range(distance, kLongRange, int64_t(distance.size())), pairs()); }

double Baseline::short_range_chance() const {
  const std::vector<double> d(distance_all.begin(), distance_all.end());
  return Counts::ratio(sum_range(d, 0, kShortRange + 1), (*this)[Stat::ValidPairs]);
}

double Baseline::long_range_chance() const {
  const std::vector<double> d(distance_all.begin(), distance_all.end());
  return Counts::ratio(sum_range(d, kLongRange, T()), (*this)[Stat::ValidPairs]);
}

namespace {

// The per-rule [L, H] statistics of the schema: what a Counts holds.
const std::vector<const StatInfo*>& per_head_stats() {
  static const std::vector<const StatInfo*> list = [] {
    std::vector<const StatInfo*> v;
    for (const auto& s : kStatSchema)
      if (s.per_rule && s.shape == StatShape::LH) v.push_back(&s);
    return v;
  }();
  return list;
}

}  // namespace

Counts RuleStats::head(int64_t l, int64_t h) const {
  Counts c;
  const size_t i = size_t(l * H + h);
  for (const StatInfo* s : per_head_stats()) c[s->id] = double(of(s->id)[i]) / (s->fixed_point ? kFixedPointScale : 1.0);
  c.heads = 1;
  const auto& hist = of(Stat::DistanceHist);
  c.distance.assign(hist.begin() + long(i * size_t(T)), hist.begin() + long((i + 1) * size_t(T)));
  return c;
}

Counts RuleStats::layer(int64_t l) const {
  Counts c;
  c.distance.assign(size_t(T), 0.0);
  for (int64_t h = 0; h < H; ++h) {
    const Counts x = head(l, h);
    for (const StatInfo* s : per_head_stats()) c[s->id] += x[s->id];
    c.heads += 1;
    for (int64_t d = 0; d < T; ++d) c.distance[size_t(d)] += x.distance[size_t(d)];
  }
  c[Stat::DistinctAnchors] = double(of(Stat::DistinctAnchors)[size_t(l)]);  // a layer's, across its heads
  return c;
}

std::vector<int64_t> RuleStats::top_anchors(int64_t l, int64_t h, int64_t n) const {
  const int64_t* row = &of(Stat::AnchorCounts)[size_t((l * H + h) * V)];
  std::vector<int64_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  n = std::min(n, V);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                    [&](int64_t a, int64_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  ids.resize(size_t(n));
  while (!ids.empty() && row[ids.back()] <= 0) ids.pop_back();
  return ids;
}

double Baseline::separator_token_attention(int64_t layer, int64_t head, size_t u) const {
  const int64_t S = int64_t(separator_tokens.size()), H = separator_heads;
  double sum = 0;
  for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h)
    sum += double(separator_mass_by_token[size_t((layer * H + h) * S + int64_t(u))]) / kFixedPointScale;
  return Counts::ratio(sum, (*this)[Stat::Samples] * double(head < 0 ? H : 1));
}

}  // namespace ctxsim
