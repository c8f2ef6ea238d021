// Topic segmentation (SPEC §6, issue 24): Pk and WindowDiff by hand from the definitions, the
// Choi benchmark's draw, block comparison with depth scores, C99's rank matrix and divisive
// clustering, the baselines, and TextTiling and C99 on a constructed three-topic document.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "stages/base/error.h"
#include "stages/text/samples.h"
#include "stages/segment/choi.h"
#include "stages/segment/lexical.h"
#include "stages/segment/metrics.h"
#include "stages/segment/similarity_methods.h"

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
  EXPECT_EQ(pk({2}, {1}, 3), 0.0);           // both split sentences 0 and 2 apart
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
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), "reference");
  }
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
      if (a[i].segments[s].document != b[i].segments[s].document || a[i].segments[s].sentences != b[i].segments[s].sentences)
        return false;
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
  EXPECT_EQ(pick_by_depth({}, kEstimate, 0.5, 1), Boundaries{});          // one sentence
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
  const std::vector<double> expected{2.0 / 3, 2.0 / 5, 0.0,  //
                                     2.0 / 5, 6.0 / 8, 1.0 / 5,  //
                                     0.0, 1.0 / 5, 2.0 / 3};
  for (size_t i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(r[i], expected[i]) << i;
  // An 11 x 11 mask covers the whole matrix: each entry against the other 8.
  const auto big = rank_matrix(s, 3, 11);
  EXPECT_DOUBLE_EQ(big[0], 6.0 / 8);   // 1.0 beats .5 .2 .5 .4 .2 .4
  EXPECT_DOUBLE_EQ(big[1], 4.0 / 8);   // 0.5 beats .2 .4 .2 .4
  EXPECT_DOUBLE_EQ(big[5], 2.0 / 8);   // 0.4 beats .2 .2
  EXPECT_EQ(rank_matrix(s, 3, 1), std::vector<double>(9, 0.0));  // no neighbours
  EXPECT_THROW(rank_matrix(s, 3, 4), Error);
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
  EXPECT_EQ(choi_boundary_count(density, 0.0), 2);   // threshold .4: gains 1 and .5
  EXPECT_EQ(choi_boundary_count(density, -1.0), 3);  // threshold .006: also .1
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
