// Bootstrap intervals (SPEC §5.1) on hand-computed cases: two units whose rates are 1/2 and 3/4
// give the replicates AA, AB, BA, BB (rates 1/2, 2/3, 2/3, 3/4), so the 95% percentile interval of
// 1000 resamples is [1/2, 3/4] exactly; one unit gives a point; the chance is resampled with the
// counts; the seed decides the replicates.
#include <gtest/gtest.h>

#include "stages/stats/bootstrap.h"

namespace ctxsim {
namespace {

// One unit of one layer and one head: `pairs` selected pairs of which `repeated` repeat a token,
// among `valid` valid pairs of which `repeated_all` do.
void add_unit(UnitSums& u, int64_t pairs, int64_t repeated, int64_t valid, int64_t repeated_all, int64_t T = 8) {
  RuleStats s;
  s.L = s.H = 1, s.T = T, s.V = 0;
  for (const auto& info : kStatSchema)
    if (info.per_rule && info.shape == StatShape::LH) s.data[size_t(info.id)].assign(1, 0);
  s.data[size_t(Stat::DistinctAnchors)].assign(1, 0);
  s.data[size_t(Stat::DistanceHist)].assign(size_t(T), 0);
  s.data[size_t(Stat::HighPairs)][0] = pairs;
  s.data[size_t(Stat::SameToken)][0] = repeated;
  s.data[size_t(Stat::DistanceHist)][1] = pairs;  // every pair at distance 1
  Baseline b;
  b.value[size_t(Stat::Samples)] = 1;
  b.value[size_t(Stat::ValidPairs)] = double(valid);
  b.value[size_t(Stat::SameTokenAll)] = double(repeated_all);
  b.distance_all.assign(size_t(T), 0);
  b.distance_all[1] = valid;
  u.stats.push_back(s);
  u.base.push_back(b);
}

TEST(Bootstrap, TwoUnitsGiveTheirRatesAsTheInterval) {
  UnitSums u;
  add_unit(u, 2, 1, 20, 2);  // rate 1/2, chance 1/10
  add_unit(u, 4, 3, 40, 4);  // rate 3/4, chance 1/10
  const Intervals iv = bootstrap_intervals(u);
  ASSERT_FALSE(iv.empty());
  EXPECT_EQ(iv.units, 2);
  EXPECT_EQ(iv.replicates, kBootstrapReplicates);
  const Interval* rate = iv.of(metric("repetition_rate"), 0);
  ASSERT_NE(rate, nullptr);
  EXPECT_DOUBLE_EQ(rate->lo, 0.5);
  EXPECT_DOUBLE_EQ(rate->hi, 0.75);
  // The head's interval is the layer's (one head), and the lift is the rate over a chance of 1/10.
  EXPECT_DOUBLE_EQ(iv.of(metric("repetition_rate"), 0, 0)->lo, 0.5);
  const Interval* lift = iv.of(metric("repetition_lift"), 0);
  ASSERT_NE(lift, nullptr);
  EXPECT_NEAR(lift->lo, 5.0, 1e-12);
  EXPECT_NEAR(lift->hi, 7.5, 1e-12);
  // Every pair at distance 1: the short-range share is 1 in every replicate.
  EXPECT_DOUBLE_EQ(iv.of(metric("short_range_share"), 0)->lo, 1.0);
  // Not a share or a lift: no interval.
  EXPECT_EQ(iv.of(metric("mean_distance"), 0), nullptr);
  EXPECT_EQ(iv.of(metric("high_pairs"), 0), nullptr);
  EXPECT_EQ(interval_text(metric("repetition_rate"), *rate, 1), "[50.0, 75.0]");
}

TEST(Bootstrap, TheChanceIsResampledWithTheCounts) {
  // Each unit's chance is a fifth of its rate (valid = 10 x pairs, repeated_all = 2 x repeated):
  // in every replicate the lift is 5 although the rate varies, which a chance fixed at the
  // totals would not give.
  UnitSums u;
  add_unit(u, 2, 1, 20, 2);
  add_unit(u, 4, 3, 40, 6);
  add_unit(u, 10, 1, 100, 2);
  const Intervals iv = bootstrap_intervals(u);
  const Interval* lift = iv.of(metric("repetition_lift"), 0);
  ASSERT_NE(lift, nullptr);
  EXPECT_NEAR(lift->lo, 5.0, 1e-12);
  EXPECT_NEAR(lift->hi, 5.0, 1e-12);
  EXPECT_LT(iv.of(metric("repetition_rate"), 0)->lo, iv.of(metric("repetition_rate"), 0)->hi);
}

TEST(Bootstrap, OneUnitIsAPointAndTheSeedDecides) {
  UnitSums one;
  add_unit(one, 4, 3, 40, 4);
  const Intervals point = bootstrap_intervals(one);
  const Interval* i = point.of(metric("repetition_rate"), 0);
  EXPECT_DOUBLE_EQ(i->lo, 0.75);
  EXPECT_DOUBLE_EQ(i->hi, 0.75);
  UnitSums many;
  for (int k = 0; k < 12; ++k) add_unit(many, 10 + k, k, 100, 5);
  const Interval a = *bootstrap_intervals(many, 200, 1).of(metric("repetition_rate"), 0);
  const Interval b = *bootstrap_intervals(many, 200, 1).of(metric("repetition_rate"), 0);
  const Interval c = *bootstrap_intervals(many, 200, 2).of(metric("repetition_rate"), 0);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi);
  // The point estimate of all units lies inside.
  const double all = double(0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11) / double(12 * 10 + 66);
  EXPECT_LE(a.lo, all);
  EXPECT_GE(a.hi, all);
  // Long windows fold their distances without changing the shares.
  UnitSums wide;
  add_unit(wide, 2, 1, 20, 2, 128);
  add_unit(wide, 4, 3, 40, 4, 128);
  EXPECT_DOUBLE_EQ(bootstrap_intervals(wide).of(metric("short_range_share"), 0)->hi, 1.0);
  EXPECT_DOUBLE_EQ(bootstrap_intervals(wide).of(metric("long_range_share"), 0)->hi, 0.0);
  EXPECT_TRUE(bootstrap_intervals(UnitSums{}).empty());
}

}  // namespace
}  // namespace ctxsim
