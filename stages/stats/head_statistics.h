// The statistics of one (sample, layer, head) (SPEC §3-§4) in plain loops over its row-major
// T x T similarity and attention matrices: the selection of every rule, the selected pairs'
// attributes, the anchor, and the attention baselines. Written to be called in parallel over
// (sample, head) with one HeadKernel per thread; no LibTorch, MPI or HDF5 here.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "stages/stats/accumulator.h"
#include "stages/stats/selection.h"

namespace ctxsim {

enum class ValueType { F32, F64, BF16 };

class AttentionSummary;  // stages/stats/attention_summary.h

// Row-major rows of a [T, T] matrix of one (sample, head).
struct MatrixRef {
  const void* data = nullptr;
  ValueType type = ValueType::F32;
};

// The vectors of one (sample, head) whose products are the similarities: C_ij = left_i · right_j,
// row-major [T, k] each, float32 or float64 (left = right for context vectors; left = O M for
// the projected similarity).
struct VectorsRef {
  const void* left = nullptr;
  const void* right = nullptr;
  int64_t k = 0;
  ValueType type = ValueType::F32;
};

// What the statistics need of one sample, derived once per batch from its token, sentence and
// word ids (word: may be nullptr). Validity is by position: the first n positions are valid (SPEC §1).
struct SampleFacts {
  int64_t n = 0;
  std::vector<int32_t> token;                             // [n]
  std::vector<int32_t> sentence;                          // [n] sentence id, -1 for [CLS] [SEP]
  std::vector<int32_t> word;                              // [n] whitespace word id, -1 for specials (and where none is known)
  std::vector<uint8_t> special;                           // [n] 1 for the special ids: never a repetition
  std::vector<int32_t> rank;                              // [n] rank of the token among the sample's distinct ids (ascending)
  std::vector<int32_t> rank_token;                        // [distinct] the ids in ascending order
  std::vector<std::vector<int32_t>> separator_positions;  // per separator token: the valid positions holding it

  static SampleFacts build(const int32_t* token, const int16_t* sentence, const int16_t* word, int64_t n,
                           const std::vector<int64_t>& special_ids, const std::vector<int64_t>& separator_tokens);
};

// One selection rule as the kernel applies it; beta indexes the attention thresholds, separators
// the sample's separator tokens (SampleFacts::separator_positions) whose mass is the rule's.
struct HeadRule {
  SelectionRule::Kind kind = SelectionRule::Kind::TopFraction;
  double value = 0.01;
  int beta = 0;
  std::vector<int64_t> separators;
};

// The counts of one rule for one (sample, layer, head): every per-rule [L, H] statistic of the
// schema (kStatSchema), indexed by its Stat, so that the merge into an accumulator is a loop over
// the schema (the other entries stay 0); and the head's anchor.
struct HeadCounts {
  std::array<int64_t, kStatCount> value{};
  int32_t anchor_token = -1;  // -1 when nothing is selected
  double anchor_share = 0;    // anchor endpoint count / (2 x high pairs)

  int64_t& operator[](Stat s) { return value[size_t(s)]; }
  int64_t operator[](Stat s) const { return value[size_t(s)]; }
};

// What one call computes: the counts of each rule and its distance histogram, the high-attention
// pairs per threshold and the separator mass per separator token (fixed point, SPEC §4.7).
struct HeadResult {
  std::vector<HeadCounts> rules;        // [R]
  std::vector<int32_t> distance_hist;   // [R, T]
  std::vector<int64_t> high_attention;  // [betas]
  std::vector<int64_t> separator_mass;  // [separator tokens] round(mean mass x 2^32)
};

// k of a top_fraction rule for P valid pairs: min(P, max(1, round(f P))), 0 without pairs.
int64_t top_fraction_k(double f, int64_t pairs);

// Scratch buffers of one thread; reuse one per thread across calls.
class HeadKernel {
 public:
  // vectors: the sample's; att: what the statistics read of its attention map, summarised with
  // the same betas (the thresholds the rules index). dense_only: always use the dense-mask path
  // (tests: same results, slower).
  void run(const SampleFacts& s, int64_t T, const VectorsRef& vectors, const AttentionSummary& att, const std::vector<HeadRule>& rules,
           const std::vector<double>& betas, bool dense_only, HeadResult& out);
  // The selection of one rule as a [T, T] 0/1 matrix (upper triangle), for stored examples.
  void selection(const SampleFacts& s, int64_t T, const VectorsRef& vectors, const HeadRule& rule, uint8_t* out);

 private:
  template <class F>
  struct Typed;
  void reserve(int64_t T);
  template <class F>
  const F* similarity(const SampleFacts& s, int64_t T, const VectorsRef& v);
  template <class F>
  std::vector<F>& scratch(int which);  // 0: C [T, T]; 1: right transposed [k, T]
  std::vector<float> sim_f_, rt_f_;
  std::vector<double> sim_d_, rt_d_;
  std::vector<uint8_t> mask_;                   // [T, T] dense selection
  std::vector<uint32_t> pairs_;                 // selected pairs as (i << 16) | j
  std::vector<int32_t> degree_, count_;         // [T] endpoint degree per position, per token rank
  std::vector<int32_t> row_count_, row_equal_;  // [T] per row: pairs selected (or above a bound), equal to it
  std::vector<uint8_t> is_anchor_;              // [T]
  std::vector<double> values_, sample_;         // top-k candidates (as double for any F)
  std::vector<uint32_t> candidates_, ties_;     // their pairs; the pairs tied at the k-th value that are taken
};

}  // namespace ctxsim
