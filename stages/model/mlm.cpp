#include "stages/model/mlm.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "stages/base/error.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"
#include "stages/model/family.h"
#include "stages/model/gguf_model.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/model/safetensors.h"
#include "stages/model/transformer_layer.h"
#include "stages/text/pretraining_data.h"

namespace ctxsim {
namespace {

// Inverted dropout with one counter-based mask per sample (row of dim 0) and site.
at::Tensor dropout(const at::Tensor& x, double p, const std::vector<uint64_t>& keys, uint64_t site) {
  if (p <= 0) return x;
  const int64_t B = x.size(0), row = x.numel() / std::max<int64_t>(B, 1);
  at::Tensor mask = at::empty(x.sizes(), at::TensorOptions().dtype(at::kFloat));
  float* m = mask.data_ptr<float>();
  at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) fill_dropout_mask(m + b * row, row, p, mix_key(keys[size_t(b)], site));
  });
  return x * mask.to(x.scalar_type());
}

}  // namespace

MlmBatch make_mlm_batch(const int32_t* input, const int32_t* labels, const int16_t* n_valid, int64_t B, int64_t T,
                        std::vector<uint64_t> dropout_keys) {
  CTXSIM_CHECK(int64_t(dropout_keys.size()) == B, "make_mlm_batch: one dropout key per sample");
  MlmBatch b;
  b.input = at::from_blob(const_cast<int32_t*>(input), {B, T}, at::kInt).to(at::kLong);
  b.valid =
      at::arange(T, at::kLong).view({1, T}) < at::from_blob(const_cast<int16_t*>(n_valid), {B}, at::kShort).to(at::kLong).view({B, 1});
  std::vector<int64_t> positions, targets;
  for (int64_t i = 0; i < B * T; ++i)
    if (labels[i] >= 0) {
      positions.push_back(i);
      targets.push_back(labels[i]);
    }
  b.positions = at::tensor(positions, at::kLong);
  b.targets = at::tensor(targets, at::kLong);
  b.dropout_keys = std::move(dropout_keys);
  return b;
}

MlmModel::MlmModel(const ModelConfig& config, at::ScalarType dtype) : config_(config), layout_(mlm_parameter_layout(config)) {
  for (size_t i = 0; i < layout_.size(); ++i) index_[layout_[i].name] = i;
  const int64_t P = layout_.back().offset + layout_.back().numel;
  params_ = at::zeros({P}, at::TensorOptions().dtype(dtype));
  grads_ = at::zeros({P}, at::TensorOptions().dtype(dtype));
}

at::Tensor MlmModel::decay_mask() const {
  at::Tensor m = at::zeros_like(params_);
  for (const auto& p : layout_)
    if (p.decays) m.narrow(0, p.offset, p.numel).fill_(1);
  return m;
}

std::vector<at::Tensor> MlmModel::weight_views() const {
  std::vector<at::Tensor> views;
  for (const auto& p : layout_) views.push_back(params_.narrow(0, p.offset, p.numel).view(p.shape));
  return views;
}

at::Tensor MlmModel::parameter(const std::string& name) const {
  const MlmParameter& p = layout_.at(index_.at(name));
  return params_.narrow(0, p.offset, p.numel).view(p.shape);
}

void MlmModel::init(uint64_t seed) {
  // The tensors init-model writes for the family's language-model class.
  const std::map<std::string, TensorData> initial = random_lm_weights(config_, seed);
  for (const auto& p : layout_) {
    const TensorData& t = initial.at(p.name);
    const at::Tensor values = at::from_blob(const_cast<uint8_t*>(t.bytes.data()), {p.numel}, at::kFloat);
    params_.narrow(0, p.offset, p.numel).copy_(values);
  }
}

MlmResult MlmModel::run(const std::vector<at::Tensor>& weights, const MlmBatch& batch, double p, at::Tensor* loss_out,
                        const at::Tensor& gates, GatedMlm* gated, at::Tensor* head_out, const ForwardSpan& span) const {
  const auto W = [&](const std::string& name) -> const at::Tensor& { return weights[index_.at(name)]; };
  const ModelConfig& c = config_;
  const int64_t B = batch.input.size(0), T = batch.input.size(1), hidden = c.hidden_size;
  if (T > c.max_tokens()) throw Error(kSeqLen.quantity, c.positions_problem(T), "use at most " + std::to_string(c.max_tokens()));
  const double eps = c.layer_norm_eps;
  // The encoder is transformer_layer.h's, through autograd: whole-batch kernels, dropout per sample.
  LayerMode mode;
  mode.kernel = AttentionKernel::Batched;
  if (p > 0) mode.dropout = [&](const at::Tensor& x, uint64_t site) { return dropout(x, p, batch.dropout_keys, site); };
  mode.gates = gates;
  const FamilySpec& f = family_spec(c.family);
  const TensorGetter get = [&](const std::string& name) { return W(f.model_prefix + name); };
  const LayerOptions options = layer_options(c);
  const EmbeddingWeights embeddings = gather_embeddings(f, c.pad_position, get);
  CTXSIM_CHECK(span.first >= 0 && span.first <= c.num_layers && span.x.defined() == (span.first > 0), "run: a span's start");
  at::Tensor x = span.first > 0 ? span.x : embed(embeddings, batch.input, eps, mode.dropout);  // [B, T, hidden]
  const KeyMask mask = key_mask(batch.valid, c.num_heads, x.options(), mode.kernel, options.causal);
  for (int64_t l = span.first; l < c.num_layers; ++l) {
    if (span.inputs) span.inputs->push_back(x);
    // The projections stay separate parameters; their concatenation is part of the graph.
    const LayerWeights L = gather_layer(f, l, get, [](const std::vector<at::Tensor>& parts) { return at::cat(parts); });
    AttentionTrace trace;
    const bool entropy = gated && gated->entropy.defined();
    x = feed_forward_block(L, attention_block(L, x, mask, options, mode, l, entropy ? &trace : nullptr), options, mode, l);
    if (entropy) {  // mean over valid query rows of -Σ_j A_ij ln A_ij (0 ln 0 = 0)
      const at::NoGradGuard no_grad;
      const at::Tensor A = trace.attention.detach().to(at::kDouble);                               // [B, H, T, T]
      const at::Tensor rows = batch.valid.to(at::kDouble).unsqueeze(1);                            // [B, 1, T]
      const at::Tensor h = -(at::xlogy(A, A).sum(-1) * rows).sum(-1) / rows.sum(-1).clamp_min(1);  // [B, H]
      gated->entropy.select(1, l).copy_(h);
    }
  }
  if (span.inputs) span.inputs->push_back(x);
  x = final_norm(embeddings, x, options);
  MlmResult r;
  r.predicted = batch.positions.numel();
  if (r.predicted == 0) return r;
  // The head on the predicted positions only: [M, hidden] → [M, V].
  const at::Tensor h = head_input(weights, x.reshape({B * T, hidden}).index_select(0, batch.positions));
  if (head_out) {  // the caller decodes
    *head_out = h;
    return r;
  }
  // The loss in chunks of rows whose [rows, V] logits stay under glibc's mmap threshold, so that
  // they and their gradients come from the heap (reused) rather than fresh mappings.
  const int64_t rows = std::max<int64_t>(1, (int64_t(24) << 20) / (c.vocab_size * int64_t(x.element_size())));
  // Without gradients, on the CPU, the logits of every predicted row in one product into a buffer
  // kept between calls (up to kWholeDecoderBytes): OpenBLAS packs the [V, hidden] decoder once a
  // call, which each chunk repeated (SmolLM2: a 113 MB read ten times a batch of 10 windows, the
  // head 1.4x slower). The chunks of the loss stay as they were. With OpenBLAS's AVX-512 kernels
  // a row's logits are the same bits either way; its AVX2 kernels round a row by the rows in the
  // call (docs/PERFORMANCE.md), so there an evaluation and a training step's loss may differ in
  // their last bits.
  at::Tensor all;
  const int64_t V = c.vocab_size;
  if (!at::GradMode::is_enabled() && h.is_cpu() && (h.scalar_type() == at::kFloat || h.scalar_type() == at::kDouble) &&
      r.predicted * V * int64_t(h.element_size()) <= kWholeDecoderBytes) {
    if (!decoder_out_.defined() || decoder_out_.scalar_type() != h.scalar_type() || decoder_out_.numel() < r.predicted * V ||
        decoder_out_.is_inference() != c10::InferenceMode::is_enabled())  // an inference tensor is written only in InferenceMode
      decoder_out_ = at::empty({r.predicted * V}, h.options());
    all = decoder_out_.narrow(0, 0, r.predicted * V).view({r.predicted, V});
    decode(weights, h, &all);
  }
  at::Tensor loss;
  at::Tensor sample_loss, sample_correct;  // [B] per sample (gated)
  if (gated) sample_loss = at::zeros({B}, at::kDouble), sample_correct = at::zeros({B}, at::kLong);
  for (int64_t first = 0; first < r.predicted; first += rows) {
    const int64_t n = std::min(rows, r.predicted - first);
    const at::Tensor logits = all.defined() ? all.narrow(0, first, n) : decode(weights, h.narrow(0, first, n));
    const at::Tensor targets = batch.targets.narrow(0, first, n);
    const at::Tensor hit = at::eq(logits.argmax(1), targets);
    if (gated) {  // per position, then summed into its sample in position order
      const at::Tensor each = at::cross_entropy_loss(logits, targets, {}, at::Reduction::None);
      const at::Tensor sample = at::div(batch.positions.narrow(0, first, n), T, "floor");
      sample_loss.index_add_(0, sample, each.detach().to(at::kDouble));
      sample_correct.index_add_(0, sample, hit.to(at::kLong));
      const at::Tensor part = each.sum();
      loss = loss.defined() ? loss + part : part;
    } else {
      const at::Tensor part = at::cross_entropy_loss(logits, targets, {}, at::Reduction::Sum);
      loss = loss.defined() ? loss + part : part;
    }
    r.correct += hit.sum().item<int64_t>();
  }
  if (gated) {
    gated->loss.assign(sample_loss.data_ptr<double>(), sample_loss.data_ptr<double>() + B);
    gated->correct.assign(sample_correct.data_ptr<int64_t>(), sample_correct.data_ptr<int64_t>() + B);
    const at::Tensor per = at::div(batch.positions, T, "floor").bincount({}, B);
    gated->predicted.assign(per.data_ptr<int64_t>(), per.data_ptr<int64_t>() + B);
  }
  r.loss_sum = loss.item<double>();
  if (loss_out) *loss_out = loss;
  return r;
}

at::Tensor MlmModel::head_input(const std::vector<at::Tensor>& weights, at::Tensor h) const {
  const LmHead& head = family_spec(config_.family).lm_head;
  const auto W = [&](const char* name, const char* kind) -> const at::Tensor& {
    return weights[index_.at(std::string(name) + "." + kind)];
  };
  if (head.transform) {
    const Activation a = head.transform_activation ? activation_of(head.transform_activation) : activation_of(config_.hidden_act);
    h = activate(at::linear(h, W(head.transform, "weight"), W(head.transform, "bias")), a);
  }
  if (head.transform_norm)
    h = at::layer_norm(h, {config_.hidden_size}, W(head.transform_norm, "weight"), W(head.transform_norm, "bias"), config_.layer_norm_eps);
  return h;
}

at::Tensor MlmModel::decode(const std::vector<at::Tensor>& weights, const at::Tensor& h, at::Tensor* out) const {
  const FamilySpec& f = family_spec(config_.family);
  // The decoder: the word embeddings (tied), or the head's own.
  const std::string decoder = f.lm_head.decoder && !config_.tie_word_embeddings ? std::string(f.lm_head.decoder) + ".weight"
                                                                                : std::string(f.model_prefix) + f.word + ".weight";
  const at::Tensor& word = weights[index_.at(decoder)];
  if (out) {  // linear's own products (mm, or addmm with the bias) into *out
    if (!f.lm_head.bias) return at::mm_out(*out, h, word.t());
    return at::addmm_out(*out, weights[index_.at(f.lm_head.bias)], h, word.t());
  }
  if (!f.lm_head.bias) return at::linear(h, word);
  return at::linear(h, word, weights[index_.at(f.lm_head.bias)]);
}

at::Tensor MlmModel::logits(const MlmBatch& batch) const {
  const at::NoGradGuard no_grad;
  const std::vector<at::Tensor> weights = weight_views();
  at::Tensor hidden;
  run(weights, batch, 0.0, nullptr, {}, nullptr, &hidden);
  if (!hidden.defined()) return at::zeros({0, config_.vocab_size}, params_.options());
  return decode(weights, hidden);
}

MlmResult MlmModel::train_step(const MlmBatch& batch, double dropout_p, double loss_scale) {
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& w : weight_views()) leaves.push_back(w.detach().requires_grad_(true));
  at::Tensor loss;
  const MlmResult r = run(leaves, batch, dropout_p, &loss);
  if (!loss.defined()) return r;  // nothing predicted in this slice: no gradient
  loss.mul(loss_scale).backward();
  const at::NoGradGuard no_grad;
  for (size_t i = 0; i < layout_.size(); ++i)
    if (leaves[i].grad().defined()) grads_.narrow(0, layout_[i].offset, layout_[i].numel).add_(leaves[i].grad().reshape({-1}));
  return r;
}

MlmResult MlmModel::evaluate(const MlmBatch& batch) const {
  const at::NoGradGuard no_grad;
  const std::vector<at::Tensor> weights = weight_views();
  return run(weights, batch, 0.0, nullptr);
}

GatedMlm MlmModel::evaluate_gated(const MlmBatch& batch, const at::Tensor& gates, bool gradients, bool entropy) const {
  const int64_t B = batch.input.size(0), L = config_.num_layers, H = config_.num_heads;
  CTXSIM_CHECK(gates.dim() == 3 && gates.size(0) == B && gates.size(1) == L && gates.size(2) == H, "evaluate_gated: gates [B, L, H]");
  GatedMlm g;
  g.loss.assign(size_t(B), 0.0), g.correct.assign(size_t(B), 0), g.predicted.assign(size_t(B), 0);
  if (entropy) g.entropy = at::zeros({B, L, H}, at::kDouble);
  const std::vector<at::Tensor> weights = weight_views();
  if (!gradients) {
    const at::NoGradGuard no_grad;
    run(weights, batch, 0.0, nullptr, gates.to(params_.scalar_type()), &g);
    return g;
  }
  // Only the gates are leaves: each sample's gates reach only its own loss, so the gradient of
  // the summed loss with respect to ξ_b is ∂loss_b/∂ξ_b, every sample's in one backward pass.
  const at::Tensor leaf = gates.to(params_.scalar_type()).detach().requires_grad_(true);
  at::Tensor loss;
  run(weights, batch, 0.0, &loss, leaf, &g);
  if (loss.defined()) {
    loss.backward();
    g.gate_grad = leaf.grad().to(at::kDouble);
  } else {
    g.gate_grad = at::zeros({B, L, H}, at::kDouble);
  }
  return g;
}

std::vector<at::Tensor> MlmModel::layer_inputs(const MlmBatch& batch, const at::Tensor& gates) const {
  const at::NoGradGuard no_grad;
  std::vector<at::Tensor> inputs;
  ForwardSpan span;
  span.inputs = &inputs;
  at::Tensor unused;
  run(weight_views(), batch, 0.0, nullptr, gates.to(params_.scalar_type()), nullptr, &unused, span);
  return inputs;
}

GatedMlm MlmModel::evaluate_gated_from(const MlmBatch& batch, const at::Tensor& gates, int64_t first, const at::Tensor& x) const {
  const int64_t B = batch.input.size(0), L = config_.num_layers, H = config_.num_heads;
  CTXSIM_CHECK(gates.dim() == 3 && gates.size(0) == B && gates.size(1) == L && gates.size(2) == H, "evaluate_gated_from: gates [B, L, H]");
  GatedMlm g;
  g.loss.assign(size_t(B), 0.0), g.correct.assign(size_t(B), 0), g.predicted.assign(size_t(B), 0);
  const at::NoGradGuard no_grad;
  ForwardSpan span;
  span.first = first;
  if (first > 0) span.x = x;
  run(weight_views(), batch, 0.0, nullptr, gates.to(params_.scalar_type()), &g, nullptr, span);
  return g;
}

MlmModel MlmModel::load(const std::string& dir, at::ScalarType dtype) {
  const ModelFolder folder(dir);
  const std::string config_path = folder.is_gguf() ? dir : folder.config();
  const ModelConfig config = model_config_of(dir);
  const FamilySpec& f = family_spec(config.family);
  require_lm_head(config, config_path);
  MlmModel m(config, dtype);
  if (folder.is_gguf()) {  // a GGUF's tensors (dequantised, bare names, lm_head.weight when untied)
    const GgufFile file(dir);
    LoadReport report;
    const std::map<std::string, at::Tensor> t = read_gguf_tensors(file.header(), config, dir, report, /*head=*/true);
    const std::string prefix = f.model_prefix;
    for (const auto& p : m.layout_) {
      const bool prefixed = p.name.compare(0, prefix.size(), prefix) == 0;
      auto it = t.find(p.name);
      if (it == t.end() && prefixed) it = t.find(p.name.substr(prefix.size()));
      if (it == t.end()) throw Error(dir, "lacks the tensor " + p.name, std::string("give a complete ") + f.display + " model file");
      m.params_.narrow(0, p.offset, p.numel).copy_(it->second.reshape({-1}));
    }
    return m;
  }
  const SafetensorsFile file = open_checkpoint(folder);
  // Every check before a byte is copied (stages/model/checkpoint_checks.h): the layers, one tensor
  // per parameter, the head, every shape.
  const std::map<std::string, const TensorView*> by_name = mlm_checkpoint_tensors(file.tensors(), file.path(), config, folder.config());
  for (const auto& p : m.layout_) {
    const TensorView& v = *by_name.at(p.name);  // there, of its shape (mlm_checkpoint_tensors)
    at::Tensor raw = at::empty(p.shape, at::TensorOptions().dtype(weight_dtype(v, file.path())));
    int64_t first = -1;
    if (const int64_t bad = copy_counting_nonfinite(v, raw.data_ptr(), &first))
      throw Error(file.path() + ": tensor '" + v.name + "'",
                  std::to_string(bad) + " values are not finite (the first at flat index " + std::to_string(first) + ")",
                  "use a checkpoint with finite weights");
    m.params_.narrow(0, p.offset, p.numel).copy_(raw.reshape({-1}));
  }
  return m;
}

std::map<std::string, TensorData> MlmModel::export_tensors(DType dtype) const {
  CTXSIM_CHECK(dtype == DType::F32 || dtype == DType::F16, "export_tensors: F32 or F16");
  const at::Tensor values = params_.to(dtype == DType::F16 ? at::kHalf : at::kFloat).contiguous();
  const size_t width = dtype_size(dtype);
  std::map<std::string, TensorData> out;
  for (const auto& p : layout_) {
    TensorData t;
    t.dtype = dtype;
    t.shape = p.shape;
    t.bytes.resize(size_t(p.numel) * width);
    std::memcpy(t.bytes.data(), static_cast<const uint8_t*>(values.data_ptr()) + size_t(p.offset) * width, t.bytes.size());
    out.emplace(p.name, std::move(t));
  }
  return out;
}

AdamWState adamw_state(const at::Tensor& params) { return {at::zeros_like(params), at::zeros_like(params), 0}; }

namespace {

// One fused pass per element (no temporaries over the flat buffers: each would be a fresh
// multi-MB allocation, page faults included, several times a step).
template <class T>
void adamw_kernel(T* p, const T* g, const T* decay, T* m, T* v, int64_t n, double lr, double bc1, double bc2, const AdamWOptions& o) {
  const T b1 = T(o.beta1), b2 = T(o.beta2), eps = T(o.eps), shrink = T(lr * o.weight_decay), step = T(lr / bc1),
          root_bc2 = T(std::sqrt(bc2));
  at::parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T w = p[i] - shrink * decay[i] * p[i];
      const T mi = b1 * m[i] + (T(1) - b1) * g[i];
      const T vi = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
      m[i] = mi;
      v[i] = vi;
      p[i] = w - step * mi / (std::sqrt(vi) / root_bc2 + eps);
    }
  });
}

}  // namespace

void adamw_update(at::Tensor& params, const at::Tensor& grads, const at::Tensor& decay_mask, AdamWState& s, double lr,
                  const AdamWOptions& o) {
  CTXSIM_CHECK(params.is_contiguous() && grads.is_contiguous() && decay_mask.is_contiguous() && s.m.is_contiguous() && s.v.is_contiguous(),
               "adamw_update: flat contiguous buffers");
  ++s.steps;
  const double bc1 = 1 - std::pow(o.beta1, double(s.steps)), bc2 = 1 - std::pow(o.beta2, double(s.steps));
  if (params.scalar_type() == at::kDouble)
    adamw_kernel(params.data_ptr<double>(), grads.data_ptr<double>(), decay_mask.data_ptr<double>(), s.m.data_ptr<double>(),
                 s.v.data_ptr<double>(), params.numel(), lr, bc1, bc2, o);
  else
    adamw_kernel(params.data_ptr<float>(), grads.data_ptr<float>(), decay_mask.data_ptr<float>(), s.m.data_ptr<float>(),
                 s.v.data_ptr<float>(), params.numel(), lr, bc1, bc2, o);
}

double clip_grad_norm(at::Tensor& grads, double max_norm) {
  const double norm = grads.norm().item<double>();
  if (max_norm > 0 && norm > max_norm) grads.mul_(max_norm / (norm + 1e-6));
  return norm;
}

double learning_rate(int64_t step, int64_t steps, int64_t warmup, double peak) {
  if (step < warmup) return peak * double(step + 1) / double(warmup);
  if (steps <= warmup) return peak;
  return peak * std::max(0.0, double(steps - step) / double(steps - warmup));
}

}  // namespace ctxsim
