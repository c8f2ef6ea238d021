#include "stages/prune/prune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "stages/base/error.h"
#include "stages/base/random.h"

namespace ctxsim::prune {

int32_t mask_targets(const int32_t* ids, int32_t T, int32_t n_valid, const std::vector<int32_t>& specials, int32_t mask_id, uint64_t seed,
                     uint64_t index, int32_t* input, int32_t* labels) {
  CTXSIM_CHECK(n_valid >= 0 && n_valid <= T, "mask_targets: n_valid outside 0…T");
  std::copy(ids, ids + T, input);
  std::fill(labels, labels + T, -1);
  const auto special = [&](int32_t id) { return std::find(specials.begin(), specials.end(), id) != specials.end(); };
  SplitMix64 rng(seed + index);
  int32_t chosen = 0, first = -1;
  for (int32_t t = 0; t < n_valid; ++t) {
    if (special(ids[t])) continue;
    if (first < 0) first = t;
    if (rng.next() % 10000 < 1500) labels[t] = ids[t], input[t] = mask_id, ++chosen;
  }
  if (chosen == 0 && first >= 0) labels[first] = ids[first], input[first] = mask_id, chosen = 1;
  return chosen;
}

int32_t next_token_targets(const int32_t* ids, int32_t T, int32_t n_valid, int32_t* input, int32_t* labels) {
  CTXSIM_CHECK(n_valid >= 0 && n_valid <= T, "next_token_targets: n_valid outside 0…T");
  std::copy(ids, ids + T, input);
  std::fill(labels, labels + T, -1);
  for (int32_t t = 0; t + 1 < n_valid; ++t) labels[t] = ids[t + 1];
  return std::max(0, n_valid - 1);
}

std::vector<double> curve_fractions() {
  std::vector<double> f;
  for (int k = 0; k < 10; ++k) f.push_back(k / 10.0);
  return f;
}

int64_t removed_heads(double p, int64_t n) { return int64_t(std::floor(p * double(n) + 0.5)); }

std::vector<int64_t> order_by(const std::vector<double>& values, bool ascending) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  // A NaN (an undefined score) sorts last either way, so the order is a strict weak one.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double x = values[size_t(a)], y = values[size_t(b)];
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return ascending ? x < y : x > y;
  });
  return order;
}

std::vector<int64_t> random_order(int64_t n, uint64_t seed) {
  std::vector<int64_t> a(size_t(std::max<int64_t>(n, 0)));
  std::iota(a.begin(), a.end(), 0);
  SplitMix64 rng(seed);
  for (int64_t i = n - 1; i >= 1; --i) std::swap(a[size_t(i)], a[size_t(rng.next() % uint64_t(i + 1))]);
  return a;
}

const std::vector<ScoreRow>& scores() {
  static const std::vector<ScoreRow> rows = {
      {"noise", "noise_share", false,
       "share of a head's selected pairs that are neither same-sentence, same-token nor on its anchor (noisiest first)"},
      {"anchor_share", "anchor_share", true, "share of a head's selected pairs on its sample's anchor token (least anchored first)"},
      {"same_sentence_lift", "same_sentence_lift", true, "a head's same-sentence rate over chance (least sentence-bound first)"},
      {"repetition_lift", "repetition_lift", true, "a head's repeated-token rate over chance (least repetition-bound first)"},
      {"effective_rank", "effective_rank", true, "a head's effective rank, the participation ratio of its outputs (lowest first)"},
      {"effective_rank_high", "effective_rank", false, "a head's effective rank (highest first)"},
      {"first_token_mass", "first_token_mass", false, "a head's attention on the first position, the attention sink (the most first)"},
  };
  return rows;
}

const ScoreRow* score_row(const std::string& name) {
  for (const auto& r : scores())
    if (name == r.name) return &r;
  return nullptr;
}

std::vector<double> gates_without(const std::vector<int64_t>& order, int64_t k, int64_t n) {
  CTXSIM_CHECK(int64_t(order.size()) == n && k >= 0 && k <= n, "gates_without: an order of every head, k within it");
  std::vector<double> g(size_t(n), 1.0);
  for (int64_t i = 0; i < k; ++i) g[size_t(order[size_t(i)])] = 0.0;
  return g;
}

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  const std::vector<int64_t> o = order_by(v, true);
  std::vector<double> r(v.size());
  for (size_t i = 0; i < o.size();) {
    size_t j = i;
    while (j + 1 < o.size() && v[size_t(o[j + 1])] == v[size_t(o[i])]) ++j;
    for (size_t k = i; k <= j; ++k) r[size_t(o[k])] = (double(i) + double(j)) / 2.0;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  CTXSIM_CHECK(a.size() == b.size(), "spearman: two series of one length");
  const size_t n = a.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / double(n), mb = std::accumulate(rb.begin(), rb.end(), 0.0) / double(n);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) sab += (ra[i] - ma) * (rb[i] - mb), saa += (ra[i] - ma) * (ra[i] - ma), sbb += (rb[i] - mb) * (rb[i] - mb);
  if (saa == 0 || sbb == 0) return std::numeric_limits<double>::quiet_NaN();
  return sab / std::sqrt(saa * sbb);
}

Band random_band(const std::vector<double>& random, int64_t fractions, int64_t f) {
  const int64_t R = int64_t(random.size()) / std::max<int64_t>(fractions, 1);
  Band b;
  for (int64_t k = 0; k < R; ++k) b.mean += random[size_t(k * fractions + f)] / double(R);
  for (int64_t k = 0; k < R; ++k) b.sd += std::pow(random[size_t(k * fractions + f)] - b.mean, 2) / double(std::max<int64_t>(R - 1, 1));
  b.sd = std::sqrt(b.sd);
  return b;
}

}  // namespace ctxsim::prune
