#include "stages/model/transformer_layer.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>

#include "stages/base/error.h"

namespace ctxsim {

Activation activation_of(const std::string& name) {
  if (name == "relu") return Activation::Relu;
  if (name == "gelu_new") return Activation::GeluTanh;
  if (name == "silu") return Activation::Silu;
  CTXSIM_CHECK(name == "gelu", "activation_of: '" + name + "' (config parsing admits gelu, gelu_new, relu)");
  return Activation::Gelu;
}

at::Tensor activate(const at::Tensor& x, Activation a) {
  if (a == Activation::Relu) return at::relu(x);
  if (a == Activation::Silu) return at::silu(x);
  return at::gelu(x, a == Activation::GeluTanh ? "tanh" : "none");
}

// activate() into out (ATen's relu is clamp_min(x, 0), which has an out variant).
void activate_out(at::Tensor& out, const at::Tensor& x, Activation a) {
  if (a == Activation::Relu)
    at::clamp_min_out(out, x, 0);
  else if (a == Activation::Silu)
    at::silu_out(out, x);
  else
    at::gelu_out(out, x, a == Activation::GeluTanh ? "tanh" : "none");
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
  o.rms_norm = f.rms_norm;
  o.kv_heads = c.kv_heads();
  o.head_dim = c.head_dim();
  o.rope_theta = f.rotary ? c.rope_theta : 0;
  o.llama3_rope = c.llama3_rope;
  o.rope_freq_factors = c.rope_freq_factors;
  o.gated_ffn = f.ffn_gate != nullptr;
  return o;
}

at::Tensor rope_inv_freq(int64_t d, double theta, const ModelConfig::Llama3Rope& llama3, const std::vector<double>& factors,
                         const at::TensorOptions& options) {
  const at::ScalarType work = options.dtype().toScalarType() == at::kDouble ? at::kDouble : at::kFloat;
  const at::TensorOptions o = at::TensorOptions().dtype(work).device(options.device());
  at::Tensor inv_freq = at::pow(theta, at::arange(0, d, 2, o.dtype(at::kLong)).to(work) / double(d)).reciprocal();
  if (!factors.empty()) {  // llama.cpp: theta_i / rope_freqs[i]
    CTXSIM_CHECK(int64_t(factors.size()) == d / 2, "rope_inv_freq: factors for another head size");
    return inv_freq / at::tensor(factors, o.dtype(at::kDouble)).to(work);
  }
  if (llama3.factor > 0) {  // transformers' _compute_llama3_parameters, operation for operation
    const double old_len = double(llama3.original_max_positions), low = llama3.low_freq_factor, high = llama3.high_freq_factor;
    const double low_wavelen = old_len / low, high_wavelen = old_len / high;
    const at::Tensor wavelen = inv_freq.reciprocal() * (2 * M_PI);
    const at::Tensor scaled = at::where(wavelen > low_wavelen, inv_freq / llama3.factor, inv_freq);
    const at::Tensor smooth = (wavelen.reciprocal() * old_len - low) / (high - low);
    const at::Tensor smoothed = at::rsub(smooth, 1) * scaled / llama3.factor + smooth * scaled;
    const at::Tensor medium = (wavelen < high_wavelen).logical_not() & (wavelen > low_wavelen).logical_not();
    inv_freq = at::where(medium, smoothed, scaled);
  }
  return inv_freq;
}

double mask_lowest(at::ScalarType dtype) {
  if (dtype == at::kDouble) return std::numeric_limits<double>::lowest();
  if (dtype == at::kBFloat16) return -3.3895313892515355e38;  // bfloat16's lowest finite value
  return double(std::numeric_limits<float>::lowest());
}

KeyMask key_mask(const at::Tensor& valid, int64_t heads, const at::TensorOptions& options, AttentionKernel kernel, bool causal,
                 bool rows_only) {
  const int64_t B = valid.size(0), T = valid.size(1);
  KeyMask m;
  m.causal = causal;
  m.keys =
      at::zeros({B, 1, 1, T}, options).masked_fill(valid.logical_not().view({B, 1, 1, T}), mask_lowest(options.dtype().toScalarType()));
  if (causal && rows_only) return m;
  m.additive = causal ? m.rows(-1, 0, T).unsqueeze(0) + m.keys : m.keys;  // [B, 1, T, T] or [B, 1, 1, T]
  if (kernel == AttentionKernel::PerSample)                               // the GEMM adds it (beta = 1)
    for (int64_t b = 0; b < B; ++b) m.per_sample.push_back(m.additive[b].expand({heads, T, T}));
  return m;
}

at::Tensor KeyMask::rows(int64_t b, int64_t first, int64_t count) const {
  const int64_t T = keys.size(3);
  if (!causal) return keys[b].expand({1, count, T});
  // As GPT-2's: scores where j > i are the lowest value, then the key mask added (b < 0: not yet).
  const at::TensorOptions o = keys.options();
  const at::Tensor i = at::arange(first, first + count, o.dtype(at::kLong)).view({count, 1});
  const at::Tensor later = at::arange(T, o.dtype(at::kLong)).view({1, T}) > i;
  const at::Tensor causal_part = at::zeros({1, count, T}, o).masked_fill(later.unsqueeze(0), mask_lowest(o.dtype().toScalarType()));
  return b < 0 ? causal_part : causal_part + keys[b];
}

namespace {

// Inference (no autograd): elementwise results may overwrite the fresh tensors they are computed
// from, with the same operations in the same order (the same bits), saving a buffer a pass.
bool in_place() { return !at::GradMode::is_enabled(); }

// (x r) w in one pass over rows of n, r one value a row: the same two products per element as
// ATen's x * r then .mul_(w) (no contraction in this file), so the same bits.
template <class Real>
at::Tensor scale_rows(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w) {
  const int64_t n = x.size(-1);
  at::Tensor out = at::empty(x.sizes(), x.options());
  const Real *px = x.data_ptr<Real>(), *pr = r.data_ptr<Real>(), *pw = w.data_ptr<Real>();
  Real* po = out.data_ptr<Real>();
  at::parallel_for(0, x.numel() / n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const Real* in = px + row * n;
      Real* o = po + row * n;
      const Real scale = pr[row];
      for (int64_t i = 0; i < n; ++i) o[i] = in[i] * scale * pw[i];
    }
  });
  return out;
}

}  // namespace

at::Tensor normalise(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps, bool rms) {
  if (!rms) return at::layer_norm(x, {x.size(-1)}, w, b, eps);
  // As transformers' LlamaRMSNorm: half precisions normalised in float32, cast back, then scaled.
  const bool half = x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf;
  const at::Tensor h = half ? x.to(at::kFloat) : x;
  if (in_place()) {
    const at::Tensor r = h.pow(2).mean(-1, /*keepdim=*/true).add_(eps).rsqrt_();
    if (x.is_cpu() && x.is_contiguous() && w.is_contiguous() && w.scalar_type() == x.scalar_type()) {
      if (x.scalar_type() == at::kFloat) return scale_rows<float>(x, r, w);
      if (x.scalar_type() == at::kDouble) return scale_rows<double>(x, r, w);
    }
    return (h * r).to(x.scalar_type()).mul_(w);
  }
  return w * (h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type());
}

at::Tensor embed(const EmbeddingWeights& w, const at::Tensor& ids, double eps, const DropoutFn& dropout) {
  const int64_t T = ids.size(1), hidden = w.word.size(1);
  at::Tensor x = at::embedding(w.word, ids);  // then positions, token type 0, LayerNorm
  if (w.position.defined() && w.pad_position < 0) {
    x = x + w.position.slice(0, 0, T).unsqueeze(0);
  } else if (w.position.defined()) {  // Hugging Face's create_position_ids_from_input_ids
    const at::Tensor kept = ids.ne(w.pad_position).to(at::kLong);
    x = x + at::embedding(w.position, at::cumsum(kept, 1) * kept + w.pad_position);
  }  // else rotary positions, applied to q and k in each layer
  if (w.token_type.defined()) x = x + w.token_type[0];
  if (w.norm_w.defined()) x = at::layer_norm(x, {hidden}, w.norm_w, w.norm_b, eps);
  return dropout ? dropout(x, 0) : x;
}

namespace {

// The inference kernels' matrix products, in blocks of kAttentionRowBlock query rows: BLAS's
// result for a row depends on how many rows share the call (remainder kernels, one-row calls
// taken as matrix-vector products), so the whole maps and the tiles make the same calls, and every
// value is the same bits in both. A map of at most 128 rows is one call.
//
// Causal attention (causal_row0 >= 0: the map's row 0 is query position causal_row0): a block of
// rows ending at position i needs keys 0..i only; the later keys' scores are the mask there (a
// causal mask's lowest value; + scale q·k would round back to it), and their attention is exactly
// 0, so the products skip them: about half of the attention's work at long contexts. The cut
// depends on the positions only, so tiles and whole maps still make the same calls.
int64_t keys_needed(int64_t causal_row0, int64_t first, int64_t n, int64_t T) {
  return causal_row0 < 0 ? T : std::min(T, causal_row0 + first + n);
}

// out [H, n, T] = mask [H, n, T] + scale q [H, n, d] kᵀ [H, d, T], block by block.
void scores_by_block(at::Tensor out, const at::Tensor& mask, const at::Tensor& q, const at::Tensor& kt, double scale, int64_t causal_row0) {
  const int64_t T = out.size(2);
  for (int64_t first = 0; first < q.size(1); first += kAttentionRowBlock) {
    const int64_t n = std::min(kAttentionRowBlock, q.size(1) - first), keys = keys_needed(causal_row0, first, n, T);
    const at::Tensor block = out.narrow(1, first, n), block_mask = mask.narrow(1, first, n);
    if (keys < T) block.narrow(2, keys, T - keys).copy_(block_mask.narrow(2, keys, T - keys));
    at::Tensor products = block.narrow(2, 0, keys);
    at::baddbmm_out(products, block_mask.narrow(2, 0, keys), q.narrow(1, first, n), kt.narrow(2, 0, keys), /*beta=*/1, /*alpha=*/scale);
  }
}

// out [H, n, d] = attention [H, n, T] v [H, T, d], block by block.
void context_by_block(at::Tensor out, const at::Tensor& attention, const at::Tensor& v, int64_t causal_row0) {
  const int64_t T = attention.size(2);
  for (int64_t first = 0; first < attention.size(1); first += kAttentionRowBlock) {
    const int64_t n = std::min(kAttentionRowBlock, attention.size(1) - first), keys = keys_needed(causal_row0, first, n, T);
    at::Tensor block = out.narrow(1, first, n);
    at::bmm_out(block, attention.narrow(1, first, n).narrow(2, 0, keys), v.narrow(1, 0, keys));
  }
}

// Runs fn(b, h, n) on heads [h, h + n) of samples b < B. On the CPU with at least two heads a
// thread, one head a task, the tasks in parallel: each head's products then run single-threaded
// in their task, where a product of all heads at once split each head's small GEMM across the
// threads (a wake-up and a barrier a head) and ran the heads one after another. With fewer heads
// (a many-core rank) and off the CPU (a GPU): every head of a sample in one call, the BLAS or the
// device parallel within it. The choice depends on the heads and threads only, never on the batch
// or the tiles, so that the tiled and whole maps make the same calls on the same threads (OpenBLAS
// gives a row different bits when its threads split a product at other rows).
bool heads_one_a_task(const at::Tensor& like, int64_t H) { return like.is_cpu() && H >= 2 * int64_t(at::get_num_threads()); }

// at::parallel_for with the caller's InferenceMode and grad mode in every task (both are
// thread-local; InferenceMode(false) alone would turn grad mode on).
template <class Fn>
void parallel_in_callers_modes(int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  const bool inference = c10::InferenceMode::is_enabled(), grad = at::GradMode::is_enabled();
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    const c10::InferenceMode inference_guard(inference);
    const at::AutoGradMode grad_guard(grad);
    fn(b, e);
  });
}

template <class Fn>
void for_heads(const at::Tensor& like, int64_t B, int64_t H, const Fn& fn) {
  if (!heads_one_a_task(like, H)) {
    for (int64_t b = 0; b < B; ++b) fn(b, 0, H);
    return;
  }
  parallel_in_callers_modes(0, B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i / H, i % H, 1);
  });
}

// The keys or values [H_kv, T, d] of one sample that query heads [h, h + n) of H read: head h / (H / H_kv).
at::Tensor kv_heads(const at::Tensor& x, int64_t h, int64_t n, int64_t H) {
  const int64_t group = H / x.size(0);
  CTXSIM_CHECK(group == 1 || n == 1, "attention: grouped keys and values are read one query head at a time");
  return x.narrow(0, h / group, n);
}

// One sample's heads, some query rows: scores [n, c, T] = mask + scale q [n, c, d] kᵀ [n, d, T],
// attention = softmax(scores) (each row alone, so the same bits however rows are grouped),
// context [n, c, d] = attention v [n, T, d].
void attend_rows(at::Tensor scores, at::Tensor attention, at::Tensor context, const at::Tensor& mask, const at::Tensor& q,
                 const at::Tensor& kt, const at::Tensor& v, double scale, int64_t causal_row0) {
  scores_by_block(scores, mask, q, kt, scale, causal_row0);
  at::_softmax_out(attention, scores, -1, /*half_to_float=*/false);
  context_by_block(context, attention, v, causal_row0);
}

// q [B, H, T, d] and k, v [B, H_kv, T, d] views → context [B, H, T, d] and the attention map [B, H, T, T].
void attend_per_sample(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const KeyMask& mask, double scale,
                       AttentionTrace& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  CTXSIM_CHECK(int64_t(mask.per_sample.size()) == B, "attention: the PerSample kernel needs the per-sample key masks");
  const at::Tensor scores = at::empty({B, H, T, T}, q.options());  // q kᵀ / √d + mask
  out.attention = at::empty({B, H, T, T}, q.options());
  out.context = at::empty({B, H, T, d}, q.options());
  for_heads(q, B, H, [&](int64_t b, int64_t h, int64_t n) {
    const auto heads = [&](const at::Tensor& x) { return x[b].narrow(0, h, n); };
    attend_rows(heads(scores), heads(out.attention), heads(out.context), mask.per_sample[size_t(b)].narrow(0, h, n), heads(q),
                kv_heads(k[b], h, n, H).transpose(-1, -2), kv_heads(v[b], h, n, H), scale, mask.causal ? 0 : -1);
  });
}

// The same in tiles of mode.attention_rows query rows per sample (rounded up to whole blocks):
// the scores, softmax and A·v of one tile at a time, each tile handed out.
void attend_tiled(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const KeyMask& mask, double scale, const LayerMode& mode,
                  int64_t layer, AttentionTrace& out) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
  const int64_t rows = attention_tile_size(mode.attention_rows, T);
  out.context = at::empty({B, H, T, d}, q.options());
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t first = 0; first < T; first += rows) {
      const int64_t count = std::min(rows, T - first);
      const at::Tensor scores = at::empty({H, count, T}, q.options()), attention = at::empty({H, count, T}, q.options());
      const at::Tensor tile_mask = mask.rows(b, first, count).expand({H, count, T});
      const at::Tensor context = out.context[b].narrow(1, first, count);
      for_heads(q, 1, H, [&](int64_t, int64_t h, int64_t n) {
        const auto heads = [&](const at::Tensor& x) { return x.narrow(0, h, n); };
        attend_rows(heads(scores), heads(attention), heads(context), heads(tile_mask), heads(q[b]).narrow(1, first, count),
                    kv_heads(k[b], h, n, H).transpose(-1, -2), kv_heads(v[b], h, n, H), scale, mask.causal ? first : -1);
      });
      if (mode.on_attention_rows) mode.on_attention_rows(layer, b, first, attention);
    }
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

namespace {

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
}

// Hugging Face's rotary embedding (LlamaRotaryEmbedding, the default rope type): inv_freq_i =
// 1 / theta^(2i / d), the angle of position t is t · inv_freq, and cos/sin repeat it over the two
// halves of d. Computed in float32 as transformers does (float64 for a float64 model), then cast.
std::pair<at::Tensor, at::Tensor> rotary_tables(int64_t T, int64_t d, const LayerOptions& lo, const at::TensorOptions& options) {
  const at::Tensor inv_freq = rope_inv_freq(d, lo.rope_theta, lo.llama3_rope, lo.rope_freq_factors, options);
  const at::TensorOptions o = at::TensorOptions().dtype(inv_freq.scalar_type()).device(options.device());
  const at::Tensor freqs = at::arange(T, o.dtype(at::kLong)).to(inv_freq.scalar_type()).unsqueeze(1) * inv_freq.unsqueeze(0);  // [T, d/2]
  const at::Tensor angles = at::cat({freqs, freqs}, -1);                                                                       // [T, d]
  return {angles.cos().to(options.dtype()), angles.sin().to(options.dtype())};
}

// rotate() in one pass over rows of d: for each element the ATen expression's two products and
// one sum (this file is compiled without fused multiply-add contraction), so the same bits,
// without its three temporaries and five passes over q and k.
template <class Real>
at::Tensor rotate_rows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t n = x.size(1), T = x.size(2), d = x.size(3), half = d / 2, s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2);
  at::Tensor out = at::empty(x.sizes(), x.options());
  const Real *px = x.data_ptr<Real>(), *pc = cos.data_ptr<Real>(), *ps = sin.data_ptr<Real>();
  Real* po = out.data_ptr<Real>();
  at::parallel_for(0, x.size(0) * n * T, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t t = r % T;
      const Real* in = px + r / (n * T) * s0 + r / T % n * s1 + t * s2;
      const Real *c = pc + t * d, *s = ps + t * d;
      Real* o = po + r * d;
      for (int64_t i = 0; i < half; ++i) o[i] = in[i] * c[i] + -in[i + half] * s[i];
      for (int64_t i = half; i < d; ++i) o[i] = in[i] * c[i] + in[i - half] * s[i];
    }
  });
  return out;
}

// x [B, heads, T, d] rotated: x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1].
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (in_place() && x.is_cpu() && x.stride(3) == 1 && cos.is_contiguous() && sin.is_contiguous()) {
    if (x.scalar_type() == at::kFloat) return rotate_rows<float>(x, cos, sin);
    if (x.scalar_type() == at::kDouble) return rotate_rows<double>(x, cos, sin);
  }
  const int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  if (in_place()) return (x * cos).add_(rotated.mul_(sin));
  return x * cos + rotated * sin;
}

// act(gate) · up of [gate | up] rows (inner [..., 2F] contiguous) in blocks of rows of about
// 512 KiB of output (a core's L2 with their inputs): ATen's own activation into the block of the
// output, then the product in place, so each element takes the same two operations as the
// whole-tensor expression in one pass over memory, where the expression made three (the activation
// written out, read back beside up, the product written). The same bits as the expression: ATen
// runs an activation over strided rows with one loop and over a contiguous tensor with another
// whose last bits differ (gelu's), and a block of one row would be contiguous, so every block has
// two rows or more (the last takes the remainder), unless the tensor has one row (then the
// expression's is contiguous too). The blocks are fixed by the rows alone, and handed out to the
// threads whole, so their bits do not depend on the thread count. The expression's can: ATen's
// threads split its elements evenly, and where a split falls inside a row (5 or 7 threads on rows
// of 1,536; rows not a multiple of the vector width), that row ends in the activation's scalar
// loop, whose last bits differ from its vector loop's; on 1-4 threads and SmolLM2's or Llama's
// widths the splits fall on vector boundaries.
at::Tensor gated_rows(const at::Tensor& inner, Activation a) {
  const int64_t F = inner.size(-1) / 2, rows = inner.numel() / (2 * F);
  const at::Tensor in = inner.view({rows, 2 * F});
  std::vector<int64_t> shape = inner.sizes().vec();
  shape.back() = F;
  at::Tensor out = at::empty(shape, inner.options());
  const at::Tensor flat = out.view({rows, F});
  const int64_t block = std::max<int64_t>(2, (int64_t(512) << 10) / (F * int64_t(inner.element_size())));  // 512 KiB of output
  const int64_t blocks = std::max<int64_t>(1, rows / block);
  parallel_in_callers_modes(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t first = k * block, n = k + 1 == blocks ? rows - first : block;
      const at::Tensor part = in.narrow(0, first, n);
      at::Tensor o = flat.narrow(0, first, n);
      activate_out(o, part.narrow(1, 0, F), a);
      o.mul_(part.narrow(1, F, F));
    }
  });
  return out;
}

}  // namespace

at::Tensor gated_activation(const at::Tensor& inner, Activation a) {
  if (in_place() && inner.is_cpu() && inner.is_contiguous()) return gated_rows(inner, a);
  const int64_t F = inner.size(-1) / 2;
  at::Tensor gate = activate(inner.narrow(-1, 0, F), a);
  const at::Tensor up = inner.narrow(-1, F, F);
  return in_place() ? gate.mul_(up) : gate * up;
}

at::Tensor attention_block(const LayerWeights& w, const at::Tensor& x, const KeyMask& mask, const LayerOptions& o, const LayerMode& mode,
                           int64_t layer, AttentionTrace* trace) {
  CTXSIM_CHECK(mode.kernel == AttentionKernel::Batched || !mode.dropout, "attention_block: dropout needs the Batched kernel");
  const int64_t B = x.size(0), T = x.size(1), hidden = x.size(2), H = o.heads, d = o.head_dim > 0 ? o.head_dim : hidden / H;
  const int64_t Hkv = o.kv_heads > 0 ? o.kv_heads : H;
  const bool pre = o.norm == NormPlacement::Pre;
  const at::Tensor in = pre ? normalise(x, w.norm1_w, w.norm1_b, o.eps, o.rms_norm) : x;
  // One GEMM for the three projections, then three [B, H, T, d] views (the same layout for
  // every family without rotary positions or grouped heads).
  const at::Tensor fused = linear(in, w.qkv_w, w.qkv_b);
  at::Tensor q, k, v;
  if (o.rope_theta <= 0 && Hkv == H) {
    const at::Tensor qkv = fused.view({B, T, 3, H, d}).permute({2, 0, 3, 1, 4});
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    const auto heads = [&](int64_t first, int64_t n) { return fused.narrow(-1, first * d, n * d).view({B, T, n, d}).transpose(1, 2); };
    q = heads(0, H), k = heads(H, Hkv), v = heads(H + Hkv, Hkv);
    if (w.q_norm_w.defined()) q = normalise(q, w.q_norm_w, {}, o.eps, true);  // Qwen3, over head_dim
    if (w.k_norm_w.defined()) k = normalise(k, w.k_norm_w, {}, o.eps, true);
    if (o.rope_theta > 0) {
      const auto [cos, sin] = rotary_tables(T, d, o, q.options());
      q = rotate(q, cos, sin), k = rotate(k, cos, sin);
    }
    // Query head h reads key/value head h / (H / H_kv): the CPU's per-head tasks read it where it
    // is; calls over all heads at once need a copy per query head.
    if (Hkv != H && (mode.kernel == AttentionKernel::Batched || !heads_one_a_task(q, H))) {
      k = k.repeat_interleave(H / Hkv, 1);
      v = v.repeat_interleave(H / Hkv, 1);
    }
  }
  const double scale = 1.0 / std::sqrt(double(d));
  AttentionTrace local;
  AttentionTrace& t = trace ? *trace : local;
  if (mode.kernel == AttentionKernel::PerSample && mode.attention_rows > 0 && mode.attention_rows < T)
    attend_tiled(q, k, v, mask, scale, mode, layer, t);
  else if (mode.kernel == AttentionKernel::PerSample)
    attend_per_sample(q, k, v, mask, scale, t);
  else
    attend_batched(q, k, v, mask, scale, mode.dropout, layer, t);
  at::Tensor context = t.context;
  if (mode.gates.defined()) {
    const at::Tensor g = mode.gates.dim() == 3 ? mode.gates.select(1, layer) : mode.gates[layer].unsqueeze(0).expand({B, H});
    context = context * g.to(context.scalar_type()).reshape({B, H, 1, 1});
  }
  const at::Tensor merged = context.transpose(1, 2).reshape({B, T, H * d});
  at::Tensor projected = linear(merged, w.o_w, w.o_b);
  if (mode.dropout && o.dropout_after_attention_output) projected = mode.dropout(projected, uint64_t(2 + 3 * layer));
  if (pre) return in_place() ? projected.add_(x) : x + projected;
  return normalise(projected + x, w.norm1_w, w.norm1_b, o.eps, o.rms_norm);
}

at::Tensor feed_forward_block(const LayerWeights& w, const at::Tensor& h, const LayerOptions& o, const LayerMode& mode, int64_t layer) {
  const bool pre = o.norm == NormPlacement::Pre;
  const at::Tensor in = pre ? normalise(h, w.norm2_w, w.norm2_b, o.eps, o.rms_norm) : h;
  at::Tensor inner = linear(in, w.ffn_in_w, w.ffn_in_b);
  inner = o.gated_ffn ? gated_activation(inner, o.activation) : activate(inner, o.activation);
  at::Tensor out = linear(inner, w.ffn_out_w, w.ffn_out_b);
  if (mode.dropout) out = mode.dropout(out, uint64_t(3 + 3 * layer));
  if (pre) return in_place() ? out.add_(h) : h + out;
  return normalise(out + h, w.norm2_w, w.norm2_b, o.eps, o.rms_norm);
}

at::Tensor final_norm(const EmbeddingWeights& w, const at::Tensor& x, const LayerOptions& o) {
  return w.final_norm_w.defined() ? normalise(x, w.final_norm_w, w.final_norm_b, o.eps, o.rms_norm) : x;
}

EmbeddingWeights gather_embeddings(const FamilySpec& f, int64_t pad_position, const TensorGetter& get) {
  const auto name = [](const char* base, const char* kind) { return std::string(base) + "." + kind; };
  EmbeddingWeights e;
  e.pad_position = pad_position;
  e.word = get(name(f.word, "weight"));
  if (f.position) e.position = get(name(f.position, "weight"));
  if (f.token_type) e.token_type = get(name(f.token_type, "weight"));
  if (f.embed_norm) e.norm_w = get(name(f.embed_norm, "weight")), e.norm_b = get(name(f.embed_norm, "bias"));
  if (f.final_norm) {
    e.final_norm_w = get(name(f.final_norm, "weight"));
    if (!f.rms_norm) e.final_norm_b = get(name(f.final_norm, "bias"));
  }
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
  const auto bias = [&](const char* role, bool has) { return has ? W(role, "bias") : at::Tensor(); };
  LayerWeights L;
  if (f.qkv) {  // [W_q | W_k | W_v] already fused: as Linear, the stacked [3 hidden, hidden]
    L.qkv_w = linear(f.qkv);
    L.qkv_b = W(f.qkv, "bias");
  } else {
    L.qkv_w = stack({W(f.query, "weight"), W(f.key, "weight"), W(f.value, "weight")});
    if (f.qkv_bias) L.qkv_b = stack({W(f.query, "bias"), W(f.key, "bias"), W(f.value, "bias")});
  }
  if (f.q_norm) L.q_norm_w = W(f.q_norm, "weight");
  if (f.k_norm) L.k_norm_w = W(f.k_norm, "weight");
  L.o_w = linear(f.attn_out);
  L.o_b = bias(f.attn_out, f.dense_bias);
  L.norm1_w = W(f.attn_norm, "weight");
  L.norm1_b = bias(f.attn_norm, !f.rms_norm);
  if (f.ffn_gate) {  // [gate; up], one GEMM
    L.ffn_in_w = stack({linear(f.ffn_gate), linear(f.ffn_in)});
    if (f.dense_bias) L.ffn_in_b = stack({W(f.ffn_gate, "bias"), W(f.ffn_in, "bias")});
  } else {
    L.ffn_in_w = linear(f.ffn_in);
    L.ffn_in_b = bias(f.ffn_in, f.dense_bias);
  }
  L.ffn_out_w = linear(f.ffn_out);
  L.ffn_out_b = bias(f.ffn_out, f.dense_bias);
  L.norm2_w = W(f.ffn_norm, "weight");
  L.norm2_b = bias(f.ffn_norm, !f.rms_norm);
  return L;
}

}  // namespace ctxsim
