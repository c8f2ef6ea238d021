#include "stages/stats/head_rows.h"

#include <type_traits>

#include "stages/base/cpu_features.h"
#include "stages/base/error.h"

// The row loops below are where the statistics spend their time. Each is compiled for AVX-512
// (x86-64-v4), AVX2 (v3) and baseline x86-64 through GCC target attributes on one body, and
// one table of the three is chosen once: the level in force (stages/base/cpu_features.h), which
// CTXSIM_ISA can lower, so one binary serves every node of a cluster and any machine can run,
// measure and test the lower levels. This file is compiled without fused multiply-add
// contraction and no loop reassociates a sum, so every level gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CTXSIM_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define CTXSIM_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#define CTXSIM_INLINE inline __attribute__((always_inline))
#define CTXSIM_LEVELS 1
#else
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

template <class A>
CTXSIM_INLINE int32_t count_at_least_impl(const A* __restrict row, int64_t len, typename Scalar<A>::type beta) {
  int32_t count = 0;
  for (int64_t j = 0; j < len; ++j) count += Scalar<A>::get(row[j]) >= beta;
  return count;
}

// C_ij = l_i · r_j for the valid upper triangle i < j < n into c (row stride cs): rt is r
// transposed, [k, cs] with zero columns from n on, so a row is a sum over k of l_ik times a
// contiguous row of rt. Whole vectors of VB bytes from the one holding j = i + 1 to the one
// holding n - 1 (entries outside i < j < n are computed and never read); four rows at a time
// share each load of rt. The register block is 4 rows x 2 vectors: 8 accumulators, 2 loads, a
// broadcast and a product, which fit AVX2's and SSE's 16 registers with VB = 32 and 16 as they
// fit AVX-512's 32 with VB = 64 (64-byte vectors on AVX2 needed 16 registers for the
// accumulators alone and spilled on every step: a fifth of a run's cycles). The sum runs over k
// in order in every lane, with no fused multiply-add, so every level and thread count gives the
// same bits.
template <int VB, class F>
CTXSIM_INLINE void similarity_rows_impl(const F* __restrict l, const F* __restrict rt, int64_t n, int64_t k, int64_t cs, F* __restrict c) {
  constexpr int64_t V = VB / sizeof(F);  // lanes of one vector
  typedef F Vec __attribute__((vector_size(VB)));
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

// The first `common` pairs and the diagonal of `rows` rows side by side, each row's chain in order
// (gram_sums_impl): a whole group's count is a constant, so its chains stay in registers.
template <class F, class Rows>
CTXSIM_INLINE void gram_chains(const F* __restrict li, const F* __restrict ri, const F* __restrict ci, int64_t cs, int64_t k,
                               int64_t common, Rows rows, F* __restrict g, double* __restrict off) {
  for (int64_t q = 0; q < k; ++q)
    for (int64_t u = 0; u < rows; ++u) g[u] += li[u * k + q] * ri[u * k + q];
  for (int64_t t = 0; t < common; ++t)
    for (int64_t u = 0; u < rows; ++u) {
      const double x = double(ci[u * (cs + 1) + t]);
      off[u] += x * x;
    }
}

// SPEC §9's two sums over a head's Gram matrix G = l rᵀ of the n valid rows: trace = Σ_i G_ii and
// square = Σ_i (G_ii² + 2 Σ_{j>i} C_ij²), from C's upper triangle (row stride cs) and G_ii = l_i · r_i
// (summed over k in order in F, as similarity_rows sums C). Each row's sums run in order, one
// product and one rounding at a time, and the rows enter trace and square in order: the bits of
// one row after another. Eight rows run side by side, eight independent chains of additions where
// one row alone waits on each addition's latency.
template <class F>
CTXSIM_INLINE void gram_sums_impl(const F* __restrict c, int64_t cs, const F* __restrict l, const F* __restrict r, int64_t n, int64_t k,
                                  double* trace_out, double* square_out) {
  constexpr int64_t G = 8;
  double trace = 0, square = 0;
  for (int64_t i = 0; i < n; i += G) {
    const int64_t m = n - i < G ? n - i : G;
    F g[G] = {};
    double off[G] = {};
    const F* li = l + i * k;
    const F* ri = r + i * k;
    const F* ci = c + i * cs + i + 1;  // row i + u's pairs start at ci + u * (cs + 1)
    const int64_t common = n - i - m;  // the pairs of the group's last row: every row has them
    if (m == G)
      gram_chains(li, ri, ci, cs, k, common, std::integral_constant<int64_t, G>{}, g, off);
    else
      gram_chains(li, ri, ci, cs, k, common, m, g, off);
    for (int64_t u = 0; u < m; ++u) {
      for (int64_t t = common; t < n - 1 - i - u; ++t) {  // the rest of row i + u, in order
        const double x = double(ci[u * (cs + 1) + t]);
        off[u] += x * x;
      }
      trace += double(g[u]);
      square += double(g[u]) * double(g[u]) + 2 * off[u];
    }
  }
  *trace_out = trace;
  *square_out = square;
}

CTXSIM_INLINE RowCounts mask_row_counts_impl(const uint8_t* __restrict m, int64_t len, const int32_t* __restrict sent,
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

CTXSIM_INLINE void mask_row_noise_impl(const uint8_t* __restrict m, int64_t len, const uint8_t* __restrict anchor,
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

CTXSIM_INLINE int32_t mask_sum_impl(const uint8_t* __restrict m, int64_t len) {
  int32_t s = 0;
  for (int64_t j = 0; j < len; ++j) s += m[j];
  return s;
}

// One level's entry points: each body above compiled for TARGET, with VB-byte vectors in the
// similarity, gathered into the level's table.
#define CTXSIM_ROW_LEVEL(NS, TARGET, VB)                                                                                              \
  namespace NS {                                                                                                                      \
  TARGET void count_ge_gt_f(const float* r, int64_t n, float b, int32_t* ge, int32_t* gt) { count_ge_gt_impl(r, n, b, ge, gt); }      \
  TARGET void count_ge_gt_d(const double* r, int64_t n, double b, int32_t* ge, int32_t* gt) { count_ge_gt_impl(r, n, b, ge, gt); }    \
  TARGET int32_t mask_gt_f(const float* r, int64_t n, float v, uint8_t* o) { return mask_row_impl<true>(r, n, v, o); }                \
  TARGET int32_t mask_gt_d(const double* r, int64_t n, double v, uint8_t* o) { return mask_row_impl<true>(r, n, v, o); }              \
  TARGET int32_t mask_ge_f(const float* r, int64_t n, float v, uint8_t* o) { return mask_row_impl<false>(r, n, v, o); }               \
  TARGET int32_t mask_ge_d(const double* r, int64_t n, double v, uint8_t* o) { return mask_row_impl<false>(r, n, v, o); }             \
  TARGET float row_max_f(const float* r, int64_t n, float m) { return row_max_impl(r, n, m); }                                        \
  TARGET double row_max_d(const double* r, int64_t n, double m) { return row_max_impl(r, n, m); }                                     \
  TARGET int32_t count_at_least_f(const float* r, int64_t n, float b) { return count_at_least_impl(r, n, b); }                        \
  TARGET int32_t count_at_least_d(const double* r, int64_t n, double b) { return count_at_least_impl(r, n, b); }                      \
  TARGET int32_t count_at_least_h(const uint16_t* r, int64_t n, float b) { return count_at_least_impl(r, n, b); }                     \
  TARGET void similarity_rows_f(const float* l, const float* rt, int64_t n, int64_t k, int64_t cs, float* c) {                        \
    similarity_rows_impl<VB>(l, rt, n, k, cs, c);                                                                                     \
  }                                                                                                                                   \
  TARGET void similarity_rows_d(const double* l, const double* rt, int64_t n, int64_t k, int64_t cs, double* c) {                     \
    similarity_rows_impl<VB>(l, rt, n, k, cs, c);                                                                                     \
  }                                                                                                                                   \
  TARGET RowCounts mask_row_counts(const uint8_t* m, int64_t n, const int32_t* sent, const int32_t* tok, int32_t si, int32_t ti,      \
                                   int32_t* hist, int32_t* deg) {                                                                     \
    return mask_row_counts_impl(m, n, sent, tok, si, ti, hist, deg);                                                                  \
  }                                                                                                                                   \
  TARGET void mask_row_noise(const uint8_t* m, int64_t n, const uint8_t* anchor, const int32_t* sent, const int32_t* tok, int32_t si, \
                             int32_t ti, int32_t* touch, int32_t* noise) {                                                            \
    mask_row_noise_impl(m, n, anchor, sent, tok, si, ti, touch, noise);                                                               \
  }                                                                                                                                   \
  TARGET int32_t mask_sum(const uint8_t* m, int64_t n) { return mask_sum_impl(m, n); }                                                \
  TARGET void gram_sums_f(const float* c, int64_t w, const float* l, const float* r, int64_t n, int64_t k, double* t, double* s) {    \
    gram_sums_impl(c, w, l, r, n, k, t, s);                                                                                           \
  }                                                                                                                                   \
  TARGET void gram_sums_d(const double* c, int64_t w, const double* l, const double* r, int64_t n, int64_t k, double* t, double* s) { \
    gram_sums_impl(c, w, l, r, n, k, t, s);                                                                                           \
  }                                                                                                                                   \
  constexpr RowKernels kernels = {count_ge_gt_f,    count_ge_gt_d,     mask_gt_f,         mask_gt_d,        mask_ge_f,                \
                                  mask_ge_d,        row_max_f,         row_max_d,         count_at_least_f, count_at_least_d,         \
                                  count_at_least_h, similarity_rows_f, similarity_rows_d, mask_row_counts,  mask_row_noise,           \
                                  mask_sum,         gram_sums_f,       gram_sums_d};                                                  \
  }

// The table of one level.
struct RowKernels {
  void (*count_ge_gt_f)(const float*, int64_t, float, int32_t*, int32_t*);
  void (*count_ge_gt_d)(const double*, int64_t, double, int32_t*, int32_t*);
  int32_t (*mask_gt_f)(const float*, int64_t, float, uint8_t*);
  int32_t (*mask_gt_d)(const double*, int64_t, double, uint8_t*);
  int32_t (*mask_ge_f)(const float*, int64_t, float, uint8_t*);
  int32_t (*mask_ge_d)(const double*, int64_t, double, uint8_t*);
  float (*row_max_f)(const float*, int64_t, float);
  double (*row_max_d)(const double*, int64_t, double);
  int32_t (*count_at_least_f)(const float*, int64_t, float);
  int32_t (*count_at_least_d)(const double*, int64_t, double);
  int32_t (*count_at_least_h)(const uint16_t*, int64_t, float);
  void (*similarity_rows_f)(const float*, const float*, int64_t, int64_t, int64_t, float*);
  void (*similarity_rows_d)(const double*, const double*, int64_t, int64_t, int64_t, double*);
  RowCounts (*mask_row_counts)(const uint8_t*, int64_t, const int32_t*, const int32_t*, int32_t, int32_t, int32_t*, int32_t*);
  void (*mask_row_noise)(const uint8_t*, int64_t, const uint8_t*, const int32_t*, const int32_t*, int32_t, int32_t, int32_t*, int32_t*);
  int32_t (*mask_sum)(const uint8_t*, int64_t);
  void (*gram_sums_f)(const float*, int64_t, const float*, const float*, int64_t, int64_t, double*, double*);
  void (*gram_sums_d)(const double*, int64_t, const double*, const double*, int64_t, int64_t, double*, double*);
};

CTXSIM_ROW_LEVEL(baseline, , 16)
#if defined(CTXSIM_LEVELS)
CTXSIM_ROW_LEVEL(v3, CTXSIM_TARGET_V3, 32)
CTXSIM_ROW_LEVEL(v4, CTXSIM_TARGET_V4, 64)
#endif

namespace {

const RowKernels* table_of(IsaLevel level) {
#if defined(CTXSIM_LEVELS)
  if (level == IsaLevel::V4) return &v4::kernels;
  if (level == IsaLevel::V3) return &v3::kernels;
#endif
  (void)level;
  return &baseline::kernels;
}

const RowKernels* active_table = nullptr;

// The table in force: chosen at the first call from the process's level.
const RowKernels& active() {
  if (!active_table) active_table = table_of(isa_level());
  return *active_table;
}

}  // namespace

void use_level(IsaLevel level) {
  if (int(level) > int(native_isa_level()))
    throw Error(std::string("head_rows::use_level(") + isa_name(level) + ")", "this CPU cannot run it", "pick a lower level");
  active_table = table_of(level);
}

IsaLevel level_in_use() {
  const RowKernels* t = &active();
#if defined(CTXSIM_LEVELS)
  if (t == &v4::kernels) return IsaLevel::V4;
  if (t == &v3::kernels) return IsaLevel::V3;
#endif
  (void)t;
  return IsaLevel::Baseline;
}

void count_ge_gt(const float* row, int64_t len, float b, int32_t* ge, int32_t* gt) { active().count_ge_gt_f(row, len, b, ge, gt); }
void count_ge_gt(const double* row, int64_t len, double b, int32_t* ge, int32_t* gt) { active().count_ge_gt_d(row, len, b, ge, gt); }
int32_t mask_gt(const float* row, int64_t len, float v, uint8_t* out) { return active().mask_gt_f(row, len, v, out); }
int32_t mask_gt(const double* row, int64_t len, double v, uint8_t* out) { return active().mask_gt_d(row, len, v, out); }
int32_t mask_ge(const float* row, int64_t len, float v, uint8_t* out) { return active().mask_ge_f(row, len, v, out); }
int32_t mask_ge(const double* row, int64_t len, double v, uint8_t* out) { return active().mask_ge_d(row, len, v, out); }
float row_max(const float* row, int64_t len, float m) { return active().row_max_f(row, len, m); }
double row_max(const double* row, int64_t len, double m) { return active().row_max_d(row, len, m); }
int32_t count_at_least(const float* row, int64_t len, float beta) { return active().count_at_least_f(row, len, beta); }
int32_t count_at_least(const double* row, int64_t len, double beta) { return active().count_at_least_d(row, len, beta); }
int32_t count_at_least(const uint16_t* row, int64_t len, float beta) { return active().count_at_least_h(row, len, beta); }
void similarity_rows(const float* l, const float* rt, int64_t n, int64_t k, int64_t cs, float* c) {
  active().similarity_rows_f(l, rt, n, k, cs, c);
}
void similarity_rows(const double* l, const double* rt, int64_t n, int64_t k, int64_t cs, double* c) {
  active().similarity_rows_d(l, rt, n, k, cs, c);
}
RowCounts mask_row_counts(const uint8_t* m, int64_t len, const int32_t* sent, const int32_t* tok, int32_t si, int32_t ti, int32_t* hist,
                          int32_t* deg) {
  return active().mask_row_counts(m, len, sent, tok, si, ti, hist, deg);
}
void mask_row_noise(const uint8_t* m, int64_t len, const uint8_t* anchor, const int32_t* sent, const int32_t* tok, int32_t si, int32_t ti,
                    int32_t* touch, int32_t* noise) {
  active().mask_row_noise(m, len, anchor, sent, tok, si, ti, touch, noise);
}
int32_t mask_sum(const uint8_t* m, int64_t len) { return active().mask_sum(m, len); }
void gram_sums(const float* c, int64_t cs, const float* l, const float* r, int64_t n, int64_t k, double* trace, double* square) {
  active().gram_sums_f(c, cs, l, r, n, k, trace, square);
}
void gram_sums(const double* c, int64_t cs, const double* l, const double* r, int64_t n, int64_t k, double* trace, double* square) {
  active().gram_sums_d(c, cs, l, r, n, k, trace, square);
}

}  // namespace ctxsim::head_rows
