// Topic segmentation (SPEC §6, issue 24): Pk and WindowDiff by hand from the definitions, the
// Choi benchmark's draw, block comparison with depth scores, C99's rank matrix and divisive
// clustering, the baselines, and TextTiling and C99 on a constructed three-topic document.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "stages/base/error.h"
#include "stages/base/random.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/segment/choi.h"
#include "stages/segment/encode.h"
#include "stages/segment/lexical.h"
#include "stages/segment/metrics.h"
#include "stages/segment/similarity_methods.h"
#include "stages/segment/windows.h"
#include "stages/text/samples.h"
#include "test_helpers.h"

namespace ctxsim::segment {
namespace {

// ---- metrics ---------------------------------------------------------------------------------

TEST(ProbeDistance, RoundedHalfAwayAtLeastTwoAtMostNMinusOne) {
  EXPECT_EQ(probe_distance(10, 0), 5);   // 10/2
  EXPECT_EQ(probe_distance(10, 2), 2);   // 10/6 = 1.67 -> 2
  EXPECT_EQ(probe_distance(11, 0), 6);   // 5.5 -> 6 (half away from zero)
  EXPECT_EQ(probe_distance(5, 0), 3);    // 2.5 -> 3
  EXPECT_EQ(probe_distance(100, 9), 5);  // 100/20
  EXPECT_EQ(probe_distance(10, 9), 2);   // 0.5 -> 1, raised to 2
  EXPECT_EQ(probe_distance(3, 0), 2);    // 1.5 -> 2: n < 2k, one probe
  EXPECT_EQ(probe_distance(2, 0), 1);    // 2 would leave no probe: clamped to n-1
  EXPECT_EQ(probe_distance(1, 0), 0);    // one sentence: no probe at all
}

TEST(Metrics, NoBoundariesOnEitherSideIsPerfect) {
  const auto s = score_segmentation({}, {}, 10);
  EXPECT_EQ(s.k, 5);
  EXPECT_EQ(s.probes, 5);
  EXPECT_EQ(s.pk, 0.0);
  EXPECT_EQ(s.window_diff, 0.0);
}

TEST(Metrics, HypothesisEqualToReferenceIsPerfect) {
  const Boundaries r{3, 6};
  EXPECT_EQ(pk(r, r, 10), 0.0);
  EXPECT_EQ(window_diff(r, r, 10), 0.0);
  EXPECT_EQ(score_segmentation(r, r, 10).probes, 8);  // k = 2
}

TEST(Metrics, AllBoundariesAgainstNoneIsWrongEverywhere) {
  const Boundaries all{1, 2, 3, 4, 5, 6, 7, 8, 9};
  // R empty: k = 5; every window (i, i+5] holds 5 hypothesis boundaries and no reference one.
  EXPECT_EQ(pk({}, all, 10), 1.0);
  EXPECT_EQ(window_diff({}, all, 10), 1.0);
  // R all: k = max(2, round(0.5)) = 2; every window holds 2 reference boundaries and none.
  EXPECT_EQ(pk(all, {}, 10), 1.0);
  EXPECT_EQ(window_diff(all, {}, 10), 1.0);
}

TEST(Metrics, OffByOneBoundary) {
  // n = 12, R = {4, 8}, H = {5, 8}, k = 2, probes i = 0…9 over windows (i, i+2]: R counts
  // 0 0 1 1 0 0 1 1 0 0, H counts 0 0 0 1 1 0 1 1 0 0: they differ at i = 2 and i = 4.
  const auto s = score_segmentation({4, 8}, {5, 8}, 12);
  EXPECT_EQ(s.k, 2);
  EXPECT_DOUBLE_EQ(s.pk, 2.0 / 10);
  EXPECT_DOUBLE_EQ(s.window_diff, 2.0 / 10);
}

TEST(Metrics, WindowDiffCountsExtraBoundariesPkDoesNot) {
  // n = 12, R = {4}, H = {4, 5}, k = round(12/4) = 3, probes i = 0…8 over (i, i+3]: R counts
  // 0 1 1 1 0 0 0 0 0, H counts 0 1 2 2 1 0 0 0 0. "Same segment" differs only at i = 4;
  // the counts differ at i = 2, 3, 4.
  const auto s = score_segmentation({4}, {4, 5}, 12);
  EXPECT_EQ(s.k, 3);
  EXPECT_DOUBLE_EQ(s.pk, 1.0 / 9);
  EXPECT_DOUBLE_EQ(s.window_diff, 3.0 / 9);
}

TEST(Metrics, DocumentsShorterThanTwoProbeDistances) {
  // n = 3, R = {}: k = 2, one probe (sentences 0 and 2).
  EXPECT_EQ(score_segmentation({}, {1}, 3).probes, 1);
  EXPECT_EQ(pk({}, {1}, 3), 1.0);
  EXPECT_EQ(pk({}, {}, 3), 0.0);
  EXPECT_EQ(pk({2}, {1}, 3), 0.0);              // both split sentences 0 and 2 apart
  EXPECT_EQ(window_diff({2}, {1, 2}, 3), 1.0);  // but not with the same number of boundaries
  // n = 2: k clamped to 1, one probe comparing the two sentences.
  const auto two = score_segmentation({1}, {}, 2);
  EXPECT_EQ(two.k, 1);
  EXPECT_EQ(two.probes, 1);
  EXPECT_EQ(two.pk, 1.0);
  // n = 1: no probe; nothing can be wrong.
  const auto one = score_segmentation({}, {}, 1);
  EXPECT_EQ(one.probes, 0);
  EXPECT_EQ(one.pk, 0.0);
  EXPECT_EQ(one.window_diff, 0.0);
}

TEST(Metrics, MacroAverage) {
  const auto m = mean_scores({{0.5, 1.0, 2, 4}, {0.0, 0.5, 3, 9}});
  EXPECT_DOUBLE_EQ(m.pk, 0.25);
  EXPECT_DOUBLE_EQ(m.window_diff, 0.75);
  EXPECT_EQ(mean_scores({}).pk, 0.0);
}

void expect_error(const Boundaries& b, int32_t n, const std::string& part) {
  try {
    validate_boundaries(b, n, "hypothesis");
    ADD_FAILURE() << "no error for n = " << n;
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), "hypothesis");
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
}

TEST(Metrics, InvalidBoundariesNamed) {
  expect_error({5, 3}, 10, "boundary #1 (3) does not come after the previous one (5)");
  expect_error({3, 3}, 10, "boundary #1 (3) does not come after");
  expect_error({0, 4}, 10, "boundary #0 (0) is outside 1…9");
  expect_error({10}, 10, "boundary #0 (10) is outside 1…9");
  expect_error({}, 0, "at least one sentence");
  EXPECT_NO_THROW(validate_boundaries({1, 9}, 10, "x"));
  EXPECT_THROW(score_segmentation({4}, {12}, 10), Error);
  try {
    score_segmentation({11}, {}, 10);
  } catch (const Error& e) { EXPECT_EQ(e.where(), "reference"); }
}

// ---- Choi's benchmark --------------------------------------------------------------------------

// 40 documents of 3…22 sentences, indices 100, 103, 106, … (not their positions in the list).
std::vector<EligibleDocument> eligible_documents() {
  std::vector<EligibleDocument> e;
  for (int32_t i = 0; i < 40; ++i) e.push_back({100 + 3 * i, 3 + (i * 7) % 20});
  return e;
}

bool same(const std::vector<ChoiDocument>& a, const std::vector<ChoiDocument>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].boundaries != b[i].boundaries || a[i].subset != b[i].subset || a[i].segments.size() != b[i].segments.size()) return false;
    for (size_t s = 0; s < a[i].segments.size(); ++s)
      if (a[i].segments[s].document != b[i].segments[s].document || a[i].segments[s].sentences != b[i].segments[s].sentences) return false;
  }
  return true;
}

TEST(Choi, DeterministicAndSeedDependent) {
  const auto e = eligible_documents();
  const auto s = choi_standard_subset("3-11");
  EXPECT_TRUE(same(choi_test_documents(e, s, 7), choi_test_documents(e, s, 7)));
  EXPECT_FALSE(same(choi_test_documents(e, s, 7), choi_test_documents(e, s, 8)));
}

TEST(Choi, EachTestDocumentIsWellFormed) {
  const auto e = eligible_documents();
  std::map<int32_t, int32_t> length;
  for (const auto& d : e) length[d.document] = d.sentences;
  bool short_document_used = false;
  for (const auto& subset : choi_standard_subsets()) {
    const auto docs = choi_test_documents(e, subset, 42);
    ASSERT_EQ(docs.size(), static_cast<size_t>(subset.documents));
    for (const auto& t : docs) {
      EXPECT_EQ(t.subset, subset.name);
      ASSERT_EQ(t.segments.size(), static_cast<size_t>(kChoiSegments));
      std::set<int32_t> used;
      Boundaries starts;
      int32_t total = 0;
      for (const auto& seg : t.segments) {
        EXPECT_TRUE(used.insert(seg.document).second) << "document " << seg.document << " twice";
        ASSERT_TRUE(length.count(seg.document));
        EXPECT_GE(seg.sentences, subset.min_sentences);
        EXPECT_LE(seg.sentences, subset.max_sentences);
        EXPECT_LE(seg.sentences, length[seg.document]);  // never more than the document has
        short_document_used |= length[seg.document] < subset.max_sentences;
        if (total > 0) starts.push_back(total);
        total += seg.sentences;
      }
      EXPECT_EQ(t.boundaries, starts);
      EXPECT_EQ(t.total_sentences, total);
      EXPECT_NO_THROW(validate_boundaries(t.boundaries, t.total_sentences, "gold"));
    }
  }
  // Documents shorter than the subset's longest segment still serve for shorter segments.
  EXPECT_TRUE(short_document_used);
}

TEST(Choi, BenchmarkIsTheFourSubsetsWithTheirOwnSeeds) {
  const auto e = eligible_documents();
  const auto all = choi_benchmark(e, 5);
  ASSERT_EQ(all.size(), 700u);
  EXPECT_EQ(all[0].subset, "3-11");
  EXPECT_EQ(all[400].subset, "3-5");
  EXPECT_EQ(all[500].subset, "6-8");
  EXPECT_EQ(all[699].subset, "9-11");
  const std::vector<ChoiDocument> first(all.begin() + 400, all.begin() + 500);
  EXPECT_TRUE(same(first, choi_test_documents(e, choi_standard_subset("3-5"), choi_subset_seed(5, 1))));
  SplitMix64 r(5);
  EXPECT_EQ(choi_subset_seed(5, 0), r.next());
  EXPECT_EQ(choi_subset_seed(5, 1), r.next());
}

TEST(Choi, TooFewLongDocumentsIsAClearError) {
  std::vector<EligibleDocument> e;
  for (int32_t i = 0; i < 9; ++i) e.push_back({i, 11});
  for (int32_t i = 9; i < 50; ++i) e.push_back({i, 10});
  try {
    choi_test_documents(e, choi_standard_subset("3-11"), 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("only 9 of the 50 documents"), std::string::npos) << err.what();
    EXPECT_NE(err.fix().find("corpus.split"), std::string::npos);
  }
  EXPECT_NO_THROW(choi_test_documents(e, choi_standard_subset("6-8"), 1));
  EXPECT_THROW(choi_standard_subset("2-4"), Error);
  EXPECT_THROW(choi_test_documents(e, {"bad", 5, 3, 10}, 1), Error);
}

// ---- block comparison ---------------------------------------------------------------------------

const std::vector<double> kFour{1.0, 0.8, 0.1, 0.2,  //
                                0.8, 1.0, 0.3, 0.1,  //
                                0.1, 0.3, 1.0, 0.6,  //
                                0.2, 0.1, 0.6, 1.0};

TEST(BlockComparison, GapScoresByHand) {
  const auto w1 = gap_scores(kFour, 4, 1);  // neighbours only
  ASSERT_EQ(w1.size(), 3u);
  EXPECT_DOUBLE_EQ(w1[0], 0.8);
  EXPECT_DOUBLE_EQ(w1[1], 0.3);
  EXPECT_DOUBLE_EQ(w1[2], 0.6);
  const auto w2 = gap_scores(kFour, 4, 2);  // {0}|{1,2}, {0,1}|{2,3}, {1,2}|{3}
  EXPECT_DOUBLE_EQ(w2[0], (0.8 + 0.1) / 2);
  EXPECT_DOUBLE_EQ(w2[1], (0.1 + 0.2 + 0.3 + 0.1) / 4);
  EXPECT_DOUBLE_EQ(w2[2], (0.1 + 0.6) / 2);
  EXPECT_THROW(gap_scores(kFour, 4, 0), Error);
}

TEST(BlockComparison, SmoothingIsAClippedMovingAverage) {
  const auto s = smooth_scores({3, 0, 6, 3}, 1);
  EXPECT_EQ(s, (std::vector<double>{1.5, 3, 3, 4.5}));
  EXPECT_EQ(smooth_scores({3, 0, 6}, 0), (std::vector<double>{3, 0, 6}));
}

TEST(BlockComparison, DepthScoresByHand) {
  // index 1: peaks 3 (left) and 2 (right) -> 2 + 1; index 3 and 4 (a plateau valley): left peak
  // 2, right peak 5 -> 7; index 5 on a slope: 0 + 1; index 7 at the end: left peak 5 -> 3.
  EXPECT_EQ(depth_scores({3, 1, 2, 0, 0, 4, 5, 2}), (std::vector<double>{0, 3, 0, 7, 7, 1, 0, 3}));
}

TEST(BlockComparison, PickByDepthRules) {
  const std::vector<double> d{0, 3, 0, 7, 7, 1, 0, 3};  // gaps 1…8, n = 9
  // Peaks: gaps 2, 4 (first of the plateau), 8. Cutoff 0.5: mean 2.625 - std 2.781/2 = 1.23.
  // Gap 8 leaves one sentence at the end: refused with min_segment 2.
  EXPECT_EQ(pick_by_depth(d, kEstimate, 0.5, 2), (Boundaries{2, 4}));
  EXPECT_EQ(pick_by_depth(d, kEstimate, 0.5, 1), (Boundaries{2, 4, 8}));
  EXPECT_EQ(pick_by_depth(d, kEstimate, -1.0, 1), (Boundaries{4}));  // cutoff mean + std = 5.41
  EXPECT_EQ(pick_by_depth(d, 1, 0.5, 2), (Boundaries{4}));
  EXPECT_EQ(pick_by_depth(d, 2, 0.5, 2), (Boundaries{2, 4}));
  // Four: peaks 4, 2; then separated gaps by depth: 6; then any gap by depth: 5.
  EXPECT_EQ(pick_by_depth(d, 4, 0.5, 2), (Boundaries{2, 4, 5, 6}));
  EXPECT_EQ(pick_by_depth(d, 0, 0.5, 2), Boundaries{});
  EXPECT_EQ(pick_by_depth(d, 8, 0.5, 2), (Boundaries{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(pick_by_depth(d, 9, 0.5, 2), Error);
  EXPECT_EQ(pick_by_depth({0, 0, 0}, kEstimate, 0.5, 1), Boundaries{});  // flat: no valley
  EXPECT_EQ(pick_by_depth({}, kEstimate, 0.5, 1), Boundaries{});         // one sentence
}

// n sentences in blocks: similarity 1 inside a block, `across` between blocks.
std::vector<double> block_matrix(const std::vector<int32_t>& sizes, double across) {
  std::vector<int32_t> topic;
  for (size_t t = 0; t < sizes.size(); ++t) topic.insert(topic.end(), static_cast<size_t>(sizes[t]), static_cast<int32_t>(t));
  const size_t n = topic.size();
  std::vector<double> m(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) m[i * n + j] = topic[i] == topic[j] ? 1.0 : across;
  return m;
}

TEST(BlockComparison, TwoDiagonalBlocks) {
  const auto m = block_matrix({4, 4}, 0.1);
  for (const int32_t smoothing : {0, 1}) {
    BlockOptions o;
    o.window = 2;
    o.smoothing_radius = smoothing;
    EXPECT_EQ(block_comparison(m, 8, o), (Boundaries{4})) << "smoothing " << smoothing;
    EXPECT_EQ(block_comparison(m, 8, o, 1), (Boundaries{4}));
  }
}

// ---- C99 -------------------------------------------------------------------------------------

TEST(C99, RankMatrixByHand) {
  const std::vector<double> s{1.0, 0.5, 0.2,  //
                              0.5, 1.0, 0.4,  //
                              0.2, 0.4, 1.0};
  // 3 x 3 mask: corners see 3 neighbours, edges 5, the centre 8; count the strictly lower ones.
  const auto r = rank_matrix(s, 3, 3);
  const std::vector<double> expected{2.0 / 3, 2.0 / 5, 0.0,      //
                                     2.0 / 5, 6.0 / 8, 1.0 / 5,  //
                                     0.0,     1.0 / 5, 2.0 / 3};
  for (size_t i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(r[i], expected[i]) << i;
  // An 11 x 11 mask covers the whole matrix: each entry against the other 8.
  const auto big = rank_matrix(s, 3, 11);
  EXPECT_DOUBLE_EQ(big[0], 6.0 / 8);                             // 1.0 beats .5 .2 .5 .4 .2 .4
  EXPECT_DOUBLE_EQ(big[1], 4.0 / 8);                             // 0.5 beats .2 .4 .2 .4
  EXPECT_DOUBLE_EQ(big[5], 2.0 / 8);                             // 0.4 beats .2 .2
  EXPECT_EQ(rank_matrix(s, 3, 1), std::vector<double>(9, 0.0));  // no neighbours
  EXPECT_THROW(rank_matrix(s, 3, 4), Error);
}

// A long text's rank matrix and sentence similarity go over the threads by rows: every cell the
// same bits on 1 and 2 threads (the sizes are above the point where the loops go parallel).
TEST(C99, LongTextsAreTheSameOnOneAndTwoThreads) {
  const int32_t n = 400;
  std::vector<double> sim(size_t(n) * n);
  SplitMix64 random(7);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = i; j < n; ++j) sim[size_t(i) * n + j] = sim[size_t(j) * n + i] = double(random.next() % 1000) / 1000.0;
  EncodedDocument e;
  e.L = 1, e.H = 2, e.S = n, e.d = 32;
  e.pooled.resize(size_t(e.L * e.H * e.S * e.d));
  for (auto& v : e.pooled) v = double(int64_t(random.next() % 2001) - 1000) / 997.0;
  const int before = at::get_num_threads();
  at::set_num_threads(1);
  const auto rank1 = rank_matrix(sim, n, 11);
  const auto sim1 = e.similarity(0, -1);
  at::set_num_threads(2);
  const auto rank2 = rank_matrix(sim, n, 11);
  const auto sim2 = e.similarity(0, -1);
  at::set_num_threads(before);
  EXPECT_EQ(rank1, rank2);
  EXPECT_EQ(sim1, sim2);
  // And each cell is the sum over heads of its two sentences' dot products, in order.
  double expect = 0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t q = 0; q < 32; ++q) expect += e.pooled[size_t((h * n + 3) * 32 + q)] * e.pooled[size_t((h * n + 250) * 32 + q)];
  EXPECT_NEAR(sim1[size_t(3) * n + 250], expect, 1e-12);
  EXPECT_EQ(sim1[size_t(3) * n + 250], sim1[size_t(250) * n + 3]);
}

TEST(C99, DivisiveClusteringByHand) {
  const auto m = block_matrix({2, 2}, 0.0);
  // D: whole 8/16 = .5; split at 1 or 3: 6/10; at 2: 8/8 = 1. Then both halves split to 1 with
  // D = 1 (6/6, 4/4): ties go to the earlier position.
  const auto d = divisive_clustering(m, 4, 3);
  EXPECT_EQ(d.order, (std::vector<int32_t>{2, 1, 3}));
  ASSERT_EQ(d.density.size(), 4u);
  EXPECT_DOUBLE_EQ(d.density[0], 0.5);
  EXPECT_DOUBLE_EQ(d.density[1], 1.0);
  EXPECT_DOUBLE_EQ(d.density[3], 1.0);
  EXPECT_EQ(divisive_clustering(m, 4, 10).order.size(), 3u);  // at most n-1 splits
  // Gains .5, 0, 0: mean 1/6, std sqrt(1/18) = .236, threshold .449: one boundary.
  EXPECT_EQ(choi_boundary_count(d.density, 1.2), 1);
}

TEST(C99, StoppingRuleByHand) {
  // Gains 1, .5, .1, 0: mean .4, std .394. c = 1.2: threshold .872, only the first gain.
  const std::vector<double> density{0, 1, 1.5, 1.6, 1.6};
  EXPECT_EQ(choi_boundary_count(density, 1.2), 1);
  EXPECT_EQ(choi_boundary_count(density, 0.0), 2);     // threshold .4: gains 1 and .5
  EXPECT_EQ(choi_boundary_count(density, -1.0), 3);    // threshold .006: also .1
  EXPECT_EQ(choi_boundary_count({0.5, 0.9}, 1.2), 0);  // one gain: std 0, never above the mean
  EXPECT_EQ(choi_boundary_count({0.5}, 1.2), 0);
}

TEST(C99, TwoDiagonalBlocks) {
  const auto m = block_matrix({5, 6}, 0.2);
  EXPECT_EQ(c99(m, 11, C99Options{}), (Boundaries{5}));
  EXPECT_EQ(c99(m, 11, C99Options{}, 1), (Boundaries{5}));
  EXPECT_EQ(c99(m, 11, C99Options{}, 0), Boundaries{});
  EXPECT_THROW(c99(m, 11, C99Options{}, 11), Error);
}

// ---- baselines ---------------------------------------------------------------------------------

TEST(Baselines, EvenlySpacedByHand) {
  EXPECT_EQ(evenly_spaced_boundaries(10, 1), (Boundaries{5}));
  EXPECT_EQ(evenly_spaced_boundaries(10, 2), (Boundaries{3, 7}));     // 3.33, 6.67
  EXPECT_EQ(evenly_spaced_boundaries(10, 3), (Boundaries{3, 5, 8}));  // 2.5 and 7.5 round up
  EXPECT_EQ(evenly_spaced_boundaries(10, 9), (Boundaries{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(evenly_spaced_boundaries(1, 0), Boundaries{});
  EXPECT_THROW(evenly_spaced_boundaries(10, 10), Error);
  EXPECT_THROW(evenly_spaced_boundaries(10, kEstimate), Error);
}

TEST(Baselines, RandomIsSeededDistinctAndInRange) {
  const auto a = random_boundaries(100, 9, 3);
  EXPECT_EQ(a.size(), 9u);
  EXPECT_NO_THROW(validate_boundaries(a, 100, "random"));
  EXPECT_EQ(a, random_boundaries(100, 9, 3));
  EXPECT_NE(a, random_boundaries(100, 9, 4));
  // The draw is draw_candidates over the 99 gaps, shifted to gap numbers.
  const auto c = draw_candidates(99, 9, 3);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], c[i] + 1);
  EXPECT_EQ(random_boundaries(5, 4, 1), (Boundaries{1, 2, 3, 4}));
  EXPECT_THROW(random_boundaries(5, 5, 1), Error);
}

// ---- lexical baselines -----------------------------------------------------------------------

TEST(Lexical, CountsAndCosines) {
  const auto t = term_counts({5, 3, 5, 101, 7}, {102, 101});
  EXPECT_EQ(t.ids, (std::vector<int32_t>{3, 5, 7}));
  EXPECT_EQ(t.counts, (std::vector<int32_t>{1, 2, 1}));
  EXPECT_DOUBLE_EQ(t.norm, std::sqrt(6.0));
  const auto a = term_counts({1, 2, 2}, {}), b = term_counts({2, 3}, {});
  EXPECT_DOUBLE_EQ(cosine(a, b), 2 / std::sqrt(10.0));
  EXPECT_EQ(cosine(a, term_counts({101}, {101})), 0.0);  // stop ids only: no direction
  const auto p = pooled_counts({a, b});
  EXPECT_EQ(p.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(p.counts, (std::vector<int32_t>{1, 3, 1}));
}

TEST(Lexical, SimilarityAndHearstGapScoresByHand) {
  const std::vector<TokenIds> s{{1, 2, 101}, {2, 3}, {4}, {101}};
  const auto m = lexical_similarity(s, {101});
  EXPECT_DOUBLE_EQ(m[0 * 4 + 1], 0.5);
  EXPECT_DOUBLE_EQ(m[1 * 4 + 0], 0.5);
  EXPECT_EQ(m[0 * 4 + 0], 1.0);
  EXPECT_EQ(m[1 * 4 + 2], 0.0);
  EXPECT_EQ(m[3 * 4 + 3], 0.0);  // a sentence of stop ids only
  const auto w1 = lexical_gap_scores(s, {101}, 1);
  ASSERT_EQ(w1.size(), 3u);
  EXPECT_DOUBLE_EQ(w1[0], 0.5);
  EXPECT_EQ(w1[1], 0.0);
  EXPECT_EQ(w1[2], 0.0);
  const auto w2 = lexical_gap_scores(s, {101}, 2);  // {1,2} vs {2,3,4}: 1 / (√2·√3)
  EXPECT_DOUBLE_EQ(w2[0], 1 / std::sqrt(6.0));
  EXPECT_EQ(w2[1], 0.0);
}

// Three topics with disjoint vocabularies (4, 5 and 4 sentences), each sentence wrapped in the
// same [CLS] . [SEP] ids: gold boundaries {4, 9}.
std::vector<TokenIds> three_topics() {
  std::vector<TokenIds> doc;
  const int32_t sizes[3] = {4, 5, 4};
  for (int32_t t = 0; t < 3; ++t)
    for (int32_t s = 0; s < sizes[t]; ++s) {
      const int32_t base = 2000 + 100 * t;
      doc.push_back({101, base + s % 3, base + (s + 1) % 3, base + 3 + s % 2, base + 5, 1012, 102});
    }
  return doc;
}
const std::vector<int32_t> kStop{101, 102, 1012};

TEST(Lexical, StopIdsAreWhatTopicsWouldShare) {
  const auto doc = three_topics();
  const auto with = lexical_similarity(doc, kStop), without = lexical_similarity(doc, {});
  EXPECT_EQ(with[0 * 13 + 12], 0.0);
  EXPECT_GT(without[0 * 13 + 12], 0.0);
}

TEST(Lexical, TextTilingFindsTheThreeTopics) {
  const auto doc = three_topics();
  BlockOptions o;
  o.window = 3;
  EXPECT_EQ(texttiling(doc, kStop, o, 2), (Boundaries{4, 9}));
  EXPECT_EQ(texttiling(doc, kStop, o), (Boundaries{4, 9}));
  // Block comparison over the pairs' cosines, the form the model-derived methods use.
  const auto m = lexical_similarity(doc, kStop);
  EXPECT_EQ(block_comparison(m, 13, o, 2), (Boundaries{4, 9}));
  EXPECT_EQ(block_comparison(m, 13, o), (Boundaries{4, 9}));
}

TEST(Lexical, C99FindsTheThreeTopics) {
  const auto doc = three_topics();
  EXPECT_EQ(c99_lexical(doc, kStop, C99Options{}, 2), (Boundaries{4, 9}));
  EXPECT_EQ(c99_lexical(doc, kStop, C99Options{}), (Boundaries{4, 9}));
  EXPECT_THROW(c99_lexical({}, kStop, C99Options{}), Error);
}

}  // namespace
}  // namespace ctxsim::segment

// ---- windows over a long document (stages/segment/windows.h) ------------------------------
namespace ctxsim::segment {
namespace {

TEST(Windows, HandPlannedOverlapAndHomes) {
  // T = 12: 10 tokens of room. Sentences of 4, 3, 3, 4, 2, 5 tokens.
  const WindowPlan p = plan_windows({4, 3, 3, 4, 2, 5}, 12);
  // Window 0: 4+3+3 = 10. Its middle is token 5: sentence 1 starts at 4 (< 5), sentence 2 at 7:
  // window 1 starts at sentence 2: 3+4+2 = 9 (5 more would be 14). Middle 4.5 -> 5: sentence 3
  // starts at 3, sentence 4 at 7: window 2 starts at sentence 4: 2+5 = 7, the end.
  ASSERT_EQ(p.windows.size(), 3u);
  EXPECT_EQ(p.windows[0].first, 0);
  EXPECT_EQ(p.windows[0].count, 3);
  EXPECT_EQ(p.windows[1].first, 2);
  EXPECT_EQ(p.windows[1].count, 3);
  EXPECT_EQ(p.windows[2].first, 4);
  EXPECT_EQ(p.windows[2].count, 2);
  // Sentence 2: in window 0 it has 7 tokens before and 0 after (min 0); in window 1, 0 before
  // and 6 after (min 0): a tie, the earlier window. Sentence 3: only window 1 (3 before, 2 after).
  // Sentence 4: window 1 (7 before, 0 after) or window 2 (0 before, 5 after): tie -> window 1.
  EXPECT_EQ(p.home, (std::vector<int32_t>{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(p.offset, (std::vector<int32_t>{1, 5, 8, 4, 8, 3}));
  EXPECT_EQ(p.length, (std::vector<int32_t>{4, 3, 3, 4, 2, 5}));
  EXPECT_EQ(p.cut_sentences, 0);
}

// A window without a begin or end token (Qwen's, a GGUF's without add_bos_token): all T
// positions hold words, and a sentence's offset counts from 0. The same sentences in T = 10 (room
// 10, as above) give the same windows and homes, every offset one less.
TEST(Windows, AFrameWithoutTokensStartsWordsAtZero) {
  const WindowPlan framed = plan_windows({4, 3, 3, 4, 2, 5}, 12);
  const WindowPlan bare = plan_windows({4, 3, 3, 4, 2, 5}, 10, 0, 0);
  ASSERT_EQ(bare.windows.size(), framed.windows.size());
  EXPECT_EQ(bare.home, framed.home);
  for (size_t s = 0; s < bare.offset.size(); ++s) EXPECT_EQ(bare.offset[s], framed.offset[s] - 1) << s;
  EXPECT_EQ(bare.offset[0], 0);
}

TEST(Windows, EverySentenceWholeInItsHomeAndCentralWhenPossible) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < 60; ++i) tokens.push_back(5 + (i * 7) % 13);
  const int32_t T = 64;
  const WindowPlan p = plan_windows(tokens, T);
  for (size_t s = 0; s < tokens.size(); ++s) {
    const SentenceWindow& w = p.windows[size_t(p.home[s])];
    ASSERT_TRUE(int32_t(s) >= w.first && int32_t(s) < w.first + w.count) << s;
    EXPECT_EQ(p.length[s], tokens[s]) << s;
    EXPECT_LE(p.offset[s] + p.length[s], T - 1) << s;  // before [SEP]
    // No other window holding it gives it more context on its scarcer side.
    const int32_t here = std::min(p.offset[s] - 1, w.tokens - (p.offset[s] - 1) - p.length[s]);
    for (const SentenceWindow& o : p.windows) {
      if (int32_t(s) < o.first || int32_t(s) >= o.first + o.count) continue;
      int32_t before = 0;
      for (int32_t q = o.first; q < int32_t(s); ++q) before += tokens[size_t(q)];
      EXPECT_LE(std::min(before, o.tokens - before - tokens[s]), here) << s;
    }
  }
  EXPECT_EQ(p.windows.back().first + p.windows.back().count, 60);
}

TEST(Windows, AnOverLongSentenceIsCutAndCounted) {
  const WindowPlan p = plan_windows({3, 20, 3}, 10);  // room 8
  EXPECT_EQ(p.cut_sentences, 1);
  EXPECT_EQ(p.length[1], 8);
  for (const SentenceWindow& w : p.windows) EXPECT_LE(w.tokens, 8);
}

}  // namespace
}  // namespace ctxsim::segment

// ---- encode_document: each sentence's vectors are those of its home window ------------------
namespace ctxsim::segment {
namespace {

ModelConfig stitching_model() {
  ModelConfig c = ModelConfig::preset("bert-tiny");
  c.hidden_size = 32, c.num_heads = 4, c.intermediate_size = 48, c.num_layers = 2, c.max_position_embeddings = 16;
  return c;
}

TEST(Encode, EachSentencePooledFromItsHomeWindowOnly) {
  test::TempDir tmp;
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 0; i < 59; ++i) vocab += "tok" + std::to_string(i) + "\n";
  const std::string dir = (tmp.path / "m").string();
  write_random_checkpoint(stitching_model(), 3, tmp.write("vocab.txt", vocab), dir);
  const TransformerEncoder model = TransformerEncoder::load(dir, at::kDouble);
  // Eight short sentences in windows of T = 10 (8 tokens between [CLS] and [SEP]): consecutive
  // windows overlap, so some sentences lie whole in two windows.
  std::vector<std::vector<int32_t>> sentences;
  int32_t next = 5;
  for (int n : {2, 2, 3, 1, 2, 3, 2, 2}) {
    sentences.emplace_back();
    for (int i = 0; i < n; ++i) sentences.back().push_back(5 + next++ % 59);
  }
  std::vector<int32_t> lengths;
  for (const auto& s : sentences) lengths.push_back(int32_t(s.size()));
  const WindowPlan plan = plan_windows(lengths, 10);
  ASSERT_GE(plan.windows.size(), 3u);
  const EncodedDocument e = encode_document(model, sentences, 10, SampleFrame{2, 3, 0, false, {}}, 2);  // batch 2: windows across batches
  ASSERT_EQ(e.S, 8);
  // Encode one window alone and pool a sentence's tokens there.
  const auto pooled_in = [&](size_t w, int32_t s, int64_t layer, int64_t head) {
    const SentenceWindow& win = plan.windows[w];
    at::Tensor ids = at::zeros({1, 10}, at::kLong), valid = at::zeros({1, 10}, at::kBool);
    int64_t at = 0, offset = -1;
    ids[0][at++] = 2;
    for (int32_t k = win.first; k < win.first + win.count; ++k) {
      if (k == s) offset = at;
      for (int32_t t : sentences[size_t(k)]) ids[0][at++] = t;
    }
    ids[0][at++] = 3;
    valid[0].slice(0, 0, at).fill_(true);
    std::vector<double> v(size_t(e.d), 0.0);
    model.forward(ids, valid, LayerRequest{false, false, {}, 0, nullptr}, [&](const LayerOutputs& o) {
      if (o.layer != layer) return;
      const at::Tensor c = o.context[0][head].contiguous();
      for (int64_t i = offset; i < offset + lengths[size_t(s)]; ++i)
        for (int64_t q = 0; q < e.d; ++q) v[size_t(q)] += c[i][q].item<double>() / lengths[size_t(s)];
    });
    return v;
  };
  int checked_other = 0;
  for (int32_t s = 0; s < 8; ++s)
    for (int64_t layer = 0; layer < 2; ++layer) {
      const int64_t head = (s + layer) % 4;
      const std::vector<double> home = pooled_in(size_t(plan.home[size_t(s)]), s, layer, head);
      const double* got = e.pooled.data() + ((layer * e.H + head) * e.S + s) * e.d;
      for (int64_t q = 0; q < e.d; ++q) EXPECT_NEAR(got[q], home[size_t(q)], 1e-12) << "sentence " << s << " layer " << layer;
      // In any other window holding it, the same sentence's vectors differ (other context).
      for (size_t w = 0; w < plan.windows.size(); ++w)
        if (int32_t(w) != plan.home[size_t(s)] && plan.windows[w].first <= s && s < plan.windows[w].first + plan.windows[w].count) {
          const std::vector<double> other = pooled_in(w, s, layer, head);
          double diff = 0;
          for (int64_t q = 0; q < e.d; ++q) diff = std::max(diff, std::abs(other[size_t(q)] - got[q]));
          EXPECT_GT(diff, 1e-6);
          ++checked_other;
        }
    }
  EXPECT_GT(checked_other, 0);  // some sentence lies in two windows
}

}  // namespace
}  // namespace ctxsim::segment
