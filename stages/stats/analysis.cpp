#include "stages/stats/analysis.h"

#include "stages/base/error.h"
#include "stages/model/transformer_layer.h"  // kAttentionRowBlock

namespace ctxsim {
namespace {

// Finite weights (checked at load) can still overflow (e.g. in bfloat16): a non-finite value in
// a layer's output stops the run, naming the first sample and layer, instead of turning into
// silent nonsense. One reduction per layer, nothing per element unless it fires.
void check_finite_activations(const LayerOutputs& o, int64_t first_sample) {
  if (at::isfinite(o.attention_output.sum()).item<bool>()) return;
  const at::Tensor ok = at::isfinite(o.attention_output).flatten(1).all(1);  // [B]
  const int64_t row = at::logical_not(ok).nonzero()[0][0].item<int64_t>();
  throw Error("sample " + std::to_string(first_sample + row) + ", layer " + std::to_string(o.layer),
              "the model's activations are not finite (NaN or inf) after the attention block",
              "its weights are finite, so the values overflow: use model.dtype=float32 or float64, or check the checkpoint");
}

}  // namespace

int64_t attention_tile_rows(int64_t requested, int64_t T) {
  if (requested > 0) return requested >= T ? 0 : requested;
  // Beyond one block the whole maps cost the tiles' products and more memory traffic (BERT-base
  // at T=512, batch 8: 8% slower than tiles of 128 rows).
  return T <= kAttentionRowBlock ? 0 : kAttentionRowBlock;
}

Analysis::Analysis(const Encoder& model, StatisticsOptions options, bool projected, int64_t attention_rows)
    : model_(model), options_(std::move(options)), attention_rows_(attention_rows) {
  if (projected)
    for (int64_t l = 0; l < model.config().num_layers; ++l) metrics_.push_back(projection_metric(model.output_projection_by_head(l)));
}

StatsShape Analysis::shape(int64_t seq_len) const {
  StatsShape s;
  s.rules = static_cast<int64_t>(options_.rules.size());
  s.layers = model_.config().num_layers;
  s.heads = model_.config().num_heads;
  s.seq_len = seq_len;
  s.vocab = model_.config().vocab_size;
  s.separators = int64_t(separator_tokens(options_).size());
  return s;
}

PerSampleStats Analysis::run_batch(const BatchSamples& bs, Accumulator& acc, const LayerHook& hook, at::Tensor device_acc) const {
  const int64_t B = bs.batch, T = bs.seq_len;
  const bool device_statistics = device_acc.defined();  // asked before the move below empties it
  BatchStatistics stats(options_, bs, acc, std::move(device_acc));
  const at::Device device = model_.device();
  const at::Tensor ids = at::from_blob(const_cast<int32_t*>(bs.token_ids), {B, T}, at::kInt).to(device, at::kLong);
  const at::Tensor valid =
      (at::arange(T, at::kLong).view({1, T}) < at::from_blob(const_cast<int16_t*>(bs.n_valid), {B}, at::kShort).to(at::kLong).view({B, 1}))
          .to(device);
  CTXSIM_CHECK(device.is_cpu() || device_statistics, "analysis: a model off the CPU needs the device statistics (device_acc)");
  LayerRequest request;
  request.final_hidden = false;
  if (!hook && !device_statistics) {
    request.attention_rows = attention_tile_rows(attention_rows_, T);
    request.on_attention_rows = [&](int64_t, int64_t row, int64_t first, const at::Tensor& rows) {
      stats.add_attention_rows(row, first, rows);
    };
  }
  model_.forward(ids, valid, request, [&](const LayerOutputs& o) {
    check_finite_activations(o, bs.first);
    const at::Tensor metric = metrics_.empty() ? at::Tensor() : metrics_[size_t(o.layer)];
    // The kernels form each head's similarities from its vectors: C = (o M) oᵀ or o oᵀ.
    const at::Tensor vectors = o.context.scalar_type() == at::kDouble ? o.context : o.context.to(at::kFloat);
    stats.add_layer(o.layer, metric.defined() ? at::matmul(vectors, metric.to(vectors.scalar_type())) : vectors, vectors, o.attention);
    if (hook) hook(o.layer, context_similarity(o.context, valid, metric), o.attention, stats);
  });
  return stats.per_sample();
}

}  // namespace ctxsim
