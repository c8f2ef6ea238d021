// Context similarity (SPEC §2) as batched tensor products, and the batch driver of pair
// selection (§3) and the statistics of §4: per (sample, head) kernels in parallel, merged into
// an Accumulator. No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "stages/stats/accumulator.h"
#include "stages/stats/attention_summary.h"
#include "stages/stats/head_statistics.h"
#include "stages/stats/selection.h"
#include "stages/stats/statistics_options.h"
#include "stages/text/samples.h"

namespace ctxsim {

// C_ij = o_i · o_j for every (sample, head), diagonal 0 and rows/columns of [PAD] 0.
// vectors [B, H, T, k]; valid [B, T] bool; metric [H, k, k] (optional): C = O M Oᵀ, the
// projected similarity via M_h = W_O[h] W_O[h]ᵀ. Computed in float64 when vectors are float64,
// else float32. Returns [B, H, T, T].
at::Tensor context_similarity(const at::Tensor& vectors, const at::Tensor& valid, const at::Tensor& metric = {});

// M_h = W_O[h] W_O[h]ᵀ from W_O split by head [H, d, hidden] → [H, d, d].
at::Tensor projection_metric(const at::Tensor& o_by_head);

// One batch of samples, row-major [B, T] as in SampleSet: every per-position fact a statistic
// may read (SPEC §1), so that a new statistic reads it here and no caller changes.
struct BatchSamples {
  const int32_t* token_ids = nullptr;
  const int16_t* sentence_ids = nullptr;
  const int16_t* n_valid = nullptr;
  int64_t batch = 0, seq_len = 0;
  int64_t first = 0;                  // sample id of row 0, for messages
  const int16_t* word_ids = nullptr;  // nullptr: no word known (every position -1)

  // Samples [first, first + count) of a sample set.
  static BatchSamples of(const SampleSet& s, int64_t first, int64_t count);
};

// Per-sample results of a batch, [R, B, L, H] row-major.
struct PerSampleStats {
  std::vector<int32_t> anchor_token;  // -1 when the sample has no selected pair
  std::vector<float> anchor_share;    // anchor count / (2 × selected pairs), 0 when none
  std::vector<int32_t> high_pairs;
};

// Accumulates one batch: construct (adds the rule-independent baselines), then add_layer for
// each layer in order. The work of a layer runs in parallel over (sample, head), each in plain
// loops (stages/stats/head_statistics.h); the results are merged into the accumulator in a fixed order.
class TensorStatistics;

class BatchStatistics {
 public:
  // device_acc (optional): an int64 tensor laid out as acc's buffer on the device the layers'
  // tensors live on (a GPU rank). Given, the layers' statistics are whole-tensor operations there
  // (stages/stats/tensor_statistics.h) added into it, and only the baselines go into acc.
  BatchStatistics(const StatisticsOptions& options, const BatchSamples& samples, Accumulator& acc, at::Tensor device_acc = {});
  ~BatchStatistics();

  // The layer's similarities C_ij = left_i · right_j from vectors [B, H, T, k] (right = the head
  // outputs o, left = o or o M; computed per head by the kernel, float64 when right is float64,
  // else float32); attention [B, H, T, T] float32, bfloat16 or float64.
  // attention undefined: the layer's maps came before, tile by tile, through add_attention_rows.
  void add_layer(int64_t layer, const at::Tensor& left, const at::Tensor& right, const at::Tensor& attention);
  // The same with left = right = vectors (the context similarity).
  void add_layer(int64_t layer, const at::Tensor& vectors, const at::Tensor& attention) { add_layer(layer, vectors, vectors, attention); }
  // Rows [first, first + count) of batch row `row`'s attention maps for the coming add_layer,
  // [H, count, T], in increasing row order (a map's first tile starts at row 0); the CPU path
  // only. The same statistics as the whole maps, without a [B, H, T, T] tensor.
  void add_attention_rows(int64_t row, int64_t first, const at::Tensor& rows);

  const PerSampleStats& per_sample();
  // The last add_layer's selection of rule r for batch row b as a [H, T, T] uint8 0/1 matrix
  // (upper triangle), for stored examples.
  at::Tensor selection_matrix(int64_t rule, int64_t row) const;

 private:
  void merge_layer(int64_t layer);

  const StatisticsOptions& opt_;
  Accumulator& acc_;
  int64_t B_, T_, H_ = 0, L_, R_, first_;
  std::vector<SampleFacts> facts_;           // [B]
  std::vector<HeadRule> rules_;              // [R] with their attention threshold's index and separators
  std::vector<double> betas_;                // distinct attention thresholds
  std::vector<int64_t> separator_tokens_;    // [S] every separator token once (separator_tokens)
  std::vector<HeadResult> results_;          // [B, H] of the current layer
  std::vector<AttentionSummary> attention_;  // [B, H] of the current layer's maps
  at::Tensor last_left_, last_right_;        // [B, H, T, k] of the last add_layer
  PerSampleStats out_;
  std::unique_ptr<TensorStatistics> tensor_;  // the device path, when device_acc was given
};

}  // namespace ctxsim
