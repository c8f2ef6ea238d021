// Similarity, selection and statistics (SPEC §2–5): hand-built cases with hand-computed
// answers, then invariants, merge and batch-size invariance on real Brown samples through a
// tiny random model.
#include "stages/stats/statistics.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "expect_accumulators.h"
#include "stages/base/error.h"
#include "stages/model/random_checkpoint.h"
#include "stages/stats/analysis.h"
#include "stages/text/corpus.h"
#include "stages/text/samples.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

// One or more hand-made samples of length T.
struct HandBatch {
  int64_t T;
  std::vector<int32_t> tokens;
  std::vector<int16_t> sentences;
  std::vector<int16_t> n_valid;
  BatchSamples view() const { return BatchSamples{tokens.data(), sentences.data(), n_valid.data(), int64_t(n_valid.size()), T}; }
};

StatsShape shape_for(int64_t rules, int64_t layers, int64_t heads, int64_t T, const StatisticsOptions& opt = {}) {
  StatsShape s;
  s.separators = int64_t(separator_tokens(opt).size());
  s.rules = rules;
  s.layers = layers;
  s.heads = heads;
  s.seq_len = T;
  s.vocab = 200;
  return s;
}

SelectionRule rule(SelectionRule::Kind k, double v) {
  SelectionRule r;
  r.kind = k;
  r.value = v;
  return r;
}
const auto kTop = SelectionRule::Kind::TopFraction;
const auto kRel = SelectionRule::Kind::RelativeToMax;
const auto kAbs = SelectionRule::Kind::Absolute;

// Uniform attention over the valid keys of each sample: [B, H, T, T].
at::Tensor uniform_attention(const HandBatch& b, int64_t H) {
  const int64_t B = int64_t(b.n_valid.size());
  at::Tensor a = at::zeros({B, H, b.T, b.T}, at::kDouble);
  for (int64_t s = 0; s < B; ++s) a[s].slice(2, 0, b.n_valid[size_t(s)]).fill_(1.0 / b.n_valid[size_t(s)]);
  return a;
}

at::Tensor valid_of(const HandBatch& b) {
  const int64_t B = int64_t(b.n_valid.size());
  at::Tensor v = at::zeros({B, b.T}, at::kBool);
  for (int64_t s = 0; s < B; ++s) v[s].slice(0, 0, b.n_valid[size_t(s)]).fill_(true);
  return v;
}

// [CLS] a b a c b a [SEP]: a = 10, b = 11, c = 12; sentence 0 = positions 1-3, 1 = 4-6.
HandBatch repeated_tokens() { return HandBatch{8, {101, 10, 11, 10, 12, 11, 10, 102}, {-1, 0, 0, 0, 1, 1, 1, -1}, {8}}; }

// Vectors identical for equal tokens and orthogonal otherwise: one-hot on the token id.
at::Tensor one_hot_vectors(const HandBatch& b) {
  at::Tensor v = at::zeros({1, 1, b.T, 200}, at::kDouble);
  for (int64_t i = 0; i < b.T; ++i) v[0][0][i][b.tokens[size_t(i)]] = 1.0;
  return v;
}

// Every hand-built case runs on both selection paths: indices of the few selected pairs, and
// the dense mask over all pairs.
class HandBuilt : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(Paths, HandBuilt, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "dense" : "sparse"; });

TEST_P(HandBuilt, IdenticalForEqualTokensSelectsExactlyTheRepeatedPairs) {
  const HandBatch b = repeated_tokens();
  const at::Tensor sim = context_similarity(one_hot_vectors(b), valid_of(b));
  // C_ij = 1 exactly for the repeated pairs (1,3) (1,6) (3,6) (2,5); 0 elsewhere, diagonal 0.
  EXPECT_EQ(sim.sum().item<double>(), 8.0);
  EXPECT_EQ(sim[0][0][1][1].item<double>(), 0.0);
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  // 4 of P = 28 pairs: f = 1/7 gives round(4.0) = 4; t = 0.5 and a = 0.9 select the same.
  opt.rules = {rule(kTop, 1.0 / 7.0), rule(kAbs, 0.5), rule(kRel, 0.9)};
  opt.attention_threshold = 0.1;
  opt.separator_ids = {102};
  opt.special_ids = {0, 100, 101, 102, 103};
  Accumulator acc(shape_for(3, 1, 1, 8, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, one_hot_vectors(b), uniform_attention(b, 1));
  for (int64_t r = 0; r < 3; ++r) {
    SCOPED_TRACE("rule " + std::to_string(r));
    EXPECT_EQ(acc.at(Stat::HighPairs, r)[0], 4);
    EXPECT_EQ(acc.at(Stat::SameToken, r)[0], 4);
    // Distances 2, 5, 3 and 3.
    const int64_t* h = acc.at(Stat::DistanceHist, r);
    EXPECT_EQ(h[2], 1);
    EXPECT_EQ(h[3], 2);
    EXPECT_EQ(h[5], 1);
    EXPECT_EQ(h[1] + h[4] + h[6] + h[7], 0);
    EXPECT_EQ(acc.at(Stat::SameSentence, r)[0], 1);  // only (1,3)
    EXPECT_EQ(acc.at(Stat::SentenceEligible, r)[0], 4);
    EXPECT_EQ(acc.at(Stat::InAttention, r)[0], 4);  // uniform 1/8 >= 0.1
    EXPECT_EQ(acc.at(Stat::Noise, r)[0], 0);        // all explained by repetition
    EXPECT_EQ(acc.at(Stat::AnchorPairs, r)[0], 3);  // the three pairs of 'a'
    // Anchor: 'a' has 6 of the 8 endpoints.
    const auto& ps = stats.per_sample();
    EXPECT_EQ(ps.anchor_token[size_t(r)], 10);
    EXPECT_FLOAT_EQ(ps.anchor_share[size_t(r)], 0.75f);
    EXPECT_EQ(ps.high_pairs[size_t(r)], 4);
    EXPECT_EQ(acc.at(Stat::AnchorCounts, r)[10], 1);
    EXPECT_EQ(acc.at(Stat::SamplesWithPairs, r)[0], 1);
    EXPECT_EQ(acc.at(Stat::DistinctAnchors, r)[0], 1);
  }
  // Baselines over all 28 valid pairs.
  EXPECT_EQ(*acc.at(Stat::Samples), 1);
  EXPECT_EQ(*acc.at(Stat::ValidPairs), 28);
  for (int d = 1; d < 8; ++d) EXPECT_EQ(acc.at(Stat::DistanceAll)[d], 8 - d);
  EXPECT_EQ(*acc.at(Stat::SameTokenAll), 4);
  EXPECT_EQ(*acc.at(Stat::SameSentenceAll), 6);
  EXPECT_EQ(*acc.at(Stat::SentenceEligibleAll), 15);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(acc.at(Stat::HighAttentionAll, r)[0], 28);
    // Every row puts 1/8 on the one [SEP] key: 0.125 in fixed point.
    EXPECT_EQ(acc.at(Stat::SeparatorMass, r)[0], int64_t(0.125 * kFixedPointScale));
  }
  EXPECT_TRUE(check_invariants(acc).empty());
}

// Vectors growing with position: o_i = i (one dimension), so C_ij = i·j.
TEST_P(HandBuilt, VectorsGrowingWithPosition) {
  const HandBatch b{6, {101, 50, 40, 30, 20, 10}, {-1, 0, 0, 0, 0, 0}, {6}};
  at::Tensor v = at::arange(6, at::kDouble).view({1, 1, 6, 1});
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  // P = 15. f = 0.2 → k = 3: (4,5)=20 (3,5)=15 (3,4)=12. a = 0.6 → C >= 12: the same three
  // (12 is included). t = 10 adds (2,5) = 10.
  opt.rules = {rule(kTop, 0.2), rule(kRel, 0.6), rule(kAbs, 10)};
  Accumulator acc(shape_for(3, 1, 1, 6, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, v, uniform_attention(b, 1));
  EXPECT_EQ(acc.at(Stat::HighPairs, 0)[0], 3);
  EXPECT_EQ(acc.at(Stat::HighPairs, 1)[0], 3);
  EXPECT_EQ(acc.at(Stat::HighPairs, 2)[0], 4);
  const at::Tensor m = stats.selection_matrix(1, 0)[0];
  EXPECT_EQ(m[4][5].item<int>(), 1);
  EXPECT_EQ(m[3][5].item<int>(), 1);
  EXPECT_EQ(m[3][4].item<int>(), 1);
  EXPECT_EQ(m.sum().item<int64_t>(), 3);
  // Distances of the top 3: 1, 2, 1.
  EXPECT_EQ(acc.at(Stat::DistanceHist, 0)[1], 2);
  EXPECT_EQ(acc.at(Stat::DistanceHist, 0)[2], 1);
  // Anchor tie: positions 3, 4, 5 have two endpoints each; the smallest id (10) wins.
  EXPECT_EQ(stats.per_sample().anchor_token[0], 10);
  EXPECT_FLOAT_EQ(stats.per_sample().anchor_share[0], 2.0f / 6.0f);
  // Rule 2 adds (2,5): position 5 now has 3 endpoints, so token 10 wins outright.
  EXPECT_EQ(stats.per_sample().anchor_token[2], 10);
  EXPECT_FLOAT_EQ(stats.per_sample().anchor_share[2], 3.0f / 8.0f);
  EXPECT_TRUE(check_invariants(acc).empty());
}

TEST_P(HandBuilt, TiesGoToSmallerIThenSmallerJ) {
  const HandBatch b{6, {101, 1, 2, 3, 4, 102}, {-1, 0, 0, 0, 0, -1}, {6}};
  const at::Tensor v = at::ones({1, 1, 6, 4}, at::kDouble);  // every C_ij = 4
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kTop, 0.2)};  // k = 3 of 15 equal pairs
  Accumulator acc(shape_for(1, 1, 1, 6, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, v, uniform_attention(b, 1));
  const at::Tensor m = stats.selection_matrix(0, 0)[0];
  EXPECT_EQ(m[0][1].item<int>() + m[0][2].item<int>() + m[0][3].item<int>(), 3);
  EXPECT_EQ(m.sum().item<int64_t>(), 3);
}

TEST_P(HandBuilt, RoundingIsHalfAwayFromZero) {
  // n = 5 → P = 10; f = 0.25 → 2.5 → 3 pairs (banker's rounding would give 2).
  const HandBatch b{5, {101, 1, 2, 3, 102}, {-1, 0, 0, 0, -1}, {5}};
  const at::Tensor v = at::arange(1, 6, at::kDouble).view({1, 1, 5, 1});
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kTop, 0.25), rule(kTop, 0.0001)};  // the second: max(1, round(0.001)) = 1
  Accumulator acc(shape_for(2, 1, 1, 5, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, v, uniform_attention(b, 1));
  EXPECT_EQ(acc.at(Stat::HighPairs, 0)[0], 3);
  EXPECT_EQ(acc.at(Stat::HighPairs, 1)[0], 1);
}

// SPEC §9 by hand: head 0's outputs lie on one line (every G_ij = (i+1)(j+1) |u|^2: effective rank
// 1), head 1's are five orthonormal vectors (G = I: rank 5), head 2's are zero (not counted); the
// same in every rule, and the tensor path agrees.
TEST_P(HandBuilt, EffectiveRankOfHandMadeHeads) {
  const HandBatch b{5, {101, 1, 2, 3, 102}, {-1, 0, 0, 0, -1}, {5}};
  at::Tensor v = at::zeros({1, 3, 5, 5}, at::kDouble);
  for (int i = 0; i < 5; ++i) {
    v[0][0][i][0] = double(i + 1), v[0][0][i][1] = 2.0 * (i + 1);
    v[0][1][i][i] = 1.0;
  }
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kTop, 0.2), rule(kAbs, 0.5)};
  for (const bool tensor_path : {false, true}) {
    Accumulator acc(shape_for(2, 1, 3, 5, opt));
    at::Tensor device_acc = at::zeros({int64_t(acc.buffer().size())}, at::kLong);
    BatchStatistics stats(opt, b.view(), acc, tensor_path ? device_acc : at::Tensor());
    stats.add_layer(0, v, v, uniform_attention(b, 3));
    for (size_t i = 0; i < acc.buffer().size(); ++i) acc.buffer()[i] += device_acc[int64_t(i)].item<int64_t>();
    for (int64_t r = 0; r < 2; ++r) {
      EXPECT_EQ(acc.at(Stat::EffectiveRank, r)[0], int64_t(kFixedPointScale)) << "rule " << r << ", tensor path " << tensor_path;
      EXPECT_EQ(acc.at(Stat::EffectiveRank, r)[1], 5 * int64_t(kFixedPointScale)) << "rule " << r << ", tensor path " << tensor_path;
      EXPECT_EQ(acc.at(Stat::EffectiveRank, r)[2], 0);
      EXPECT_EQ(acc.at(Stat::EffectiveRankSamples, r)[0], 1);
      EXPECT_EQ(acc.at(Stat::EffectiveRankSamples, r)[1], 1);
      EXPECT_EQ(acc.at(Stat::EffectiveRankSamples, r)[2], 0);
    }
    EXPECT_TRUE(check_invariants(acc).empty());
  }
}

TEST_P(HandBuilt, AllNegativeUnderRelativeToMaxSelectsNothing) {
  const HandBatch b{5, {101, 1, 2, 3, 102}, {-1, 0, 0, 0, -1}, {5}};
  // C_ij = left_i · right_j = -1 - i - j with left_i = (-1, -i, -1), right_j = (1, 1, j).
  at::Tensor left = at::zeros({1, 1, 5, 3}, at::kDouble), right = at::zeros({1, 1, 5, 3}, at::kDouble);
  for (int i = 0; i < 5; ++i) {
    left[0][0][i][0] = -1.0;
    left[0][0][i][1] = -double(i);
    left[0][0][i][2] = -1.0;
    right[0][0][i][0] = 1.0;
    right[0][0][i][1] = 1.0;
    right[0][0][i][2] = double(i);
  }
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kRel, 0.5), rule(kTop, 0.01), rule(kAbs, -3.0)};
  Accumulator acc(shape_for(3, 1, 1, 5, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, left, right, uniform_attention(b, 1));
  EXPECT_EQ(acc.at(Stat::HighPairs, 0)[0], 0);
  EXPECT_EQ(stats.per_sample().anchor_token[0], -1);
  EXPECT_EQ(stats.per_sample().anchor_share[0], 0.0f);
  EXPECT_EQ(acc.at(Stat::SamplesWithPairs, 0)[0], 0);
  EXPECT_EQ(acc.at(Stat::HighPairs, 1)[0], 1);  // the least negative pair (0,1) = -2
  EXPECT_EQ(stats.selection_matrix(1, 0)[0][0][1].item<int>(), 1);
  EXPECT_EQ(acc.at(Stat::HighPairs, 2)[0], 2);  // (0,1) = -2 and (0,2) = -3
  EXPECT_TRUE(check_invariants(acc).empty());
}

TEST_P(HandBuilt, PaddingNeverSelected) {
  // Two samples, T = 8: 4 and 8 valid. [PAD] vectors are huge but must not count.
  HandBatch b{
      8, {101, 5, 6, 102, 0, 0, 0, 0, 101, 5, 6, 7, 8, 9, 5, 102}, {-1, 0, 0, -1, -1, -1, -1, -1, -1, 0, 0, 0, 1, 1, 1, -1}, {4, 8}};
  at::Tensor v = at::rand({2, 1, 8, 3}, at::kDouble);
  v[0][0].slice(0, 4, 8).fill_(1000.0);
  const at::Tensor sim = context_similarity(v, valid_of(b));
  EXPECT_EQ(sim[0][0].slice(0, 4, 8).abs().max().item<double>(), 0.0);
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kTop, 0.5), rule(kAbs, -1e9)};
  opt.special_ids = {0, 101, 102};
  Accumulator acc(shape_for(2, 1, 1, 8, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, v, uniform_attention(b, 1));
  // P = 6 and 28 → top half: 3 + 14; absolute selects every valid pair: 34.
  EXPECT_EQ(acc.at(Stat::HighPairs, 0)[0], 17);
  EXPECT_EQ(acc.at(Stat::HighPairs, 1)[0], 34);
  EXPECT_EQ(*acc.at(Stat::ValidPairs), 34);
  EXPECT_EQ(stats.selection_matrix(1, 0)[0].slice(1, 4, 8).sum().item<int64_t>(), 0);
  // Repetition: token 5 at positions 1 and 6 of sample 1; [PAD] pairs never count.
  EXPECT_EQ(*acc.at(Stat::SameTokenAll), 1);
  EXPECT_TRUE(check_invariants(acc).empty());
}

TEST_P(HandBuilt, RulesCarryTheirOwnAttentionThresholdAndSeparators) {
  const HandBatch b = repeated_tokens();  // 8 valid: uniform attention is 0.125 per key
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kAbs, 0.5), rule(kAbs, 0.5), rule(kAbs, 0.5)};
  opt.rules[1].attention_threshold = 0.2;  // above 1/8: no pair is high-attention
  opt.attention_threshold = 0.1;
  opt.separator_ids = {102};
  opt.rule_separator_ids = {{}, {}, {10}};  // rule 2: token 'a' (3 keys of 8) is the separator
  Accumulator acc(shape_for(3, 1, 1, 8, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, one_hot_vectors(b), uniform_attention(b, 1));
  EXPECT_EQ(acc.at(Stat::InAttention, 0)[0], 4);
  EXPECT_EQ(acc.at(Stat::HighAttentionAll, 0)[0], 28);
  EXPECT_EQ(acc.at(Stat::InAttention, 1)[0], 0);
  EXPECT_EQ(acc.at(Stat::HighAttentionAll, 1)[0], 0);
  EXPECT_EQ(acc.at(Stat::SeparatorMass, 0)[0], int64_t(0.125 * kFixedPointScale));
  EXPECT_EQ(acc.at(Stat::SeparatorMass, 2)[0], int64_t(0.375 * kFixedPointScale));
  EXPECT_TRUE(check_invariants(acc).empty());
}

// Attention on each separator (SPEC §4.7), by hand: [CLS] a b a c b a [SEP] with 'a' (3 keys),
// 'c' (1 key) and [SEP] as separators, two heads. Head 0: row i puts 1/3 on each 'a' key when
// i is even and everything on [SEP] when i is odd. Head 1: uniform (1/8 a key).
TEST_P(HandBuilt, AttentionOnEachSeparatorAndTheirSumExactly) {
  const HandBatch b = repeated_tokens();
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kAbs, 0.5), rule(kAbs, 0.5)};
  opt.separator_ids = {102, 10, 102};       // [SEP] listed twice: counted once
  opt.rule_separator_ids = {{}, {12, 10}};  // rule 1: 'c' and 'a'
  EXPECT_EQ(separator_tokens(opt), (std::vector<int64_t>{102, 10, 12}));
  Accumulator acc(shape_for(2, 1, 2, 8, opt));
  at::Tensor att = uniform_attention(b, 2);
  att[0][0].zero_();
  for (int64_t i = 0; i < 8; ++i)
    if (i % 2 == 0)
      for (int64_t k : {1, 3, 6}) att[0][0][i][k] = 1.0 / 3.0;
    else
      att[0][0][i][7] = 1.0;
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, one_hot_vectors(b).expand({1, 2, 8, 200}).contiguous(), att);
  const int64_t* by_token = acc.at(Stat::SeparatorMassByToken);  // [L=1, H=2, S=3]
  const auto fixed = [](double mass) { return int64_t(std::nearbyint(mass * kFixedPointScale)); };
  // Head 0: [SEP] gets the 4 odd rows' 1 each, of 8 rows: 0.5; 'a' the 4 even rows' 3 × 1/3.
  EXPECT_EQ(by_token[0], fixed(0.5));
  EXPECT_EQ(by_token[1], fixed(4.0 * (3.0 * (1.0 / 3.0)) / 8.0));
  EXPECT_EQ(by_token[2], 0);
  // Head 1: uniform, 1/8 a key: [SEP] 1/8, 'a' 3/8, 'c' 1/8.
  EXPECT_EQ(by_token[3], fixed(0.125));
  EXPECT_EQ(by_token[4], fixed(0.375));
  EXPECT_EQ(by_token[5], fixed(0.125));
  // A rule's mass is exactly the sum of its tokens' fixed-point masses.
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(acc.at(Stat::SeparatorMass, 0)[h], by_token[h * 3 + 0] + by_token[h * 3 + 1]);
    EXPECT_EQ(acc.at(Stat::SeparatorMass, 1)[h], by_token[h * 3 + 2] + by_token[h * 3 + 1]);
  }
  EXPECT_TRUE(check_invariants(acc).empty());
}

TEST_P(HandBuilt, ProjectedMetricEqualsExplicitProjection) {
  // C = o (W Wᵀ) oᵀ equals the dot products of the projected vectors o W.
  const at::Tensor o = at::randn({2, 3, 5, 4}, at::kDouble);
  const at::Tensor w = at::randn({3, 4, 7}, at::kDouble);  // [H, d, hidden]
  const at::Tensor valid = at::ones({2, 5}, at::kBool);
  const at::Tensor via_metric = context_similarity(o, valid, projection_metric(w));
  const at::Tensor explicit_sim = context_similarity(at::matmul(o, w), valid);
  EXPECT_LT((via_metric - explicit_sim).abs().max().item<double>(), 1e-12);
}

TEST(Accumulator, MergeIsElementwiseSumAndChecksShape) {
  Accumulator a(shape_for(2, 1, 1, 4)), b(shape_for(2, 1, 1, 4)), other(shape_for(1, 1, 1, 4));
  a.at(Stat::HighPairs, 1)[0] = 3;
  b.at(Stat::HighPairs, 1)[0] = 4;
  *b.at(Stat::Samples) = 2;
  a.merge(b);
  EXPECT_EQ(a.at(Stat::HighPairs, 1)[0], 7);
  EXPECT_EQ(*a.at(Stat::Samples), 2);
  EXPECT_THROW(a.merge(other), InternalError);
}

// ------------------------------------------ real samples through a tiny random model -----

class BrownTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::kBrownPath)) return;
    dir_ = new test::TempDir();
    ModelConfig c = ModelConfig::preset("bert-tiny");
    write_random_checkpoint(c, 11, test::kVocabPath, (dir_->path / "m").string());
    model64_ = new TransformerEncoder(TransformerEncoder::load((dir_->path / "m").string(), at::kDouble));
    samples_ = new SampleSet(brown_samples(200, 5, 128));
    opt_.rules = {rule(kTop, 0.01), rule(kRel, 0.9), rule(kAbs, 0.0)};
    opt_.separator_ids = {1012, 1010, 102};
    opt_.special_ids = {0, 100, 101, 102, 103};
  }
  static void TearDownTestSuite() {
    delete samples_;
    delete model64_;
    delete dir_;
  }
  void SetUp() override { CTXSIM_REQUIRE_DATA(); }
  // `count` samples of T tokens drawn with `seed` from the first 40 Brown documents.
  static SampleSet brown_samples(int64_t count, uint64_t seed, int32_t T) {
    CorpusOptions co;
    co.path = test::kBrownPath;
    co.max_documents = 40;
    BertTokenizer tok(Vocab::load(test::kVocabPath), TokenizerOptions{});
    SampleOptions so;
    so.num_samples = count;
    so.seed = seed;
    so.seq_len = T;
    const SampleFrame frame = SampleFrame::wordpiece(tok.vocab());
    return build_samples(tokenize_corpus(read_corpus(co), tok, frame), so, frame);
  }
  // Accumulates samples [first, last) in batches of `batch`.
  static Accumulator accumulate(const Analysis& an, int64_t first, int64_t last, int64_t batch) {
    Accumulator acc(an.shape(samples_->seq_len));
    for (int64_t b0 = first; b0 < last; b0 += batch) {
      const int64_t B = std::min(batch, last - b0);
      an.run_batch(BatchSamples::of(*samples_, b0, B), acc);
    }
    return acc;
  }
  static test::TempDir* dir_;
  static TransformerEncoder* model64_;
  static SampleSet* samples_;
  static StatisticsOptions opt_;
};
test::TempDir* BrownTiny::dir_ = nullptr;
TransformerEncoder* BrownTiny::model64_ = nullptr;
SampleSet* BrownTiny::samples_ = nullptr;
StatisticsOptions BrownTiny::opt_;

TEST_F(BrownTiny, InvariantsHoldOn200Samples) {
  const Analysis an(*model64_, opt_, false);
  const Accumulator acc = accumulate(an, 0, 200, 8);
  const auto bad = check_invariants(acc);
  EXPECT_TRUE(bad.empty()) << bad.front();
  EXPECT_EQ(*acc.at(Stat::Samples), 200);
  // Rule 0 selects 1% of each sample's pairs: high_pairs = Σ max(1, round(0.01 P)) per head.
  int64_t expect = 0;
  for (auto n : samples_->n_valid) {
    const int64_t P = int64_t(n) * (n - 1) / 2;
    expect += std::min<int64_t>(P, std::max<int64_t>(1, int64_t(std::round(0.01 * double(P)))));
  }
  for (int64_t lh = 0; lh < 4; ++lh) EXPECT_EQ(acc.at(Stat::HighPairs, 0)[lh], expect);
  // absolute 0.0 keeps only non-negative pairs; with every rule selecting, samples have anchors.
  EXPECT_EQ(acc.at(Stat::SamplesWithPairs, 0)[0], 200);
}

TEST_F(BrownTiny, MergingHalvesEqualsOnePass) {
  const Analysis an(*model64_, opt_, false);
  const Accumulator all = accumulate(an, 0, 64, 8);
  Accumulator a = accumulate(an, 0, 32, 8);
  a.merge(accumulate(an, 32, 64, 8));
  EXPECT_SAME_ACCUMULATORS(a, all);
}

TEST_F(BrownTiny, BatchSizeDoesNotChangeIntegerAggregates) {
  const Analysis an(*model64_, opt_, false);
  EXPECT_SAME_ACCUMULATORS(accumulate(an, 0, 49, 1), accumulate(an, 0, 49, 7));
}

TEST_F(BrownTiny, SparseAndDensePathsAgree) {
  StatisticsOptions dense = opt_;
  dense.dense_only = true;
  // A threshold that selects few pairs, so that the sparse path is taken for it too.
  dense.rules.push_back(rule(kRel, 0.999));
  StatisticsOptions sparse = dense;
  sparse.dense_only = false;
  EXPECT_SAME_ACCUMULATORS(accumulate(Analysis(*model64_, sparse, false), 0, 40, 8),
                           accumulate(Analysis(*model64_, dense, false), 0, 40, 8));
}

// Long contexts: the attention handed to the statistics in tiles of query rows (no [B, H, T, T]
// maps) gives the whole maps' results: every integer aggregate and every per-sample value, in
// float64 and float32, on the sparse and the dense paths, at T = 320 (tiles of 128, 128, 64 rows).
TEST_F(BrownTiny, TiledAttentionGivesTheWholeMapsResults) {
  const SampleSet long_samples = brown_samples(10, 6, 320);
  StatisticsOptions sparse = opt_;
  sparse.attention_threshold = 0.004;  // a random model's maps are near 1/T: some pairs above it
  StatisticsOptions dense = sparse;
  dense.dense_only = true;
  for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const TransformerEncoder m = TransformerEncoder::load((dir_->path / "m").string(), dtype);
    for (const StatisticsOptions& o : {sparse, dense}) {
      const Analysis whole(m, o, false, 8192), tiled(m, o, false, 128);
      Accumulator a(whole.shape(320)), b(tiled.shape(320));
      for (int64_t b0 = 0; b0 < 10; b0 += 4) {
        const BatchSamples bs = BatchSamples::of(long_samples, b0, std::min<int64_t>(4, 10 - b0));
        const PerSampleStats x = whole.run_batch(bs, a), y = tiled.run_batch(bs, b);
        EXPECT_EQ(x.anchor_token, y.anchor_token);
        EXPECT_EQ(x.anchor_share, y.anchor_share);
        EXPECT_EQ(x.high_pairs, y.high_pairs);
      }
      EXPECT_SAME_ACCUMULATORS(a, b);
      EXPECT_GT(a.at(Stat::HighAttentionAll, 0)[0], 0);
      EXPECT_GT(*a.at(Stat::SeparatorMassByToken), 0);
    }
  }
  EXPECT_EQ(attention_tile_rows(0, 128), 0);    // T = 128: the whole maps, one block of products
  EXPECT_EQ(attention_tile_rows(0, 129), 128);  // beyond: tiles of 128 rows
  EXPECT_EQ(attention_tile_rows(0, 8192), 128);
  EXPECT_EQ(attention_tile_rows(200, 128), 0);  // asked for more rows than T: whole
  EXPECT_EQ(attention_tile_rows(8192, 512), 0);
  EXPECT_EQ(attention_tile_rows(200, 512), 200);
}

TEST_F(BrownTiny, ProjectedVectorsGiveSoundStatistics) {
  const Analysis an(*model64_, opt_, true);
  const Accumulator acc = accumulate(an, 0, 40, 8);
  EXPECT_TRUE(check_invariants(acc).empty());
  EXPECT_GT(acc.at(Stat::HighPairs, 0)[0], 0);
}

}  // namespace
}  // namespace ctxsim

// ------------------------------------ an independent, plain implementation of SPEC §3-§4 -----
namespace ctxsim {
namespace {

// Everything from SPEC's words with loops over pairs: no kernels, no shortcuts. vectors
// [B, H, T, k] and attention [B, H, T, T] in float64.
void reference_layer(const StatisticsOptions& opt, const BatchSamples& s, int64_t layer, const at::Tensor& vectors,
                     const at::Tensor& attention, Accumulator& acc) {
  const int64_t B = s.batch, T = s.seq_len, H = vectors.size(1), K = vectors.size(3), V = acc.shape().vocab;
  const auto o = vectors.accessor<double, 4>();
  const auto a = attention.accessor<double, 4>();
  const auto special = [&](int32_t id) { return std::find(opt.special_ids.begin(), opt.special_ids.end(), id) != opt.special_ids.end(); };
  for (size_t r = 0; r < opt.rules.size(); ++r) {
    const SelectionRule& rule = opt.rules[r];
    const double beta = std::isnan(rule.attention_threshold) ? opt.attention_threshold : rule.attention_threshold;
    const auto& seps =
        r < opt.rule_separator_ids.size() && !opt.rule_separator_ids[r].empty() ? opt.rule_separator_ids[r] : opt.separator_ids;
    for (int64_t b = 0; b < B; ++b) {
      const int32_t* tok = s.token_ids + b * T;
      const int16_t* sent = s.sentence_ids + b * T;
      const int64_t n = s.n_valid[b];
      std::set<int32_t> anchors_of_sample;
      for (int64_t h = 0; h < H; ++h) {
        struct Pair {
          double c;
          int64_t i, j;
        };
        std::vector<Pair> all;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = i + 1; j < n; ++j) {
            double c = 0;
            for (int64_t q = 0; q < K; ++q) c += o[b][h][i][q] * o[b][h][j][q];
            all.push_back({c, i, j});
          }
        std::vector<Pair> sel;
        const int64_t P = int64_t(all.size());
        if (rule.kind == SelectionRule::Kind::TopFraction && P > 0) {
          std::sort(all.begin(), all.end(),
                    [](const Pair& x, const Pair& y) { return x.c != y.c ? x.c > y.c : (x.i != y.i ? x.i < y.i : x.j < y.j); });
          const int64_t k = std::min<int64_t>(P, std::max<int64_t>(1, int64_t(std::round(rule.value * double(P)))));
          sel.assign(all.begin(), all.begin() + k);
        } else if (rule.kind == SelectionRule::Kind::RelativeToMax) {
          double mx = -INFINITY;
          for (const auto& p : all) mx = std::max(mx, p.c);
          if (mx > 0)
            for (const auto& p : all)
              if (p.c >= rule.value * mx) sel.push_back(p);
        } else if (rule.kind == SelectionRule::Kind::Absolute) {
          for (const auto& p : all)
            if (p.c >= rule.value) sel.push_back(p);
        }
        const auto high_att = [&](int64_t i, int64_t j) { return std::max(a[b][h][i][j], a[b][h][j][i]) >= beta; };
        const auto same_sentence = [&](const Pair& p) { return sent[p.i] >= 0 && sent[p.i] == sent[p.j]; };
        const auto same_token = [&](const Pair& p) { return tok[p.i] == tok[p.j] && !special(tok[p.i]); };
        const auto same_word = [&](const Pair& p) {
          return s.word_ids && s.word_ids[b * T + p.i] >= 0 && s.word_ids[b * T + p.i] == s.word_ids[b * T + p.j];
        };
        std::map<int32_t, int64_t> ends;
        for (const auto& p : sel) {
          ++acc.at(Stat::DistanceHist, int64_t(r))[(layer * H + h) * T + (p.j - p.i)];
          acc.at(Stat::SameSentence, int64_t(r))[layer * H + h] += same_sentence(p);
          acc.at(Stat::SentenceEligible, int64_t(r))[layer * H + h] += sent[p.i] >= 0 && sent[p.j] >= 0;
          acc.at(Stat::SameToken, int64_t(r))[layer * H + h] += same_token(p);
          acc.at(Stat::SameWord, int64_t(r))[layer * H + h] += same_word(p);
          acc.at(Stat::InAttention, int64_t(r))[layer * H + h] += high_att(p.i, p.j);
          ++ends[tok[p.i]];
          ++ends[tok[p.j]];
        }
        acc.at(Stat::HighPairs, int64_t(r))[layer * H + h] += int64_t(sel.size());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = i + 1; j < n; ++j) acc.at(Stat::HighAttentionAll, int64_t(r))[layer * H + h] += high_att(i, j);
        // SPEC §4.7: per separator token the mean mass of the valid rows, in fixed point; a
        // set's mass is the sum of its (distinct) tokens' values.
        const std::vector<int64_t> tokens = separator_tokens(opt);
        for (size_t u = 0; u < tokens.size(); ++u) {
          double total = 0;
          for (int64_t i = 0; i < n; ++i) {
            double row = 0;
            for (int64_t p = 0; p < n; ++p)
              if (tok[p] == tokens[u]) row += a[b][h][i][p];
            total += row;
          }
          const int64_t fixed = int64_t(std::nearbyint(total / double(n) * kFixedPointScale));
          if (std::find(seps.begin(), seps.end(), tokens[u]) != seps.end()) acc.at(Stat::SeparatorMass, int64_t(r))[layer * H + h] += fixed;
          if (r == 0) acc.at(Stat::SeparatorMassByToken)[(layer * H + h) * int64_t(tokens.size()) + int64_t(u)] += fixed;
        }
        // The attention sink: the valid rows' mean mass on position 0, fixed point.
        double first = 0;
        for (int64_t i = 0; i < n; ++i) first += a[b][h][i][0];
        if (n > 0) acc.at(Stat::FirstTokenMass, int64_t(r))[layer * H + h] += int64_t(std::nearbyint(first / double(n) * kFixedPointScale));
        // SPEC §9 by the d x d route: (tr OᵀO)^2 / |OᵀO|_F^2 over the valid rows, on its grid.
        std::vector<double> gram(size_t(K * K), 0.0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t p = 0; p < K; ++p)
            for (int64_t q = 0; q < K; ++q) gram[size_t(p * K + q)] += o[b][h][i][p] * o[b][h][i][q];
        double trace = 0, square = 0;
        for (int64_t p = 0; p < K; ++p) trace += gram[size_t(p * K + p)];
        for (double g : gram) square += g * g;
        if (square > 0) {
          acc.at(Stat::EffectiveRank, int64_t(r))[layer * H + h] +=
              std::llround(trace * trace / square * kEffectiveRankGrid) * int64_t(kFixedPointScale / kEffectiveRankGrid);
          ++acc.at(Stat::EffectiveRankSamples, int64_t(r))[layer * H + h];
        }
        if (sel.empty()) continue;
        int32_t anchor = -1;
        int64_t best = -1;
        for (const auto& [id, count] : ends)  // ascending ids: the first maximum is the smaller id
          if (count > best) {
            best = count;
            anchor = id;
          }
        anchors_of_sample.insert(anchor);
        ++acc.at(Stat::SamplesWithPairs, int64_t(r))[layer * H + h];
        ++acc.at(Stat::AnchorCounts, int64_t(r))[(layer * H + h) * V + anchor];
        for (const auto& p : sel) {
          const bool touch = tok[p.i] == anchor || tok[p.j] == anchor;
          acc.at(Stat::AnchorPairs, int64_t(r))[layer * H + h] += touch;
          acc.at(Stat::Noise, int64_t(r))[layer * H + h] += !(touch || same_sentence(p) || same_token(p));
        }
      }
      acc.at(Stat::DistinctAnchors, int64_t(r))[layer] += int64_t(anchors_of_sample.size());
    }
  }
  if (layer > 0) return;
  for (int64_t b = 0; b < B; ++b) {  // baselines, once per batch
    const int32_t* tok = s.token_ids + b * T;
    const int16_t* sent = s.sentence_ids + b * T;
    const int64_t n = s.n_valid[b];
    ++*acc.at(Stat::Samples);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) {
        ++*acc.at(Stat::ValidPairs);
        ++acc.at(Stat::DistanceAll)[j - i];
        *acc.at(Stat::SentenceEligibleAll) += sent[i] >= 0 && sent[j] >= 0;
        *acc.at(Stat::SameSentenceAll) += sent[i] >= 0 && sent[i] == sent[j];
        *acc.at(Stat::SameTokenAll) += tok[i] == tok[j] && !special(tok[i]);
        *acc.at(Stat::SameWordAll) += s.word_ids && s.word_ids[b * T + i] >= 0 && s.word_ids[b * T + i] == s.word_ids[b * T + j];
      }
  }
}

TEST_F(BrownTiny, KernelsMatchAPlainImplementationOfTheSpecCountForCount) {
  StatisticsOptions opt = opt_;
  opt.rules.push_back(rule(kTop, 0.2));    // dense top-k
  opt.rules.push_back(rule(kRel, 0.999));  // few pairs
  opt.rules.push_back(rule(kAbs, 1e9));    // none
  opt.rules[2].attention_threshold = 0.02;
  opt.rule_separator_ids = {{}, {1012}, {}};
  for (const bool dense : {false, true}) {
    SCOPED_TRACE(dense ? "dense" : "sparse");
    opt.dense_only = dense;
    const Analysis an(*model64_, opt, false);
    const int64_t T = samples_->seq_len, B = 6, first = 17;
    const BatchSamples bs = BatchSamples::of(*samples_, first, B);
    Accumulator fast(an.shape(T)), ref(an.shape(T));
    BatchStatistics stats(opt, bs, fast);
    const at::Tensor ids = at::from_blob(const_cast<int32_t*>(bs.token_ids), {B, T}, at::kInt).to(at::kLong);
    const at::Tensor valid =
        at::arange(T).view({1, T}) < at::from_blob(const_cast<int16_t*>(bs.n_valid), {B}, at::kShort).to(at::kLong).view({B, 1});
    model64_->forward(ids, valid, {}, [&](const LayerOutputs& o) {
      stats.add_layer(o.layer, o.context, o.attention);
      reference_layer(opt, bs, o.layer, o.context.contiguous(), o.attention.contiguous(), ref);
    });
    EXPECT_SAME_ACCUMULATORS(fast, ref);
    EXPECT_GT(fast.at(Stat::HighPairs, 3)[0], 0);
    EXPECT_EQ(fast.at(Stat::HighPairs, 5)[0], 0);
  }
}

// The whole-tensor path of GPU ranks (stages/stats/tensor_statistics.h), run here on CPU tensors:
// count for count the kernels' accumulator, per-sample results and stored selections, in float64.
TEST_F(BrownTiny, TensorPathMatchesTheKernelsCountForCount) {
  StatisticsOptions opt = opt_;
  opt.rules.push_back(rule(kTop, 0.2));
  opt.rules.push_back(rule(kRel, 0.999));
  opt.rules.push_back(rule(kAbs, 1e9));
  opt.rules[2].attention_threshold = 0.02;
  opt.rule_separator_ids = {{}, {1012}, {}};
  const Analysis an(*model64_, opt, false);
  const int64_t T = samples_->seq_len;
  Accumulator kernels(an.shape(T)), tensors(an.shape(T));
  at::Tensor device_acc = at::zeros({int64_t(tensors.buffer().size())}, at::kLong);
  for (int64_t first = 0; first < 40; first += 8) {
    const BatchSamples bs = BatchSamples::of(*samples_, first, 8);
    const PerSampleStats a = an.run_batch(bs, kernels);
    const PerSampleStats b = an.run_batch(bs, tensors, nullptr, device_acc);
    EXPECT_EQ(a.anchor_token, b.anchor_token) << "batch at " << first;
    EXPECT_EQ(a.high_pairs, b.high_pairs) << "batch at " << first;
    EXPECT_EQ(a.anchor_share, b.anchor_share) << "batch at " << first;
  }
  const int64_t* d = device_acc.data_ptr<int64_t>();
  for (size_t i = 0; i < tensors.buffer().size(); ++i) tensors.buffer()[i] += d[i];
  EXPECT_SAME_ACCUMULATORS(kernels, tensors);
  EXPECT_GT(kernels.at(Stat::HighPairs, 3)[0], 0);
  EXPECT_TRUE(check_invariants(tensors).empty());
  // The stored selection of an example: the same matrix from both paths.
  const BatchSamples bs = BatchSamples::of(*samples_, 0, 4);
  Accumulator scratch(an.shape(T));
  for (int64_t r = 0; r < 4; ++r) {
    at::Tensor from_kernels, from_tensors;
    an.run_batch(bs, scratch, [&](int64_t layer, const at::Tensor&, const at::Tensor&, const BatchStatistics& st) {
      if (layer == 1) from_kernels = st.selection_matrix(r, 2);
    });
    at::Tensor scratch_acc = at::zeros_like(device_acc);
    an.run_batch(
        bs, scratch,
        [&](int64_t layer, const at::Tensor&, const at::Tensor&, const BatchStatistics& st) {
          if (layer == 1) from_tensors = st.selection_matrix(r, 2);
        },
        scratch_acc);
    EXPECT_TRUE(at::equal(from_kernels, from_tensors)) << "rule " << r;
  }
}

TEST_F(BrownTiny, ThreadCountDoesNotChangeResults) {
  const Analysis an(*model64_, opt_, false);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const Accumulator one = accumulate(an, 0, 24, 8);
  at::set_num_threads(2);
  const Accumulator two = accumulate(an, 0, 24, 8);
  at::set_num_threads(threads);
  EXPECT_SAME_ACCUMULATORS(one, two);
}

// Random models tie massively in float32: every similarity equal. The counting path must still
// take exactly k pairs, the first in (i, j) order, on both paths.
TEST_P(HandBuilt, Float32TiesOnALongSample) {
  const int64_t T = 96;
  HandBatch b{T, std::vector<int32_t>(size_t(T), 7), std::vector<int16_t>(size_t(T), 0), {int16_t(T)}};
  StatisticsOptions opt;
  opt.dense_only = GetParam();
  opt.rules = {rule(kTop, 0.01), rule(kTop, 0.3)};
  const at::Tensor v = at::full({1, 1, T, 8}, 0.25f, at::kFloat);
  Accumulator acc(shape_for(2, 1, 1, T, opt));
  BatchStatistics stats(opt, b.view(), acc);
  stats.add_layer(0, v, uniform_attention(b, 1).to(at::kFloat));
  const int64_t P = T * (T - 1) / 2;
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t k = int64_t(std::round((r ? 0.3 : 0.01) * double(P)));
    EXPECT_EQ(acc.at(Stat::HighPairs, r)[0], k);
    // The first k pairs in (i, j) order: row 0 holds T - 1 of them, then row 1, ...
    const at::Tensor m = stats.selection_matrix(r, 0)[0];
    int64_t expect_rows = 0, left = k;
    for (int64_t i = 0; left > 0; ++i) left -= std::min<int64_t>(left, T - 1 - i), ++expect_rows;
    EXPECT_EQ(m.sum(1).gt(0).sum().item<int64_t>(), expect_rows);
    EXPECT_EQ(m[0].sum().item<int64_t>(), std::min<int64_t>(k, T - 1));
  }
  // The tensor path breaks the ties the same way (a stable sort in (i, j) order).
  Accumulator baselines(shape_for(2, 1, 1, T, opt));
  at::Tensor device_acc = at::zeros({int64_t(baselines.buffer().size())}, at::kLong);
  BatchStatistics tensor_stats(opt, b.view(), baselines, device_acc);
  tensor_stats.add_layer(0, v, uniform_attention(b, 1).to(at::kFloat));
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(at::equal(stats.selection_matrix(r, 0), tensor_stats.selection_matrix(r, 0))) << "rule " << r;
    EXPECT_EQ(device_acc[baselines.field(Stat::HighPairs).offset + size_t(r) * baselines.field(Stat::HighPairs).size].item<int64_t>(),
              acc.at(Stat::HighPairs, r)[0]);
  }
}

}  // namespace
}  // namespace ctxsim
