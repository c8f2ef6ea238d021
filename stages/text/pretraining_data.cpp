#include "stages/text/pretraining_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "stages/base/error.h"
#include "stages/base/random.h"

namespace ctxsim {
namespace {

uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A double in [0, 1) from 53 random bits.
double unit(uint64_t bits) { return double(bits >> 11) * (1.0 / 9007199254740992.0); }

}  // namespace

uint64_t mix_key(uint64_t key, uint64_t index) { return finalise(key + 0x9E3779B97F4A7C15ull * (index + 1) + finalise(index)); }

SampleOrder::SampleOrder(int64_t windows, uint64_t seed) : n_(windows), seed_(seed) {
  CTXSIM_CHECK(windows > 0, "SampleOrder: no windows");
}

int64_t SampleOrder::window(int64_t g) {
  const int64_t epoch = g / n_;
  if (epoch != epoch_) {
    order_.resize(size_t(n_));
    std::iota(order_.begin(), order_.end(), 0);
    SplitMix64 rng(mix_key(seed_, uint64_t(epoch)));
    for (int64_t i = n_ - 1; i >= 1; --i) std::swap(order_[size_t(i)], order_[size_t(rng.next() % uint64_t(i + 1))]);
    epoch_ = epoch;
  }
  return order_[size_t(g % n_)];
}

int32_t mask_sample(const int32_t* ids, int32_t T, int32_t n_valid, const MaskSpec& spec, uint64_t key, int32_t* input, int32_t* labels) {
  const auto special = [&](int32_t id) {
    return std::find(spec.special_ids.begin(), spec.special_ids.end(), id) != spec.special_ids.end();
  };
  std::vector<int32_t> maskable;
  for (int32_t t = 0; t < T; ++t) {
    input[t] = ids[t];
    labels[t] = -1;
    if (t < n_valid && !special(ids[t])) maskable.push_back(t);
  }
  const auto m = int64_t(maskable.size());
  if (m == 0) return 0;
  const int64_t k = std::min<int64_t>(m, std::max<int64_t>(1, std::llround(spec.fraction * double(m))));
  SplitMix64 rng(key);
  // The first k of a partial Fisher–Yates shuffle.
  for (int64_t i = 0; i < k; ++i) std::swap(maskable[size_t(i)], maskable[size_t(i + int64_t(rng.next() % uint64_t(m - i)))]);
  for (int64_t i = 0; i < k; ++i) {
    const int32_t t = maskable[size_t(i)];
    labels[t] = ids[t];
    const double u = unit(rng.next());
    if (u < 0.8) {
      input[t] = spec.mask_id;
    } else if (u < 0.9) {
      int32_t r;
      do r = int32_t(rng.next() % uint64_t(spec.vocab_size));
      while (special(r));
      input[t] = r;
    }
  }
  return int32_t(k);
}

void fill_dropout_mask(float* out, int64_t n, double p, uint64_t key) {
  const auto drop_below = uint32_t(std::lround(p * 65536.0));
  const float keep = p > 0 ? float(1.0 / (1.0 - p)) : 1.0f;
  int64_t i = 0;
  for (uint64_t block = 0; i < n; ++block) {
    const uint64_t bits = finalise(key + 0x9E3779B97F4A7C15ull * (block + 1));
    for (int lane = 0; lane < 4 && i < n; ++lane, ++i) out[i] = uint32_t((bits >> (16 * lane)) & 0xFFFF) < drop_below ? 0.0f : keep;
  }
}

UnigramBaseline unigram_baseline(const std::vector<int64_t>& counts, const std::vector<int32_t>& special_ids) {
  UnigramBaseline b;
  const size_t V = counts.size();
  std::vector<bool> special(V, false);
  for (int32_t s : special_ids)
    if (s >= 0 && size_t(s) < V) special[size_t(s)] = true;
  double total = 0;
  int64_t best = -1;
  size_t ordinary = 0;
  for (size_t v = 0; v < V; ++v) {
    if (special[v]) continue;
    total += double(counts[v]) + 1.0;
    ++ordinary;
    if (best < 0 || counts[v] > counts[size_t(best)]) best = int64_t(v);
  }
  CTXSIM_CHECK(ordinary > 0, "unigram baseline: no ordinary token");
  b.log_prob.assign(V, -std::numeric_limits<double>::infinity());
  for (size_t v = 0; v < V; ++v)
    if (!special[v]) b.log_prob[v] = std::log((double(counts[v]) + 1.0) / total);
  b.top_id = int32_t(best);
  return b;
}

double UnigramBaseline::loss(const std::vector<int32_t>& labels) const {
  double sum = 0;
  int64_t n = 0;
  for (int32_t l : labels)
    if (l >= 0) {
      sum -= log_prob[size_t(l)];
      ++n;
    }
  return n ? sum / double(n) : 0.0;
}

double UnigramBaseline::accuracy(const std::vector<int32_t>& labels) const {
  int64_t hit = 0, n = 0;
  for (int32_t l : labels)
    if (l >= 0) {
      hit += l == top_id;
      ++n;
    }
  return n ? double(hit) / double(n) : 0.0;
}

}  // namespace ctxsim
