// Language-model training and evaluation of an encoder in LibTorch (autograd through ATen; the
// embeddings and layers are transformer_layer.h's, the ones the analysis runs), in the layout of
// the family's language-model class (FamilySpec::mlm_class, lm_head): the encoder under its
// prefix (`bert.`, `roberta.`, `distilbert.`, `transformer.`), the head's own tensors (BERT's
// cls.predictions transform and bias, RoBERTa's lm_head, DistilBERT's vocab_*, none for GPT-2),
// the decoder tied to the word embeddings. The objective is the row's: masked positions, or the
// next token for a decoder (SPEC §8); a batch's positions and targets say which are predicted.
// The parameters live in one flat buffer, as do their gradients and AdamW's moments,
// so a data-parallel step is one all-reduce and a checkpoint is three tensors. Dropout masks are
// counter-based per sample (stages/text/pretraining_data.h): a sample drops the same units on any rank
// count. No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/model/checkpoint_checks.h"
#include "stages/model/model_config.h"
#include "stages/model/safetensors.h"

namespace ctxsim {

// A batch of masked samples (rows of the global batch this rank computes).
struct MlmBatch {
  at::Tensor input;                    // [B, T] int64: the masked ids
  at::Tensor valid;                    // [B, T] bool
  at::Tensor positions;                // [M] int64: b * T + t of the predicted positions
  at::Tensor targets;                  // [M] int64: their original ids
  std::vector<uint64_t> dropout_keys;  // [B] one stream per sample
};
// From row-major [B, T] masked ids and labels (-1 = not predicted) and the valid counts.
MlmBatch make_mlm_batch(const int32_t* input, const int32_t* labels, const int16_t* n_valid, int64_t B, int64_t T,
                        std::vector<uint64_t> dropout_keys);

struct MlmResult {
  double loss_sum = 0;    // cross-entropy summed over the predicted positions (nats)
  int64_t correct = 0;    // predicted positions whose argmax is the original token
  int64_t predicted = 0;  // predicted positions
};

// Per sample of a batch under head gates (SPEC §8): each sample's summed loss, its correct and
// predicted positions, and on request ∂loss_b/∂ξ_b and each head's mean attention entropy.
struct GatedMlm {
  std::vector<double> loss;        // [B] cross-entropy summed over the sample's predicted positions
  std::vector<int64_t> correct;    // [B] argmax (ties: the smaller id) equal to the original token
  std::vector<int64_t> predicted;  // [B]
  at::Tensor gate_grad;            // [B, L, H] float64: ∂loss_b/∂ξ at the given gates (gradients requested)
  at::Tensor entropy;              // [B, L, H] float64: mean over valid query rows of -Σ_j A_ij ln A_ij (requested)
};

// Part of a forward pass (MlmModel's layer_inputs and evaluate_gated_from).
struct ForwardSpan {
  int64_t first = 0;                          // the first layer computed
  at::Tensor x;                               // its input [B, T, hidden] (first > 0)
  std::vector<at::Tensor>* inputs = nullptr;  // on request: the input of layers first..L-1, then the last's output
};

class MlmModel {
 public:
  MlmModel(const ModelConfig& config, at::ScalarType dtype);  // parameters zero
  const ModelConfig& config() const { return config_; }
  const std::vector<MlmParameter>& layout() const { return layout_; }
  at::Tensor& parameters() { return params_; }  // [P]
  const at::Tensor& parameters() const { return params_; }
  at::Tensor& gradients() { return grads_; }  // [P]
  at::Tensor decay_mask() const;              // [P] 1 where weight decay applies, else 0

  // The initialisation `ctxsim init-model --seed seed` writes (random_lm_weights): the encoder
  // exactly as the bare model's (N(0, 0.02) weights, zero biases, unit LayerNorm), the head's
  // dense N(0, 0.02), the rest 0/1.
  void init(uint64_t seed);

  // Forward and backward: adds d(loss_sum × loss_scale)/dθ into gradients(); dropout p per
  // sample from its key. The loss of a data-parallel step is the sum over the global batch's
  // predicted positions divided by their count: pass loss_scale = 1 / that count.
  MlmResult train_step(const MlmBatch& batch, double dropout, double loss_scale);
  // The same without dropout or gradients.
  MlmResult evaluate(const MlmBatch& batch) const;
  // Without dropout, each sample under its own head gates ξ [B, L, H] (1: the head as trained, 0:
  // removed), with the gates' gradients and the heads' attention entropies on request.
  GatedMlm evaluate_gated(const MlmBatch& batch, const at::Tensor& gates, bool gradients, bool entropy) const;
  // The hidden states entering each layer and leaving the last ([L + 1] tensors [B, T, hidden]) of
  // the batch under gates [B, L, H], without gradients: an evaluation whose gates equal these below
  // layer l can start there (evaluate_gated_from).
  std::vector<at::Tensor> layer_inputs(const MlmBatch& batch, const at::Tensor& gates) const;
  // evaluate_gated without gradients or entropies from layer `first` (0..L; L: the head alone),
  // given x = layer_inputs(batch, g)[first] for gates g equal to `gates` below `first`: the same
  // numbers as from the embeddings, the layers below `first` not recomputed.
  GatedMlm evaluate_gated_from(const MlmBatch& batch, const at::Tensor& gates, int64_t first, const at::Tensor& x) const;

  // The logits [M, V] of the batch's positions (its targets unused), without dropout.
  at::Tensor logits(const MlmBatch& batch) const;

  // A folder of the family's language-model class (config.json, model.safetensors with the
  // encoder under the family's prefix or bare, and the head's own tensors; the decoder tied to the
  // word embeddings) in `dtype`. Errors name the file and the tensor: a family without a head, a
  // missing head, a shape, a non-finite value.
  static MlmModel load(const std::string& dir, at::ScalarType dtype);

  // The tensors by Hugging Face name in `dtype` (F32 or F16): what model.safetensors holds.
  std::map<std::string, TensorData> export_tensors(DType dtype) const;
  // The parameter named `name` as a view of the flat buffer.
  at::Tensor parameter(const std::string& name) const;

 private:
  // Last hidden states [B, T, hidden] and the loss terms; `weights` are views (leaves) of params_.
  // With `gated` (and gates [B, L, H]): per-sample results into it, and the attention maps'
  // entropies when gated->entropy is to be filled (defined on entry).
  // Every parameter as a view of the flat buffer, in layout order.
  std::vector<at::Tensor> weight_views() const;
  // With head_out: the head's input at the predicted positions into it, and no loss. `span`: from
  // which layer (and its input), and where to record each layer's input and the last's output.
  MlmResult run(const std::vector<at::Tensor>& weights, const MlmBatch& batch, double dropout, at::Tensor* loss_sum,
                const at::Tensor& gates = {}, GatedMlm* gated = nullptr, at::Tensor* head_out = nullptr,
                const ForwardSpan& span = {}) const;
  // The head: [M, hidden] final hidden states → the decoder's input (transform, LayerNorm), and
  // that → logits [M, V].
  at::Tensor head_input(const std::vector<at::Tensor>& weights, at::Tensor h) const;
  // `out`: into it ([M, V], contiguous).
  at::Tensor decode(const std::vector<at::Tensor>& weights, const at::Tensor& h, at::Tensor* out = nullptr) const;
  ModelConfig config_;
  std::vector<MlmParameter> layout_;
  std::map<std::string, size_t> index_;
  at::Tensor params_, grads_;
  // The logits of an evaluation's predicted rows (run, without gradients), kept between calls.
  static constexpr int64_t kWholeDecoderBytes = int64_t(256) << 20;
  mutable at::Tensor decoder_out_;
};

// AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW arithmetic) over flat buffers.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01;
};
struct AdamWState {
  at::Tensor m, v;    // [P] first and second moments
  int64_t steps = 0;  // updates applied
};
AdamWState adamw_state(const at::Tensor& params);
// One update of params with grads at learning rate lr; decay_mask [P] 0/1 selects weight decay.
void adamw_update(at::Tensor& params, const at::Tensor& grads, const at::Tensor& decay_mask, AdamWState& state, double lr,
                  const AdamWOptions& options);

// Scales grads in place so that their global L2 norm is at most max_norm (0: no clipping);
// returns the norm before clipping.
double clip_grad_norm(at::Tensor& grads, double max_norm);

// Linear warmup from 0 to peak over `warmup` updates, then linear decay to 0 after `steps`;
// `step` counts from 0.
double learning_rate(int64_t step, int64_t steps, int64_t warmup, double peak);

}  // namespace ctxsim
