#include "stages/base/random.h"

#include <algorithm>
#include <numeric>

namespace ctxsim {

std::vector<int64_t> draw_candidates(int64_t n, int64_t k, uint64_t seed) {
  std::vector<int64_t> a(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::iota(a.begin(), a.end(), 0);
  if (k >= n) return a;
  SplitMix64 rng(seed);
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(i + 1));
    std::swap(a[i], a[j]);
  }
  a.resize(static_cast<size_t>(std::max<int64_t>(k, 0)));
  std::sort(a.begin(), a.end());
  return a;
}

}  // namespace ctxsim
