// Head importance and pruning (SPEC §8), the parts that are arithmetic on numbers: the masked-LM
// or next-token targets of a held-out sample, the orders in which heads are removed, and how many heads a
// fraction removes. The model's passes are stages/model/mlm.h's (evaluate_gated); the job that
// runs them over the corpus is pipeline/commands/prune.cpp. No LibTorch, no MPI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim::prune {

// Sample `index`'s masked input and labels (-1: not predicted) from its T token ids, n_valid of
// them valid: SplitMix64(seed + index) draws once per valid non-special position, in order, and a
// draw mod 10000 < 1500 chooses it; none chosen: the first valid non-special position. A chosen
// position's input is mask_id. Returns the count chosen (0 when the sample has no such position).
int32_t mask_targets(const int32_t* ids, int32_t T, int32_t n_valid, const std::vector<int32_t>& specials, int32_t mask_id, uint64_t seed,
                     uint64_t index, int32_t* input, int32_t* labels);

// The causal-LM targets of SPEC §8 (a decoder's objective): the input is the sample unchanged, and
// each valid position but the last predicts the token after it (labels[t] = ids[t + 1]). Returns
// the count, n_valid - 1 (0 for fewer than 2 valid positions).
int32_t next_token_targets(const int32_t* ids, int32_t T, int32_t n_valid, int32_t* input, int32_t* labels);

// The fractions of heads removed along a curve: 0, 0.1, …, 0.9.
std::vector<double> curve_fractions();
// The heads a fraction p of n removes: round(p·n), halves away from zero.
int64_t removed_heads(double p, int64_t n);

// Heads as flat indices l·H + h. An order lists all n of them, the first removed first.
// Ascending (lowest first) or descending; ties by the lower index (a stable order); NaN last.
std::vector<int64_t> order_by(const std::vector<double>& values, bool ascending);
// A Fisher–Yates shuffle of 0…n-1 driven by SplitMix64(seed) (SPEC §1's loop).
std::vector<int64_t> random_order(int64_t n, uint64_t seed);

// The orders of SPEC §8 and how each sorts: importance and ablation lowest first, entropy highest
// first; a ctxsim score by its row in scores().
struct ScoreRow {
  const char* name;     // config prune.score
  const char* metric;   // its row in stages/stats/metrics.h, read per head from a run store
  bool ascending;       // the order removes the lowest first (least specialised) or the highest (noisiest)
  const char* meaning;  // for the report
};
const std::vector<ScoreRow>& scores();
const ScoreRow* score_row(const std::string& name);  // nullptr: not a score

// Gates [n] for removing the first k heads of `order`: 0 for those, 1 for the rest.
std::vector<double> gates_without(const std::vector<int64_t>& order, int64_t k, int64_t n);

// Spearman's rank correlation of two series (average ranks for ties); NaN for fewer than 2 or a
// constant series.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// The random orders' band at fraction f of curves laid out [order][fraction] (`fractions` a
// curve): their mean and sample standard deviation (over n - 1; 0 for one order).
struct Band {
  double mean = 0, sd = 0;
};
Band random_band(const std::vector<double>& random, int64_t fractions, int64_t f);

}  // namespace ctxsim::prune
