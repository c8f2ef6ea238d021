// stages/pretraining_data: BERT's masking, the sample order, dropout masks, the unigram baseline.
#include "stages/text/pretraining_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ctxsim {
namespace {

// Vocabulary of 1000 ids: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK], the rest ordinary.
MaskSpec spec() {
  MaskSpec s;
  s.mask_id = 4;
  s.vocab_size = 1000;
  s.special_ids = {0, 1, 2, 3, 4};
  return s;
}

// [CLS] ids… [SEP] [PAD]…, T = 32, with n_valid valid positions; an [UNK] at position 5.
std::vector<int32_t> sample(int32_t n_valid, uint64_t salt) {
  std::vector<int32_t> ids(32, 0);
  ids[0] = 2;
  for (int32_t t = 1; t < n_valid - 1; ++t) ids[size_t(t)] = 5 + int32_t((salt * 31 + uint64_t(t) * 17) % 995);
  ids[size_t(n_valid - 1)] = 3;
  if (n_valid > 7) ids[5] = 1;
  return ids;
}

TEST(Masking, SpecialsAndPaddingAreNeverPredictedAndTheCountIsBerts) {
  const MaskSpec s = spec();
  for (int32_t n_valid : {3, 4, 12, 27, 32}) {
    const auto ids = sample(n_valid, 7);
    std::vector<int32_t> input(32), labels(32);
    const int32_t k = mask_sample(ids.data(), 32, n_valid, s, 99, input.data(), labels.data());
    int32_t maskable = 0;
    for (int32_t t = 0; t < n_valid; ++t) maskable += ids[size_t(t)] > 4;
    EXPECT_EQ(k, maskable == 0 ? 0 : std::max<int32_t>(1, int32_t(std::llround(0.15 * maskable)))) << n_valid;
    int32_t predicted = 0;
    for (int32_t t = 0; t < 32; ++t) {
      if (labels[size_t(t)] >= 0) {
        ++predicted;
        EXPECT_LT(t, n_valid);
        EXPECT_GT(ids[size_t(t)], 4) << "a special token was chosen for prediction";
        EXPECT_EQ(labels[size_t(t)], ids[size_t(t)]);
      } else {
        EXPECT_EQ(input[size_t(t)], ids[size_t(t)]) << "a position not predicted was changed";
      }
    }
    EXPECT_EQ(predicted, k);
  }
}

TEST(Masking, EightyTenTenOverManySamplesAndTheSameKeyGivesTheSameMasks) {
  const MaskSpec s = spec();
  int64_t masked = 0, random = 0, kept = 0;
  for (uint64_t n = 0; n < 20000; ++n) {
    const auto ids = sample(32, n);
    std::vector<int32_t> input(32), labels(32);
    mask_sample(ids.data(), 32, 32, s, mix_key(42, n), input.data(), labels.data());
    for (int t = 0; t < 32; ++t) {
      if (labels[size_t(t)] < 0) continue;
      if (input[size_t(t)] == s.mask_id)
        ++masked;
      else if (input[size_t(t)] == ids[size_t(t)])
        ++kept;  // a random draw of the same id counts here (p = 1/995)
      else {
        ++random;
        EXPECT_GT(input[size_t(t)], 4) << "a random replacement is never special";
      }
    }
  }
  const double total = double(masked + random + kept);
  EXPECT_EQ(total, 20000.0 * 4);  // 29 maskable tokens a sample: round(0.15 × 29) = 4
  // 3 sigma of a binomial share at n = 80,000 is about 0.003 for 10% and 0.004 for 80%.
  EXPECT_NEAR(masked / total, 0.8, 0.005);
  EXPECT_NEAR(random / total, 0.1, 0.004);
  EXPECT_NEAR(kept / total, 0.1, 0.004);

  const auto ids = sample(32, 3);
  std::vector<int32_t> a(32), la(32), b(32), lb(32), c(32), lc(32);
  mask_sample(ids.data(), 32, 32, s, 1234, a.data(), la.data());
  mask_sample(ids.data(), 32, 32, s, 1234, b.data(), lb.data());
  mask_sample(ids.data(), 32, 32, s, 1235, c.data(), lc.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(la, lb);
  EXPECT_NE(la, lc);
}

TEST(SampleOrder, EachEpochAPermutationTheSameForTheSameSeed) {
  SampleOrder a(1000, 5), b(1000, 5), c(1000, 6);
  std::vector<int64_t> e0, e1;
  for (int64_t g = 0; g < 1000; ++g) e0.push_back(a.window(g));
  for (int64_t g = 1000; g < 2000; ++g) e1.push_back(a.window(g));
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 1000u);
  EXPECT_EQ(std::set<int64_t>(e1.begin(), e1.end()).size(), 1000u);
  EXPECT_NE(e0, e1);
  // Random access (a resume at any step, a rank's rows) gives what sequential order gives.
  EXPECT_EQ(b.window(1500), e1[500]);
  EXPECT_EQ(b.window(7), e0[7]);
  int same = 0;
  for (int64_t g = 0; g < 1000; ++g) same += c.window(g) == e0[size_t(g)];
  EXPECT_LT(same, 20);
}

TEST(Dropout, ShareAndScaleOfTheMaskAndTheSameKeyGivesTheSameMask) {
  std::vector<float> m(100000), n(100000), o(100000);
  fill_dropout_mask(m.data(), int64_t(m.size()), 0.1, 77);
  fill_dropout_mask(n.data(), int64_t(n.size()), 0.1, 77);
  fill_dropout_mask(o.data(), int64_t(o.size()), 0.1, 78);
  EXPECT_EQ(m, n);
  EXPECT_NE(m, o);
  int64_t zeros = 0;
  for (float v : m) {
    if (v == 0)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(v, 1.0f / 0.9f);
  }
  EXPECT_NEAR(double(zeros) / double(m.size()), 0.1, 0.003);  // 3 sigma at n = 100,000
  // A prefix of a longer mask is the shorter mask (the stream does not depend on the length).
  std::vector<float> shorter(999);
  fill_dropout_mask(shorter.data(), 999, 0.1, 77);
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), m.begin()));
  fill_dropout_mask(shorter.data(), 999, 0.0, 77);
  EXPECT_TRUE(std::all_of(shorter.begin(), shorter.end(), [](float v) { return v == 1.0f; }));
}

TEST(Unigram, HandComputedLossAndAccuracy) {
  // ids 0 and 1 special; 2 seen 3 times, 3 once, 4 never: add-one gives 4/7, 2/7, 1/7.
  const UnigramBaseline b = unigram_baseline({9, 9, 3, 1, 0}, {0, 1});
  EXPECT_EQ(b.top_id, 2);
  EXPECT_NEAR(b.log_prob[2], std::log(4.0 / 7.0), 1e-12);
  EXPECT_TRUE(std::isinf(b.log_prob[0]));
  const std::vector<int32_t> labels = {-1, 2, 3, -1, 2, 4};
  EXPECT_NEAR(b.loss(labels), -(2 * std::log(4.0 / 7.0) + std::log(2.0 / 7.0) + std::log(1.0 / 7.0)) / 4, 1e-12);
  EXPECT_DOUBLE_EQ(b.accuracy(labels), 0.5);
}

}  // namespace
}  // namespace ctxsim
