// Bootstrap intervals of the rates and lifts readers show (SPEC §5.1): a store keeps each work
// unit's partial sums (/units), so that readers resample whole units with replacement, recompute
// every metric of metrics.h that is a share or a lift from the resampled sums (the chance
// baseline resampled with them), and report the percentile interval. The units are fixed by the
// config (runtime.unit_size), never by the rank count, so the interval is the same on any number
// of ranks; a unit is a block of samples, which keeps what samples share inside it. No LibTorch,
// MPI or HDF5 here.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/stats/counts.h"
#include "stages/stats/metrics.h"

namespace ctxsim {

inline constexpr int kBootstrapReplicates = 1000;
inline constexpr uint64_t kBootstrapSeed = 20260514;  // SPEC §5.1
inline constexpr double kIntervalLevel = 0.95;

// One rule's partial sums per work unit: a RuleStats without anchor counts (V = 0) and the
// baseline of each unit.
struct UnitSums {
  std::vector<RuleStats> stats;
  std::vector<Baseline> base;
  size_t size() const { return stats.size(); }
};

struct Interval {
  double lo = 0, hi = 0;  // in the metric's own units (a share as a fraction, not a percentage); NaN: none (a mean over no count)
};

// The intervals of every metric that has one (Metric::interval), per layer and per head.
struct Intervals {
  int64_t units = 0;
  int replicates = 0;
  double level = kIntervalLevel;
  int L = 0, H = 0;
  std::vector<std::vector<Interval>> layer, head;  // [metric index in metrics()][l] and [l * H + h]; empty: no interval
  bool empty() const { return units == 0; }
  const Interval* of(const Metric& m, int layer_index, int head_index = -1) const;
};

// Resamples the units `replicates` times (SplitMix64(seed), unit = next() mod U) and takes each
// metric's lower and upper (1 - level) / 2 percentiles over the replicates: the sorted values'
// elements floor(B (1 - level) / 2) and ceil(B (1 + level) / 2) - 1. Empty when there are no units.
Intervals bootstrap_intervals(const UnitSums& units, int replicates = kBootstrapReplicates, uint64_t seed = kBootstrapSeed,
                              double level = kIntervalLevel);

// "[21.4, 22.3]" as readers print an interval of metric m (a share in percent), `digits` decimals.
std::string interval_text(const Metric& m, const Interval& i, int digits);

}  // namespace ctxsim
