// Accumulators compared field by field: a failure names the first field that differs (its
// statistic, rule and element), not "a == b is false".
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "stages/stats/accumulator.h"

namespace ctxsim::test {

inline ::testing::AssertionResult same_accumulators(const Accumulator& a, const Accumulator& b) {
  if (a.buffer().size() != b.buffer().size())
    return ::testing::AssertionFailure() << "the accumulators differ in size: " << a.buffer().size() << " vs " << b.buffer().size();
  for (const StatField& f : a.fields())
    for (int64_t r = 0; r < (f.per_rule() ? a.shape().rules : 1); ++r) {
      const int64_t *x = a.at(f.info->id, r), *y = b.at(f.info->id, r);
      for (size_t i = 0; i < f.size; ++i)
        if (x[i] != y[i])
          return ::testing::AssertionFailure() << f.name() << (f.per_rule() ? " of rule " + std::to_string(r) : std::string())
                                               << " differs first at element " << i << ": " << x[i] << " vs " << y[i];
    }
  return ::testing::AssertionSuccess();
}

}  // namespace ctxsim::test

#define EXPECT_SAME_ACCUMULATORS(a, b) EXPECT_TRUE(::ctxsim::test::same_accumulators((a), (b)))
