// The aggregate statistics of a finished store, read back with their shapes checked, and the
// derived rates (SPEC: "every percentage next to its chance baseline") defined once for
// `summary`, `collect` and `report`.
#pragma once
#include <hdf5.h>

#include "pipeline/store/hdf5.h"
#include "stages/stats/accumulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

// The fix of every "damaged store" error.
inline constexpr const char* kDamagedStoreFix = h5::kNotAStoreFix;

// Distance classes the tables and CSVs report: d <= 5 (short range) and d >= 32 (long range).
constexpr int64_t kShortRange = 5, kLongRange = 32;

// Counts of one head, or summed over the heads of a layer: every per-rule [L, H] statistic of the
// schema (kStatSchema) by its Stat, fixed-point ones in their units (attention mass), and the
// distance histogram. Ratios are 0 when undefined. The formulas readers show are pipeline/store/
// metrics.h's rows.
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

// The spelling of token `id` in a store's vocabulary; "?" for an id past its lines (a padded
// vocab_size) or negative.
inline const std::string& token_text(const std::vector<std::string>& vocab, int64_t id) {
  static const std::string unknown = "?";
  return id >= 0 && id < int64_t(vocab.size()) ? vocab[size_t(id)] : unknown;
}

// A store's /stats read back into the accumulator it was written from (kStatSchema: every
// field of every rule), each dataset's type and shape checked against the store's own R, L, H,
// T, V and S before anything is allocated, then its SHA-256 against the stats_sha256 written
// with `complete` (schema 2) and SPEC §5's invariants: a changed bit is a damaged store. Throws
// ctxsim::Error naming `store` and the dataset. vocab_tokens: the /vocab lines, which V covers.
struct StoreStats {
  std::vector<std::string> rules;             // /stats rules, in order (the accumulator's R)
  std::vector<std::string> separator_tokens;  // the axis S of separator_mass_by_token
  Accumulator acc;
  bool has_separator_tokens = false;                 // false in stores written before it was measured
  size_t rule_index(const std::string& rule) const;  // throws naming the rules there are
};
StoreStats read_store_stats(hid_t file, const std::string& store, int64_t vocab_tokens);
Baseline baseline_of(const StoreStats& stats);

// A complete store (run or segmentation) put through every check its readers make (shapes,
// digests, invariants, value ranges); returns what it holds in a few words ("run store: 2000
// samples, 12 layers x 12 heads, 1 rule"). Throws like the readers, naming the file.
std::string verify_complete_store(const std::string& path);
RuleStats rule_stats_of(const StoreStats& stats, size_t rule);

// A whole dataset after checking that it exists and has `shape` (-1: any extent); `dims_out`
// receives the actual extents.
template <class T>
std::vector<T> read_checked(hid_t file, const std::string& store, const std::string& path, hid_t mem_type,
                            const std::vector<long long>& shape, std::vector<hsize_t>* dims_out = nullptr);

}  // namespace ctxsim
