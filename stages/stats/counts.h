// What readers show of a rule's statistics: the counts of one head or one layer (every per-rule
// [L, H] statistic of the schema by its Stat), the chance baseline (every scalar baseline by its
// Stat), and a rule's statistics as stored. Plain structs over the accumulator's schema, next to
// it, so that a statistic is declared in this folder only; the formulas and the views that show
// them are stages/stats/metrics.h's table. No LibTorch, MPI or HDF5 here.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stages/stats/accumulator.h"

namespace ctxsim {

// Distance classes the tables and CSVs report: d <= 5 (short range) and d >= 32 (long range).
constexpr int64_t kShortRange = 5, kLongRange = 32;

// Counts of one head, or summed over the heads of a layer: every per-rule [L, H] statistic of the
// schema (kStatSchema) by its Stat, fixed-point ones in their units (attention mass), and the
// distance histogram. Ratios are 0 when undefined. The formulas readers show are the rows of
// metrics.h.
struct Counts {
  std::array<double, kStatCount> value{};
  int64_t heads = 0;
  std::vector<double> distance;  // [T] selected pairs by distance j - i

  double operator[](Stat s) const { return value[size_t(s)]; }
  double& operator[](Stat s) { return value[size_t(s)]; }
  double pairs() const { return (*this)[Stat::HighPairs]; }
  double mean_distance() const;
  int64_t median_distance() const;
  double short_range() const;  // share of pairs with d <= kShortRange
  double long_range() const;   // share with d >= kLongRange
  static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
};

// /stats/baseline: what a rule picking pairs at random would give. Every scalar baseline of the
// schema by its Stat (as Counts), the distance distribution, and the separator masses.
struct Baseline {
  std::array<double, kStatCount> value{};
  std::vector<int64_t> distance_all;  // [T]
  // Attention on each separator token: the tokens (the axis S) and [L, H, S] in fixed point.
  // Empty in stores written before ctxsim measured it.
  std::vector<std::string> separator_tokens;
  std::vector<int64_t> separator_mass_by_token;
  int64_t separator_heads = 0;  // H of separator_mass_by_token

  double operator[](Stat s) const { return value[size_t(s)]; }
  int64_t samples() const { return int64_t((*this)[Stat::Samples]); }
  int64_t T() const { return int64_t(distance_all.size()); }
  // Mean attention mass per sample and head on separator token u, over the heads of a layer
  // (head = -1) or of one head.
  double separator_token_attention(int64_t layer, int64_t head, size_t u) const;
  double short_range_chance() const;
  double long_range_chance() const;
  // Mean attention mass on separators per sample and head.
  double separator_attention(const Counts& c) const {
    return Counts::ratio(c[Stat::SeparatorMass], (*this)[Stat::Samples] * double(c.heads));
  }
};

// /stats/<rule>: every per-rule statistic of the schema by its Stat, as stored (int64).
struct RuleStats {
  std::string name;
  int64_t L = 0, H = 0, T = 0, V = 0;
  std::array<std::vector<int64_t>, kStatCount> data;

  const std::vector<int64_t>& of(Stat s) const { return data[size_t(s)]; }
  Counts head(int64_t layer, int64_t head) const;
  Counts layer(int64_t layer) const;  // all heads of the layer
  // Mean number of distinct anchors across the layer's heads per sample.
  double distinct_anchors(int64_t layer, int64_t samples) const {
    return Counts::ratio(double(of(Stat::DistinctAnchors)[size_t(layer)]), double(samples));
  }
  // Token ids of a head's anchors by count (ties: smaller id), at most n with a count > 0.
  std::vector<int64_t> top_anchors(int64_t layer, int64_t head, int64_t n) const;
  int64_t anchor_count(int64_t layer, int64_t head, int64_t token) const {
    return of(Stat::AnchorCounts)[size_t((layer * H + head) * V + token)];
  }
};

}  // namespace ctxsim
