// stages/prune (SPEC §8): the masked-LM and next-token targets, head counts of a fraction, the orders, Spearman.
#include "stages/prune/prune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "stages/base/random.h"

namespace ctxsim::prune {
namespace {

TEST(Prune, MaskTargetsFollowSpecSection8) {
  // [CLS] a b c d e [SEP] [PAD] [PAD]: specials 101, 102, 0.
  const std::vector<int32_t> ids = {101, 5, 6, 7, 8, 9, 102, 0, 0};
  const std::vector<int32_t> specials = {0, 101, 102, 103};
  int64_t total = 0, positions = 0;
  for (uint64_t index = 0; index < 2000; ++index) {
    std::vector<int32_t> in(9), lab(9);
    const int32_t n = mask_targets(ids.data(), 9, 7, specials, 103, 42, index, in.data(), lab.data());
    // The draw, replayed: one SplitMix64(42 + index) number per valid non-special position.
    SplitMix64 rng(42 + index);
    std::vector<int32_t> want(9, -1);
    int32_t chosen = 0;
    for (int t = 1; t <= 5; ++t)
      if (rng.next() % 10000 < 1500) want[size_t(t)] = ids[size_t(t)], ++chosen;
    if (chosen == 0) want[1] = ids[1], chosen = 1;  // at least one: the first such position
    ASSERT_EQ(lab, want) << "sample " << index;
    ASSERT_EQ(n, chosen);
    for (int t = 0; t < 9; ++t) ASSERT_EQ(in[size_t(t)], lab[size_t(t)] >= 0 ? 103 : ids[size_t(t)]);
    total += n, positions += 5;
  }
  EXPECT_NEAR(double(total) / double(positions), 0.15 + 0.85 * 0.85 * 0.85 * 0.85 * 0.85 / 5, 0.02);
  // A sample of specials only has nothing to predict.
  const std::vector<int32_t> empty = {101, 102, 0};
  std::vector<int32_t> in(3), lab(3);
  EXPECT_EQ(mask_targets(empty.data(), 3, 2, specials, 103, 1, 0, in.data(), lab.data()), 0);
  EXPECT_EQ(lab, (std::vector<int32_t>{-1, -1, -1}));
}

TEST(Prune, NextTokenTargetsAreTheFollowingValidTokens) {
  // GPT-2's frame: <|endoftext|> a b c, then two padding positions (invalid).
  const std::vector<int32_t> ids = {50256, 5, 6, 7, 50256, 50256};
  std::vector<int32_t> in(6, 99), lab(6, 99);
  EXPECT_EQ(next_token_targets(ids.data(), 6, 4, in.data(), lab.data()), 3);
  EXPECT_EQ(in, ids);                                           // nothing masked
  EXPECT_EQ(lab, (std::vector<int32_t>{5, 6, 7, -1, -1, -1}));  // the last valid position predicts nothing
  EXPECT_EQ(next_token_targets(ids.data(), 6, 1, in.data(), lab.data()), 0);
  EXPECT_EQ(lab, std::vector<int32_t>(6, -1));
  EXPECT_EQ(next_token_targets(ids.data(), 6, 0, in.data(), lab.data()), 0);
}

TEST(Prune, FractionsCountsOrdersAndGates) {
  EXPECT_EQ(curve_fractions().size(), 10u);
  EXPECT_EQ(curve_fractions()[3], 0.3);
  EXPECT_EQ(removed_heads(0.1, 48), 5);  // 4.8
  EXPECT_EQ(removed_heads(0.5, 48), 24);
  EXPECT_EQ(removed_heads(0.0, 48), 0);
  EXPECT_EQ(removed_heads(0.3, 5), 2);  // 1.5: half away from zero
  EXPECT_EQ(removed_heads(0.2, 4), 1);  // 0.8
  const std::vector<double> v = {0.5, 0.1, 0.5, 0.9};
  EXPECT_EQ(order_by(v, true), (std::vector<int64_t>{1, 0, 2, 3}));   // ties by index
  EXPECT_EQ(order_by(v, false), (std::vector<int64_t>{3, 0, 2, 1}));  // ties by index too
  const double nan = std::nan("");
  EXPECT_EQ(order_by({nan, 0.2, nan, 0.1}, true), (std::vector<int64_t>{3, 1, 0, 2}));
  EXPECT_EQ(order_by({nan, 0.2, nan, 0.1}, false), (std::vector<int64_t>{1, 3, 0, 2}));
  const std::vector<int64_t> r = random_order(48, 3);
  std::vector<int64_t> sorted = r;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 48; ++i) EXPECT_EQ(sorted[size_t(i)], i);
  EXPECT_NE(r, random_order(48, 4));
  EXPECT_EQ(r, random_order(48, 3));
  EXPECT_EQ(gates_without({2, 0, 1, 3}, 2, 4), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(score_row("noise")->ascending, false);
  EXPECT_EQ(score_row("same_sentence_lift")->ascending, true);
  EXPECT_EQ(score_row("entropy"), nullptr);
}

TEST(Prune, SpearmanByHand) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ties take average ranks: (0, 1.5, 1.5, 3) against (1, 0, 3, 2), whose Pearson correlation is
  // Σ(dx·dy) / √(Σdx² Σdy²) = 1 / √(4.5 · 5) = 1/√10 (numpy.corrcoef: 0.316227766016838).
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {2, 1, 4, 3}), 1 / std::sqrt(10.0), 1e-15);
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
}

}  // namespace
}  // namespace ctxsim::prune
