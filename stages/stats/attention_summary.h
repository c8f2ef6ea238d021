// What the statistics read of one (sample, head)'s attention map (SPEC §4.6-4.7, and the mass on
// the first position): its high-attention pairs per threshold and the mass the valid rows put on
// each separator token and on position 0. Built from the map's rows in order, all at once or in
// tiles of rows as a long-context forward hands them out, with the same result either way, so that
// no T x T map of a layer has to exist at once. No LibTorch here.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/stats/head_statistics.h"

namespace ctxsim {

class AttentionSummary {
 public:
  // Starts a new map of sample s with `betas` attention thresholds.
  void begin(const SampleFacts& s, const std::vector<double>& betas);
  // Rows [first, first + count) of the map, row-major with row stride T; rows >= n are skipped.
  // Call in increasing row order: the masses are summed row by row in that order.
  void add_rows(const SampleFacts& s, int64_t T, MatrixRef rows, int64_t first, int64_t count, const std::vector<double>& betas);
  // After the last rows: the pair lists sorted, each pair once. Checks every valid row came since
  // begin, and that the map was not finished before.
  void finish(const SampleFacts& s);

  // Valid pairs i < j with max(A_ij, A_ji) >= beta, packed (i << 16 | j), ascending.
  const std::vector<uint32_t>& high_pairs(size_t beta) const { return high_[beta]; }
  bool high(size_t beta, uint32_t pair) const;
  // round(mean over valid rows of the mass on separator token u, x 2^32); the first position's.
  int64_t separator_mass(size_t u, int64_t n) const;
  int64_t first_mass(int64_t n) const;

 private:
  std::vector<std::vector<uint32_t>> high_;  // [betas]
  std::vector<double> mass_;                 // [separator tokens + 1] sums over rows, position 0 last
  int64_t rows_ = -1;                        // valid rows added since begin; -1: not begun, or finished
};

}  // namespace ctxsim
