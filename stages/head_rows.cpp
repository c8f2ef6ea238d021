#include "stages/head_rows.h"

// The row loops below are where the statistics spend their time. They are compiled for AVX-512,
// AVX2 and baseline x86-64, and the loader picks the best the CPU has (GCC function
// multi-versioning), so one binary serves every node of a cluster.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CTXSIM_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define CTXSIM_INLINE inline __attribute__((always_inline))
#else
#define CTXSIM_VECTOR_CLONES
#define CTXSIM_INLINE inline
#endif

namespace ctxsim::head_rows {

template <class F>
CTXSIM_INLINE void count_ge_gt_impl(const F* __restrict row, int64_t len, F b, int32_t* ge, int32_t* gt) {
  int32_t e = 0, g = 0;
  for (int64_t j = 0; j < len; ++j) {
    e += row[j] >= b;
    g += row[j] > b;
  }
  *ge = e;
  *gt = g;
}
CTXSIM_VECTOR_CLONES void count_ge_gt(const float* row, int64_t len, float b, int32_t* ge, int32_t* gt) { count_ge_gt_impl(row, len, b, ge, gt); }
CTXSIM_VECTOR_CLONES void count_ge_gt(const double* row, int64_t len, double b, int32_t* ge, int32_t* gt) { count_ge_gt_impl(row, len, b, ge, gt); }

// out[j] = row[j] > v (strict) or >= v; returns the count.
template <bool kStrict, class F>
CTXSIM_INLINE int32_t mask_row_impl(const F* __restrict row, int64_t len, F v, uint8_t* __restrict out) {
  int32_t count = 0;
  for (int64_t j = 0; j < len; ++j) {
    const uint8_t b = kStrict ? row[j] > v : row[j] >= v;
    out[j] = b;
    count += b;
  }
  return count;
}
CTXSIM_VECTOR_CLONES int32_t mask_gt(const float* row, int64_t len, float v, uint8_t* out) { return mask_row_impl<true>(row, len, v, out); }
CTXSIM_VECTOR_CLONES int32_t mask_gt(const double* row, int64_t len, double v, uint8_t* out) { return mask_row_impl<true>(row, len, v, out); }
CTXSIM_VECTOR_CLONES int32_t mask_ge(const float* row, int64_t len, float v, uint8_t* out) { return mask_row_impl<false>(row, len, v, out); }
CTXSIM_VECTOR_CLONES int32_t mask_ge(const double* row, int64_t len, double v, uint8_t* out) { return mask_row_impl<false>(row, len, v, out); }

// A max reduction does not auto-vectorise without fast-math; with GCC's vector extension
// the sixteen lanes are explicit (each clone lowers them to its ISA).
template <class F>
CTXSIM_INLINE F row_max_impl(const F* __restrict row, int64_t len, F m) {
  int64_t j = 0;
#if defined(__GNUC__)
  typedef F Lanes __attribute__((vector_size(16 * sizeof(F))));
  if (len >= 16) {
    Lanes acc;
    std::memcpy(&acc, row, sizeof acc);
    for (j = 16; j + 16 <= len; j += 16) {
      Lanes x;
      std::memcpy(&x, row + j, sizeof x);
      acc = x > acc ? x : acc;
    }
    for (int q = 0; q < 16; ++q) m = acc[q] > m ? acc[q] : m;
  }
#endif
  for (; j < len; ++j) m = row[j] > m ? row[j] : m;
  return m;
}
CTXSIM_VECTOR_CLONES float row_max(const float* row, int64_t len, float m) { return row_max_impl(row, len, m); }
CTXSIM_VECTOR_CLONES double row_max(const double* row, int64_t len, double m) { return row_max_impl(row, len, m); }

template <class A>
CTXSIM_INLINE int32_t count_at_least_impl(const A* __restrict row, int64_t len, typename Scalar<A>::type beta) {
  int32_t count = 0;
  for (int64_t j = 0; j < len; ++j) count += Scalar<A>::get(row[j]) >= beta;
  return count;
}
CTXSIM_VECTOR_CLONES int32_t count_at_least(const float* row, int64_t len, float beta) { return count_at_least_impl(row, len, beta); }
CTXSIM_VECTOR_CLONES int32_t count_at_least(const double* row, int64_t len, double beta) { return count_at_least_impl(row, len, beta); }
CTXSIM_VECTOR_CLONES int32_t count_at_least(const uint16_t* row, int64_t len, float beta) { return count_at_least_impl(row, len, beta); }

// C_ij = l_i · r_j for the valid upper triangle i < j < n into c (row stride cs): rt is r
// transposed, [k, cs] with zero columns from n on, so a row is a sum over k of l_ik times a
// contiguous row of rt. Whole 64-byte vectors from the one holding j = i + 1 to the one holding
// n - 1 (entries outside i < j < n are computed and never read); four rows at a time share each
// load of rt. The sum runs over k in order in every lane, with no fused multiply-add (this file
// is compiled with -ffp-contract=off), so every clone and thread count gives the same bits.
template <class F>
CTXSIM_INLINE void similarity_rows_impl(const F* __restrict l, const F* __restrict rt, int64_t n, int64_t k, int64_t cs,
                                        F* __restrict c) {
  constexpr int64_t V = 64 / sizeof(F);  // lanes of one 64-byte vector
  typedef F Vec __attribute__((vector_size(64)));
  const int64_t end = (n + V - 1) / V * V;
  int64_t i = 0;
  for (; i + 4 < n; i += 4) {  // rows i … i+3, all with pairs
    const F* l0 = l + i * k;
    int64_t j = (i + 1) / V * V;
    for (; j < end; j += 2 * V) {
      const bool two = j + V < end;
      Vec a[4][2] = {};
      for (int64_t q = 0; q < k; ++q) {
        const F* r = rt + q * cs + j;
        Vec x0, x1 = {};
        std::memcpy(&x0, r, sizeof x0);
        if (two) std::memcpy(&x1, r + V, sizeof x1);
        for (int64_t u = 0; u < 4; ++u) {
          const F w = l0[u * k + q];
          a[u][0] += w * x0;
          a[u][1] += w * x1;
        }
      }
      for (int64_t u = 0; u < 4; ++u) {
        std::memcpy(c + (i + u) * cs + j, &a[u][0], sizeof(Vec));
        if (two) std::memcpy(c + (i + u) * cs + j + V, &a[u][1], sizeof(Vec));
      }
    }
  }
  for (; i + 1 < n; ++i) {
    const F* li = l + i * k;
    for (int64_t j = (i + 1) / V * V; j < end; j += V) {
      Vec a = {};
      for (int64_t q = 0; q < k; ++q) {
        Vec x;
        std::memcpy(&x, rt + q * cs + j, sizeof x);
        a += li[q] * x;
      }
      std::memcpy(c + i * cs + j, &a, sizeof a);
    }
  }
}


CTXSIM_VECTOR_CLONES void similarity_rows(const float* l, const float* rt, int64_t n, int64_t k, int64_t cs, float* c) {
  similarity_rows_impl(l, rt, n, k, cs, c);
}
CTXSIM_VECTOR_CLONES void similarity_rows(const double* l, const double* rt, int64_t n, int64_t k, int64_t cs, double* c) {
  similarity_rows_impl(l, rt, n, k, cs, c);
}

CTXSIM_VECTOR_CLONES RowCounts mask_row_counts(const uint8_t* __restrict m, int64_t len, const int32_t* __restrict sent,
                                               const int32_t* __restrict tok, int32_t si, int32_t ti, int32_t* __restrict hist,
                                               int32_t* __restrict deg) {
  RowCounts r;
  for (int64_t j = 0; j < len; ++j) {
    const int32_t b = m[j];
    r.selected += b;
    hist[j] += b;
    deg[j] += b;
    r.eligible += b & (sent[j] >= 0);
    r.same_sentence += b & (sent[j] == si);
    r.same_token += b & (tok[j] == ti);
  }
  return r;
}

// Pairs of one row that touch the anchor, and those no explanation covers (si, ti: values that
// match nothing when the row's token is outside a sentence or special).
CTXSIM_VECTOR_CLONES void mask_row_noise(const uint8_t* __restrict m, int64_t len, const uint8_t* __restrict anchor,
                                         const int32_t* __restrict sent, const int32_t* __restrict tok, int32_t si, int32_t ti,
                                         int32_t* touch, int32_t* noise) {
  int32_t t = 0, z = 0;
  for (int64_t j = 0; j < len; ++j) {
    const int32_t b = m[j], a = anchor[j];
    t += b & a;
    z += b & (a ^ 1) & (sent[j] != si) & (tok[j] != ti);
  }
  *touch = t;
  *noise = z;
}

CTXSIM_VECTOR_CLONES int32_t mask_sum(const uint8_t* __restrict m, int64_t len) {
  int32_t s = 0;
  for (int64_t j = 0; j < len; ++j) s += m[j];
  return s;
}

}  // namespace ctxsim::head_rows
