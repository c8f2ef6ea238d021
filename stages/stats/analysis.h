// One batch through the whole science: forward pass, per-layer context similarity, selection
// and statistics into an Accumulator. Shared by the run loop, the benchmarks and the tests, so
// they all measure the same arithmetic.
#pragma once
#include <functional>

#include "stages/model/encoder.h"
#include "stages/model/model.h"  // not used here: callers (run, plan, test_statistics) load their encoder through it
#include "stages/stats/statistics.h"

namespace ctxsim {

// Called per layer with the batch's similarity [B, H, T, T], attention [B, H, T, T] and the
// statistics (for selection_matrix), e.g. to copy out stored examples.
using LayerHook =
    std::function<void(int64_t layer, const at::Tensor& similarity, const at::Tensor& attention, const BatchStatistics& stats)>;

class Analysis {
 public:
  // Any family's encoder (model.h loads one); it must outlive the Analysis.
  Analysis(const Encoder& model, StatisticsOptions options, bool projected);
  const StatisticsOptions& options() const { return options_; }
  StatsShape shape(int64_t seq_len) const;
  at::Device device() const { return model_.device(); }

  // Accumulates one batch into acc and returns its per-sample results ([R, B, L, H]).
  // device_acc (optional, a GPU rank's): the layers' statistics go into it as whole-tensor
  // operations on its device (BatchStatistics), the baselines into acc.
  PerSampleStats run_batch(const BatchSamples& batch, Accumulator& acc, const LayerHook& hook = nullptr, at::Tensor device_acc = {}) const;

 private:
  const Encoder& model_;
  StatisticsOptions options_;
  std::vector<at::Tensor> metrics_;  // projected: M_h = W_O[h] W_O[h]ᵀ per layer; empty for context
};

}  // namespace ctxsim
