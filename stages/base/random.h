// The random streams of ctxsim, as SPEC §1 defines them, so that any implementation draws the
// same samples: SplitMix64, and the seeded draw of k of n candidates (Fisher–Yates). Used by
// the samples, pretraining, random checkpoints and the segmentation benchmark.
#pragma once
#include <cstdint>
#include <vector>

namespace ctxsim {

// SplitMix64 (Steele, Lea, Flood 2014), as SPEC §1 defines it.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// Indices of the drawn candidates among 0…n-1, ascending: all of them when k ≥ n, else the
// first k of a Fisher–Yates shuffle driven by SplitMix64(seed), sorted.
std::vector<int64_t> draw_candidates(int64_t n, int64_t k, uint64_t seed);

}  // namespace ctxsim
