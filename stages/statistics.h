// Context similarity (SPEC §2), pair selection (§3) and the statistics of §4, computed with
// tensor operations over whole batches into an Accumulator. Pairs are handled in the flattened
// upper triangle (i < j), and per-pair attributes only for the selected pairs, so the cost is a
// few passes over [B, H, T(T-1)/2] per layer and rule. No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "stages/accumulator.h"
#include "stages/selection.h"

namespace ctxsim {

// C_ij = o_i · o_j for every (sample, head), diagonal 0 and rows/columns of [PAD] 0.
// vectors [B, H, T, k]; valid [B, T] bool; metric [H, k, k] (optional): C = O M Oᵀ, the
// projected similarity via M_h = W_O[h] W_O[h]ᵀ. Computed in float64 when vectors are float64,
// else float32. Returns [B, H, T, T].
at::Tensor context_similarity(const at::Tensor& vectors, const at::Tensor& valid, const at::Tensor& metric = {});

// M_h = W_O[h] W_O[h]ᵀ from W_O split by head [H, d, hidden] → [H, d, d].
at::Tensor projection_metric(const at::Tensor& o_by_head);

struct StatisticsOptions {
  std::vector<SelectionRule> rules;
  double attention_threshold = 0.1;     // beta (SPEC §4.6), for rules without their own
  std::vector<int64_t> separator_ids;   // token ids of separators (SPEC §4.7), for rules without their own
  std::vector<std::vector<int64_t>> rule_separator_ids;  // per rule; empty (or missing) = separator_ids
  std::vector<int64_t> special_ids;     // [PAD] [UNK] [CLS] [SEP] [MASK]: never a repetition
  bool dense_only = false;              // tests: always take the dense path (same results, slower)
};

// One batch of samples, row-major [B, T] as in SampleSet.
struct BatchSamples {
  const int32_t* token_ids = nullptr;
  const int16_t* sentence_ids = nullptr;
  const int16_t* n_valid = nullptr;
  int64_t batch = 0, seq_len = 0;
};

// Per-sample results of a batch, [R, B, L, H] row-major.
struct PerSampleStats {
  std::vector<int32_t> anchor_token;  // -1 when the sample has no selected pair
  std::vector<float> anchor_share;    // anchor count / (2 × selected pairs), 0 when none
  std::vector<int32_t> high_pairs;
};

// Accumulates one batch: construct (adds the rule-independent baselines), then add_layer for
// each layer in order.
class BatchStatistics {
 public:
  BatchStatistics(const StatisticsOptions& options, const BatchSamples& samples, Accumulator& acc);

  // similarity [B, H, T, T] from context_similarity; attention [B, H, T, T].
  void add_layer(int64_t layer, const at::Tensor& similarity, const at::Tensor& attention);

  const PerSampleStats& per_sample() const { return out_; }
  // The last add_layer's selection of rule r as a [B, H, T, T] uint8 mask (for stored examples).
  at::Tensor selection_matrix(int64_t rule) const;

 private:
  // The selected pairs of one rule, either as indices into the P pairs with a validity mask
  // ([B, H, K] each; few pairs) or, when index is undefined, as a dense mask [B, H, P].
  struct Selection {
    at::Tensor index;  // [B, H, K] int64, or undefined
    at::Tensor mask;   // [B, H, K] or [B, H, P] bool
  };
  Selection select(const SelectionRule& rule, const at::Tensor& c_pairs) const;
  const StatisticsOptions& opt_;
  Accumulator& acc_;
  int64_t B_, T_, H_ = 0, L_, R_;
  at::Tensor tokens_;        // [B, T] int64
  at::Tensor valid_;         // [B, T] bool
  at::Tensor iu_, ju_;       // [P] int64: the upper-triangle pairs in (i, j) lexicographic order
  at::Tensor dist_;          // [P] int64: j - i
  at::Tensor pair_valid_;    // [B, P] bool
  at::Tensor same_sentence_, eligible_, same_token_;  // [B, P] bool
  at::Tensor n_pairs_;       // [B] int64
  at::Tensor rank_, token_of_rank_;  // [B, T]: rank of each position's token among the sample's distinct ids
  at::Tensor rank_i_, rank_j_;       // [B, P]: token rank of each pair's endpoints
  at::Tensor separator_keys(const std::vector<int64_t>& ids) const;  // [B, T] bool: valid separator keys
  std::vector<Selection> last_selection_;
  PerSampleStats out_;
};

}  // namespace ctxsim
