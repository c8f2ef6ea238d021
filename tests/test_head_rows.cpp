// The row loops of the statistics at every ISA level this CPU runs (stages/stats/head_rows.h): the same
// bits as the baseline's, whatever the vector width, on lengths that end inside and on vector
// boundaries. SPEC §5: results do not depend on the CPU's instruction-set level.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "stages/base/cpu_features.h"
#include "stages/stats/head_rows.h"

namespace ctxsim {
namespace {

using namespace head_rows;

std::vector<IsaLevel> levels_here() {
  std::vector<IsaLevel> out = {IsaLevel::Baseline};
  if (int(native_isa_level()) >= int(IsaLevel::V3)) out.push_back(IsaLevel::V3);
  if (native_isa_level() == IsaLevel::V4) out.push_back(IsaLevel::V4);
  return out;
}

// Restores the level in force when a test ends.
struct LevelGuard {
  IsaLevel before = level_in_use();
  ~LevelGuard() { use_level(before); }
};

template <class F>
std::vector<F> similarity_at(IsaLevel level, const std::vector<F>& l, const std::vector<F>& r, int64_t n, int64_t k) {
  use_level(level);
  EXPECT_EQ(level_in_use(), level);
  const int64_t cs = similarity_stride<F>(n);
  std::vector<F> rt(size_t(k * cs), F(0)), c(size_t(n * cs), F(-7));
  transpose_into(r.data(), n, k, cs, rt.data());
  similarity_rows(l.data(), rt.data(), n, k, cs, c.data());
  // Only the valid upper triangle is defined.
  std::vector<F> upper;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) upper.push_back(c[size_t(i * cs + j)]);
  return upper;
}

template <class F>
void expect_same_similarity_bits() {
  const LevelGuard guard;
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal(0, 1);
  for (int64_t n : {1, 2, 5, 8, 15, 16, 17, 31, 33, 64, 100, 127, 128, 130}) {
    for (int64_t k : {1, 7, 64}) {
      std::vector<F> l(size_t(n * k)), r(size_t(n * k));
      for (auto& x : l) x = F(normal(gen));
      for (auto& x : r) x = F(normal(gen));
      const std::vector<F> base = similarity_at(IsaLevel::Baseline, l, r, n, k);
      for (IsaLevel level : levels_here()) {
        const std::vector<F> got = similarity_at(level, l, r, n, k);
        ASSERT_EQ(got.size(), base.size());
        EXPECT_EQ(std::memcmp(got.data(), base.data(), got.size() * sizeof(F)), 0) << isa_name(level) << " n=" << n << " k=" << k;
      }
      // And it is the sum over k in order, one product and one rounding at a time.
      if (n >= 2) {
        F expect = 0;
        for (int64_t q = 0; q < k; ++q) {
          const F p = l[size_t(q)] * r[size_t(k + q)];
          expect = expect + p;
        }
        EXPECT_EQ(std::memcmp(&base[0], &expect, sizeof(F)), 0) << "C_01, n=" << n << " k=" << k;
      }
    }
  }
}

TEST(HeadRows, SimilarityHasTheSameBitsAtEveryLevelFloat32) { expect_same_similarity_bits<float>(); }
TEST(HeadRows, SimilarityHasTheSameBitsAtEveryLevelFloat64) { expect_same_similarity_bits<double>(); }

// SPEC §9's sums, written out as one row after another: each G_ii over k in F, each row's squares
// in double in order, the rows into trace and square in order.
template <class F>
std::pair<double, double> gram_sums_row_by_row(const std::vector<F>& c, int64_t cs, const std::vector<F>& l, const std::vector<F>& r,
                                               int64_t n, int64_t k) {
  double trace = 0, square = 0;
  for (int64_t i = 0; i < n; ++i) {
    F g = 0;
    for (int64_t q = 0; q < k; ++q) {
      const F p = l[size_t(i * k + q)] * r[size_t(i * k + q)];
      g = g + p;
    }
    trace += double(g);
    double off = 0;
    for (int64_t j = i + 1; j < n; ++j) {
      const double x = double(c[size_t(i * cs + j)]);
      off += x * x;
    }
    square += double(g) * double(g) + 2 * off;
  }
  return {trace, square};
}

template <class F>
void expect_gram_sums_row_by_row() {
  const LevelGuard guard;
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal(0, 1);
  for (int64_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 100, 128, 130}) {
    for (int64_t k : {1, 7, 64}) {
      std::vector<F> l(size_t(n * k)), r(size_t(n * k));
      for (auto& x : l) x = F(normal(gen));
      for (auto& x : r) x = F(normal(gen) * 3);  // values of several magnitudes, so the order shows in the bits
      const int64_t cs = similarity_stride<F>(n);
      std::vector<F> rt(size_t(k * cs), F(0)), c(size_t(std::max<int64_t>(n, 1) * cs), F(0));
      transpose_into(r.data(), n, k, cs, rt.data());
      similarity_rows(l.data(), rt.data(), n, k, cs, c.data());
      const auto [trace, square] = gram_sums_row_by_row(c, cs, l, r, n, k);
      for (IsaLevel level : levels_here()) {
        use_level(level);
        double t = -1, s = -1;
        gram_sums(c.data(), cs, l.data(), r.data(), n, k, &t, &s);
        EXPECT_EQ(std::memcmp(&t, &trace, sizeof t), 0) << isa_name(level) << " n=" << n << " k=" << k << ": " << t << " vs " << trace;
        EXPECT_EQ(std::memcmp(&s, &square, sizeof s), 0) << isa_name(level) << " n=" << n << " k=" << k << ": " << s << " vs " << square;
      }
    }
  }
}

TEST(HeadRows, GramSumsAreTheRowByRowSumsAtEveryLevelFloat32) { expect_gram_sums_row_by_row<float>(); }
TEST(HeadRows, GramSumsAreTheRowByRowSumsAtEveryLevelFloat64) { expect_gram_sums_row_by_row<double>(); }

TEST(HeadRows, RowPrimitivesAgreeAtEveryLevel) {
  const LevelGuard guard;
  std::mt19937 gen(9);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t len : {0, 1, 9, 16, 63, 64, 65, 127}) {
    std::vector<float> row(static_cast<size_t>(len));
    for (auto& x : row) x = float(small(gen)) * 0.5f;
    std::vector<uint8_t> m(static_cast<size_t>(len)), anchor(static_cast<size_t>(len));
    std::vector<int32_t> sent(static_cast<size_t>(len)), tok(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j) {
      m[size_t(j)] = uint8_t(small(gen) & 1);
      anchor[size_t(j)] = uint8_t(small(gen) == 0);
      sent[size_t(j)] = small(gen) - 1;
      tok[size_t(j)] = small(gen);
    }
    struct Out {
      int32_t ge, gt, mgt, mge, least, sum, touch, noise;
      float mx;
      RowCounts rc;
      std::vector<uint8_t> mask;
      std::vector<int32_t> hist, deg;
    };
    const auto run_at = [&](IsaLevel level) {
      use_level(level);
      Out o{};
      count_ge_gt(row.data(), len, 0.5f, &o.ge, &o.gt);
      o.mask.resize(size_t(len));
      o.mgt = mask_gt(row.data(), len, 0.5f, o.mask.data());
      o.mge = mask_ge(row.data(), len, 1.0f, o.mask.data());
      o.least = count_at_least(row.data(), len, 1.0f);
      o.mx = row_max(row.data(), len, -1.0f);
      o.sum = mask_sum(m.data(), len);
      o.hist.assign(size_t(len), 0);
      o.deg.assign(size_t(len), 0);
      o.rc = mask_row_counts(m.data(), len, sent.data(), tok.data(), 1, 2, o.hist.data(), o.deg.data());
      mask_row_noise(m.data(), len, anchor.data(), sent.data(), tok.data(), 1, 2, &o.touch, &o.noise);
      return o;
    };
    const Out base = run_at(IsaLevel::Baseline);
    int32_t ge = 0, gt = 0;
    for (float x : row) ge += x >= 0.5f, gt += x > 0.5f;
    EXPECT_EQ(base.ge, ge);
    EXPECT_EQ(base.gt, gt);
    for (IsaLevel level : levels_here()) {
      const Out o = run_at(level);
      const std::string at = std::string(isa_name(level)) + " len=" + std::to_string(len);
      EXPECT_EQ(o.ge, base.ge) << at;
      EXPECT_EQ(o.gt, base.gt) << at;
      EXPECT_EQ(o.mgt, base.mgt) << at;
      EXPECT_EQ(o.mge, base.mge) << at;
      EXPECT_EQ(o.mask, base.mask) << at;
      EXPECT_EQ(o.least, base.least) << at;
      EXPECT_EQ(o.mx, base.mx) << at;
      EXPECT_EQ(o.sum, base.sum) << at;
      EXPECT_EQ(o.touch, base.touch) << at;
      EXPECT_EQ(o.noise, base.noise) << at;
      EXPECT_EQ(o.hist, base.hist) << at;
      EXPECT_EQ(o.deg, base.deg) << at;
      EXPECT_EQ(o.rc.selected, base.rc.selected) << at;
      EXPECT_EQ(o.rc.eligible, base.rc.eligible) << at;
      EXPECT_EQ(o.rc.same_sentence, base.rc.same_sentence) << at;
      EXPECT_EQ(o.rc.same_token, base.rc.same_token) << at;
    }
  }
}

TEST(HeadRows, ALevelAboveTheCpusIsRefused) {
  if (native_isa_level() == IsaLevel::V4) GTEST_SKIP() << "this CPU runs every level";
  EXPECT_THROW(use_level(IsaLevel::V4), std::exception);
}

}  // namespace
}  // namespace ctxsim
