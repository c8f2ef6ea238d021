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

// Query rows per attention tile for samples of T tokens: `requested` when given (> 0; >= T means
// the whole maps; the forward rounds it up to a multiple of 128), else 0 (the whole maps) for
// T <= 128, one block of the forward's products, and tiles of 128 rows beyond (SmolLM2 at
// T = 8192: 36 MiB a tile). Either way every value is the same bits (transformer_layer.cpp's
// blocks); only memory and speed differ.
int64_t attention_tile_rows(int64_t requested, int64_t T);

class Analysis {
 public:
  // Any family's encoder (model.h loads one); it must outlive the Analysis. attention_rows:
  // runtime.attention_rows (attention_tile_rows's `requested`; 0 = by size).
  Analysis(const Encoder& model, StatisticsOptions options, bool projected, int64_t attention_rows = 0);
  const StatisticsOptions& options() const { return options_; }
  StatsShape shape(int64_t seq_len) const;
  at::Device device() const { return model_.device(); }

  // Accumulates one batch into acc and returns its per-sample results ([R, B, L, H]).
  // device_acc (optional, a GPU rank's): the layers' statistics go into it as whole-tensor
  // operations on its device (BatchStatistics), the baselines into acc. A hook or a device rank
  // takes the whole attention maps; otherwise they come in tiles where attention_tile_rows says.
  PerSampleStats run_batch(const BatchSamples& batch, Accumulator& acc, const LayerHook& hook = nullptr, at::Tensor device_acc = {}) const;

 private:
  const Encoder& model_;
  StatisticsOptions options_;
  std::vector<at::Tensor> metrics_;  // projected: M_h = W_O[h] W_O[h]ᵀ per layer; empty for context
  int64_t attention_rows_ = 0;
};

}  // namespace ctxsim
