// SPEC §3-4 for one layer of a batch as whole-tensor operations on the tensors' device: the
// path of GPU ranks, where the per-(sample, head) loop kernels (stages/stats/head_statistics.h) cannot
// run. Top-k by a stable sort (ties: smaller i, then smaller j), thresholds compared as the
// kernels compare them, every count a masked sum or an integer scatter-add into a device copy of
// the accumulator's flat buffer; nothing per pair, and nothing per layer, comes back to the host.
// Count for count the same as the kernels (tested on the CPU in float64). No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "stages/stats/accumulator.h"
#include "stages/stats/head_statistics.h"
#include "stages/stats/statistics_options.h"

namespace ctxsim {

class TensorStatistics {
 public:
  // facts: the batch's samples (host); device_acc: int64 [acc buffer size] on the device the
  // layers' tensors will live on, laid out as `layout`'s buffer; results are added into it.
  TensorStatistics(const StatisticsOptions& options, const std::vector<SampleFacts>& facts, int64_t T, const Accumulator& layout,
                   at::Tensor device_acc, const std::vector<HeadRule>& rules, const std::vector<double>& betas);

  // left, right [B, H, T, k] float32/float64; attention [B, H, T, T] (any float type).
  void add_layer(int64_t layer, const at::Tensor& left, const at::Tensor& right, const at::Tensor& attention);

  // Per-sample results [R, B, L, H] on the host (one copy per batch).
  void per_sample(std::vector<int32_t>& anchor_token, std::vector<float>& anchor_share, std::vector<int32_t>& high_pairs) const;
  // The last layer's selection of rule r, batch row b, as [H, T, T] uint8 on the host.
  at::Tensor selection_matrix(int64_t rule, int64_t row) const;

 private:
  at::Tensor select(const at::Tensor& C, const HeadRule& rule) const;    // [B, H, T, T] bool
  at::Tensor slot(Stat s, int64_t rule, int64_t offset, int64_t count);  // a view of device_acc_
  const StatisticsOptions& opt_;
  const Accumulator& layout_;
  at::Tensor acc_;
  std::vector<HeadRule> rules_;
  std::vector<double> betas_;
  int64_t B_, H_ = 0, T_, L_, R_, S_;
  // Per batch, on the device: [B, T] ids, ranks and [B, 1, T, T] masks of pair kinds.
  at::Tensor token_, rank_, rank_token_, valid_pairs_, same_sentence_, eligible_, same_token_, distance_index_, separators_, n_valid_;
  at::Tensor word_;             // [B, T] whitespace word ids on the device, -1 for specials and past the valid positions
  std::vector<int64_t> top_k_;  // [R, B] k of top_fraction rules
  at::Tensor anchor_token_, anchor_share_, high_pairs_;  // [R, B, L, H] on the device
  std::vector<at::Tensor> last_selection_;               // [R] of the last layer, [B, H, T, T] bool
};

}  // namespace ctxsim
