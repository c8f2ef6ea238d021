#include "stages/model/transformer_layer.h"

#include <cmath>
#include <limits>

#include "stages/base/error.h"

namespace ctxsim {

Activation activation_of(const std::string& name) {
  if (name == "relu") return Activation::Relu;
  if (name == "gelu_new") return Activation::GeluTanh;
  CTXSIM_CHECK(name == "gelu", "activation_of: '" + name + "' (config parsing admits gelu, gelu_new, relu)");
  return Activation::Gelu;
}

at::Tensor activate(const at::Tensor& x, Activation a) {
  if (a == Activation::Relu) return at::relu(x);
  return at::gelu(x, a == Activation::GeluTanh ? "tanh" : "none");
}

LayerOptions layer_options(const ModelConfig& c) {
  const FamilySpec& f = family_spec(c.family);
  LayerOptions o;
  o.heads = c.num_heads;
  o.eps = c.layer_norm_eps;
  o.activation = activation_of(c.hidden_act);
  o.norm = f.norm;
  o.dropout_after_attention_output = f.dropout_after_attention_output;
  o.causal = f.causal;
  return o;
}

double mask_lowest(at::ScalarType dtype) {
  if (dtype == at::kDouble) return std::numeric_limits<double>::lowest();
  if (dtype == at::kBFloat16) return -3.3895313892515355e38;  // bfloat16's lowest finite value
  return double(std::numeric_limits<float>::lowest());
}

KeyMask key_mask(const at::Tensor& valid, int64_t heads, const at::TensorOptions& options, AttentionKernel kernel, bool causal) {
  const int64_t B = valid.size(0), T = valid.size(1);
  const double lowest = mask_lowest(options.dtype().toScalarType());
  KeyMask m;
  m.additive = at::zeros({B, 1, 1, T}, options).masked_fill(valid.logical_not().view({B, 1, 1, T}), lowest);
  if (causal) {  // as GPT-2's: scores where j > i are the lowest value, then the key mask added
    const at::Tensor later = at::ones({T, T}, at::TensorOptions().dtype(at::kBool).device(options.device())).triu(1);
    m.additive = at::zeros({1, 1, T, T}, options).masked_fill(later, lowest) + m.additive;
  }
  if (kernel == AttentionKernel::PerSample)  // the GEMM adds it (beta = 1)
    for (int64_t b = 0; b < B; ++b) m.per_sample.push_back(m.additive[b].expand({heads, T, T}));
  return m;
}

at::Tensor embed(const EmbeddingWeights& w, const at::Tensor& ids, double eps, const DropoutFn& dropout) {
  const int64_t T = ids.size(1), hidden = w.word.size(1);
  at::Tensor x = at::embedding(w.word, ids);  // then positions, token type 0, LayerNorm
  if (w.pad_position < 0) {
    x = x + w.position.slice(0, 0, T).unsqueeze(0);
  } else {  // Hugging Face's create_position_ids_from_input_ids
    const at::Tensor kept = ids.ne(w.pad_position).to(at::kLong);
    x = x + at::embedding(w.position, at::cumsum(kept, 1) * kept + w.pad_position);
  }
  if (w.token_type.defined()) x = x + w.token_type[0];
  if (w.norm_w.defined()) x = at::layer_norm(x, {hidden}, w.norm_w, w.norm_b, eps);
  return dropout ? dropout(x, 0) : x;
}

namespace {

// q, k, v [B, H, T, d] views → context [B, H, T, d] and the attention map [B, H, T, T].
void attend_per_sample(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const KeyMask& mask, double scale,
                       AttentionTrace& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  CTXSIM_CHECK(int64_t(mask.per_sample.size()) == B, "attention: the PerSample kernel needs the per-sample key masks");
  at::Tensor scores = at::empty({B, H, T, T}, q.options());  // q kᵀ / √d + mask
  for (int64_t b = 0; b < B; ++b) {
    at::Tensor slot = scores[b];
    at::baddbmm_out(slot, mask.per_sample[size_t(b)], q[b], k[b].transpose(-1, -2), /*beta=*/1, /*alpha=*/scale);
  }
  out.attention = at::softmax(scores, -1);
  out.context = at::empty({B, H, T, d}, q.options());
  for (int64_t b = 0; b < B; ++b) {
    at::Tensor slot = out.context[b];
    at::bmm_out(slot, out.attention[b], v[b]);
  }
}

void attend_batched(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const KeyMask& mask, double scale,
                    const DropoutFn& dropout, int64_t layer, AttentionTrace& out) {
  const at::Tensor scores = at::matmul(q, k.transpose(-1, -2)).mul(scale).add(mask.additive);  // [B, H, T, T]
  out.attention = at::softmax(scores, -1);
  if (dropout) out.attention = dropout(out.attention, uint64_t(1 + 3 * layer));
  out.context = at::matmul(out.attention, v);  // [B, H, T, d]
}

}  // namespace

at::Tensor attention_block(const LayerWeights& w, const at::Tensor& x, const KeyMask& mask, const LayerOptions& o, const LayerMode& mode,
                           int64_t layer, AttentionTrace* trace) {
  CTXSIM_CHECK(mode.kernel == AttentionKernel::Batched || !mode.dropout, "attention_block: dropout needs the Batched kernel");
  const int64_t B = x.size(0), T = x.size(1), hidden = x.size(2), H = o.heads, d = hidden / H;
  const bool pre = o.norm == NormPlacement::Pre;
  const at::Tensor in = pre ? at::layer_norm(x, {hidden}, w.norm1_w, w.norm1_b, o.eps) : x;
  // One GEMM for the three projections, then [B, T, 3, H, d] → three [B, H, T, d] views.
  const at::Tensor qkv = at::linear(in, w.qkv_w, w.qkv_b).view({B, T, 3, H, d}).permute({2, 0, 3, 1, 4});
  const double scale = 1.0 / std::sqrt(double(d));
  AttentionTrace local;
  AttentionTrace& t = trace ? *trace : local;
  if (mode.kernel == AttentionKernel::PerSample)
    attend_per_sample(qkv[0], qkv[1], qkv[2], mask, scale, t);
  else
    attend_batched(qkv[0], qkv[1], qkv[2], mask, scale, mode.dropout, layer, t);
  at::Tensor context = t.context;
  if (mode.gates.defined()) {
    const at::Tensor g = mode.gates.dim() == 3 ? mode.gates.select(1, layer) : mode.gates[layer].unsqueeze(0).expand({B, H});
    context = context * g.to(context.scalar_type()).reshape({B, H, 1, 1});
  }
  const at::Tensor merged = context.transpose(1, 2).reshape({B, T, hidden});
  at::Tensor projected = at::linear(merged, w.o_w, w.o_b);
  if (mode.dropout && o.dropout_after_attention_output) projected = mode.dropout(projected, uint64_t(2 + 3 * layer));
  if (pre) return x + projected;
  return at::layer_norm(projected + x, {hidden}, w.norm1_w, w.norm1_b, o.eps);
}

at::Tensor feed_forward_block(const LayerWeights& w, const at::Tensor& h, const LayerOptions& o, const LayerMode& mode, int64_t layer) {
  const int64_t hidden = h.size(2);
  const bool pre = o.norm == NormPlacement::Pre;
  const at::Tensor in = pre ? at::layer_norm(h, {hidden}, w.norm2_w, w.norm2_b, o.eps) : h;
  const at::Tensor inner = activate(at::linear(in, w.ffn_in_w, w.ffn_in_b), o.activation);
  at::Tensor out = at::linear(inner, w.ffn_out_w, w.ffn_out_b);
  if (mode.dropout) out = mode.dropout(out, uint64_t(3 + 3 * layer));
  if (pre) return h + out;
  return at::layer_norm(out + h, {hidden}, w.norm2_w, w.norm2_b, o.eps);
}

EmbeddingWeights gather_embeddings(const FamilySpec& f, const TensorGetter& get) {
  const auto name = [](const char* base, const char* kind) { return std::string(base) + "." + kind; };
  EmbeddingWeights e;
  e.word = get(name(f.word, "weight"));
  e.position = get(name(f.position, "weight"));
  if (f.token_type) e.token_type = get(name(f.token_type, "weight"));
  if (f.embed_norm) e.norm_w = get(name(f.embed_norm, "weight")), e.norm_b = get(name(f.embed_norm, "bias"));
  if (f.final_norm) e.final_norm_w = get(name(f.final_norm, "weight")), e.final_norm_b = get(name(f.final_norm, "bias"));
  return e;
}

LayerWeights gather_layer(const FamilySpec& f, int64_t layer, const TensorGetter& get,
                          const std::function<at::Tensor(const std::vector<at::Tensor>&)>& stack) {
  const std::string p = f.layer_prefix + std::to_string(layer) + ".";
  const auto W = [&](const char* role, const char* kind) { return get(p + role + "." + kind); };
  // A weight in Linear's [out, in]: a Conv1D family stores its transpose.
  const auto linear = [&](const char* role) {
    const at::Tensor w = W(role, "weight");
    return f.conv1d ? w.t().contiguous() : w;
  };
  LayerWeights L;
  if (f.qkv) {  // [W_q | W_k | W_v] already fused: as Linear, the stacked [3 hidden, hidden]
    L.qkv_w = linear(f.qkv);
    L.qkv_b = W(f.qkv, "bias");
  } else {
    L.qkv_w = stack({W(f.query, "weight"), W(f.key, "weight"), W(f.value, "weight")});
    L.qkv_b = stack({W(f.query, "bias"), W(f.key, "bias"), W(f.value, "bias")});
  }
  L.o_w = linear(f.attn_out);
  L.o_b = W(f.attn_out, "bias");
  L.norm1_w = W(f.attn_norm, "weight");
  L.norm1_b = W(f.attn_norm, "bias");
  L.ffn_in_w = linear(f.ffn_in);
  L.ffn_in_b = W(f.ffn_in, "bias");
  L.ffn_out_w = linear(f.ffn_out);
  L.ffn_out_b = W(f.ffn_out, "bias");
  L.norm2_w = W(f.ffn_norm, "weight");
  L.norm2_b = W(f.ffn_norm, "bias");
  return L;
}

}  // namespace ctxsim
