// The row loops of the statistics kernels (stages/stats/head_statistics.cpp): one row segment of a
// [T, T] matrix at a time, without aliasing, vectorisable. They are compiled for x86-64-v4
// (AVX-512), v3 (AVX2) and the baseline, and the level in force (stages/base/cpu_features.h: the
// CPU's best, or lower under CTXSIM_ISA) picks one set, so one binary serves every node of a
// cluster; head_rows.cpp is compiled without fused multiply-add contraction, so every level gives
// the same bits. No LibTorch here.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "stages/base/cpu_features.h"

namespace ctxsim::head_rows {

inline float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The element types as stored and as compared: bfloat16 compares as float (exact).
template <class S>
struct Scalar {
  using type = S;
  static type get(S v) { return v; }
};
template <>
struct Scalar<uint16_t> {
  using type = float;
  static float get(uint16_t v) { return bf16_value(v); }
};

// The smallest F that is >= t, so that x >= it in F is double(x) >= t (SPEC §3: thresholds are
// compared in double) without widening every x.
template <class F>
F ceil_to(double t) {
  if constexpr (std::is_same_v<F, double>) {
    return t;
  } else {
    constexpr double kMax = double(std::numeric_limits<F>::max());
    if (std::isnan(t)) return std::numeric_limits<F>::quiet_NaN();
    if (t > kMax) return std::numeric_limits<F>::infinity();
    if (t <= -kMax) return t == -std::numeric_limits<double>::infinity() ? -std::numeric_limits<F>::infinity() : F(-kMax);
    F f = static_cast<F>(t);
    if (double(f) < t) f = std::nextafter(f, std::numeric_limits<F>::infinity());
    return f;
  }
}

// Rows of C padded to whole 64-byte vectors.
template <class F>
int64_t similarity_stride(int64_t T) {
  constexpr int64_t V = 64 / sizeof(F);
  return (T + V - 1) / V * V;
}

inline uint32_t pack(int64_t i, int64_t j) { return uint32_t(i) << 16 | uint32_t(j); }

// Counts of one row of the dense selection: j runs over the row's segment i+1 … n-1.
struct RowCounts {
  int32_t selected = 0, eligible = 0, same_sentence = 0, same_token = 0;
};

// Calls fn(j) for the set positions j of a mask row, skipping zero words.
template <class Fn>
void for_each_set(const uint8_t* m, int64_t len, Fn&& fn) {
  int64_t j = 0;
  for (; j + 8 <= len; j += 8) {
    uint64_t w;
    std::memcpy(&w, m + j, 8);
    if (!w) continue;
    for (int64_t q = j; q < j + 8; ++q)
      if (m[q]) fn(q);
  }
  for (; j < len; ++j)
    if (m[j]) fn(j);
}

// rt [k, cs] = r [n, k] transposed, in tiles of 16 columns (one cache line of rt per k).
template <class F>
void transpose_into(const F* __restrict r, int64_t n, int64_t k, int64_t cs, F* __restrict rt) {
  for (int64_t j0 = 0; j0 < n; j0 += 16) {
    const int64_t j1 = std::min<int64_t>(n, j0 + 16);
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = j0; j < j1; ++j) rt[q * cs + j] = r[j * k + q];
  }
}

// ---- the primitives of every level (head_rows.cpp) ---------------------------------------------
// The level whose code the calls below run (chosen at the first call from isa_level()), and a
// switch for tests that compare the levels in one process (throws above the CPU's level).
IsaLevel level_in_use();
void use_level(IsaLevel level);
// ge, gt: pairs of the row with value >= b and > b.
void count_ge_gt(const float* row, int64_t len, float b, int32_t* ge, int32_t* gt);
void count_ge_gt(const double* row, int64_t len, double b, int32_t* ge, int32_t* gt);
// out[j] = row[j] > v (mask_gt) or >= v (mask_ge); returns the count.
int32_t mask_gt(const float* row, int64_t len, float v, uint8_t* out);
int32_t mask_gt(const double* row, int64_t len, double v, uint8_t* out);
int32_t mask_ge(const float* row, int64_t len, float v, uint8_t* out);
int32_t mask_ge(const double* row, int64_t len, double v, uint8_t* out);
// max(m, the row's values).
float row_max(const float* row, int64_t len, float m);
double row_max(const double* row, int64_t len, double m);
// Values of an attention row >= beta (bfloat16 as its bits).
int32_t count_at_least(const float* row, int64_t len, float beta);
int32_t count_at_least(const double* row, int64_t len, double beta);
int32_t count_at_least(const uint16_t* row, int64_t len, float beta);
// C_ij = l_i · r_j over the valid upper triangle (see head_rows.cpp).
void similarity_rows(const float* l, const float* rt, int64_t n, int64_t k, int64_t cs, float* c);
void similarity_rows(const double* l, const double* rt, int64_t n, int64_t k, int64_t cs, double* c);
// The counts of one row of a dense selection; j runs over the row's segment i+1 … n-1.
RowCounts mask_row_counts(const uint8_t* m, int64_t len, const int32_t* sent, const int32_t* tok, int32_t si, int32_t ti, int32_t* hist,
                          int32_t* deg);
// Pairs of one row that touch the anchor, and those no explanation covers (si, ti: values that
// match nothing when the row's token is outside a sentence or special).
void mask_row_noise(const uint8_t* m, int64_t len, const uint8_t* anchor, const int32_t* sent, const int32_t* tok, int32_t si, int32_t ti,
                    int32_t* touch, int32_t* noise);
int32_t mask_sum(const uint8_t* m, int64_t len);
// SPEC §9's trace Σ_i l_i · r_i and square Σ_i ((l_i · r_i)² + 2 Σ_{j>i} C_ij²) over n valid rows of
// k-vectors l and r (row-major) and C's upper triangle (row stride cs), in double, row after row.
void gram_sums(const float* c, int64_t cs, const float* l, const float* r, int64_t n, int64_t k, double* trace, double* square);
void gram_sums(const double* c, int64_t cs, const double* l, const double* r, int64_t n, int64_t k, double* trace, double* square);

}  // namespace ctxsim::head_rows
