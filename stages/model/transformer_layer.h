// One transformer layer and the embeddings in ATen, written once for every family in family.h
// and for both users: the analysis's inference forward (model.cpp: InferenceMode, the per-sample
// attention kernel, the per-head context vectors and attention maps handed out) and masked-LM
// training (mlm.cpp: autograd through whole-batch kernels, dropout). Where families differ the
// layer takes options (activation, LayerNorm placement, a causal mask); where users differ it
// takes a mode (attention kernel, dropout). It must not know checkpoints, names or files.
#pragma once
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stages/model/encoder.h"  // AttentionRowsFn
#include "stages/model/model_config.h"

namespace ctxsim {

enum class Activation { Gelu, GeluTanh, Relu, Silu };  // config "gelu" (erf), "gelu_new" (tanh), "relu", "silu"
Activation activation_of(const std::string& name);
at::Tensor activate(const at::Tensor& x, Activation a);

// The embedding tables, by role.
struct EmbeddingWeights {
  at::Tensor word;                        // [vocab, hidden]
  at::Tensor position;                    // [max_positions, hidden]
  at::Tensor token_type;                  // [type_vocab, hidden]; undefined for a family without token types
  at::Tensor norm_w, norm_b;              // [hidden]; undefined: no LayerNorm on the embeddings (GPT-2)
  at::Tensor final_norm_w, final_norm_b;  // [hidden]: after the last layer (GPT-2's ln_f); undefined: none
  int64_t pad_position = -1;              // ModelConfig::pad_position: positions from the padding id (RoBERTa); -1: 0, 1, …
};

// One layer's weights by role (HF Linear layout: [out, in]).
struct LayerWeights {
  at::Tensor qkv_w, qkv_b;          // [(H + 2 H_kv) d, hidden], [(H + 2 H_kv) d]: W_q, W_k, W_v stacked, one GEMM; no bias: undefined
  at::Tensor o_w, o_b;              // [hidden, hidden], [hidden]: W_O
  at::Tensor norm1_w, norm1_b;      // [hidden]: after the attention block
  at::Tensor ffn_in_w, ffn_in_b;    // [ffn, hidden], [ffn]; gated: [gate; up] stacked, [2 ffn, hidden]
  at::Tensor ffn_out_w, ffn_out_b;  // [hidden, ffn], [hidden]
  at::Tensor norm2_w, norm2_b;      // [hidden]: after the feed-forward block
  at::Tensor q_norm_w, k_norm_w;    // [d]: Qwen3's RMSNorm of each head's q and k; undefined: none
};

// What the family fixes about its layers.
struct LayerOptions {
  int64_t heads = 12;
  double eps = 1e-12;  // LayerNorm epsilon
  Activation activation = Activation::Gelu;
  NormPlacement norm = NormPlacement::Post;
  bool causal = false;                         // decoder families: A_ij = 0 for j > i (GPT-2)
  bool dropout_after_attention_output = true;  // training: BERT yes, DistilBERT no
  // The Llama lineage's (FamilySpec): RMSNorm for LayerNorm, grouped-query attention (kv_heads
  // key/value heads, head h reading h / (heads / kv_heads)), a head size of its own, rotary
  // positions (theta > 0), a gated feed-forward.
  bool rms_norm = false;
  int64_t kv_heads = 0;  // 0: heads
  int64_t head_dim = 0;  // 0: hidden / heads
  double rope_theta = 0;
  ModelConfig::Llama3Rope llama3_rope;    // factor 0: the default inverse frequencies
  std::vector<double> rope_freq_factors;  // a GGUF's divisors of them (ModelConfig), before llama3_rope
  bool gated_ffn = false;
};
LayerOptions layer_options(const ModelConfig& c);

// The d/2 inverse frequencies of rotary positions over heads of size d, theta^(-2i/d), divided by
// `factors` where given, else rescaled as transformers' rope_type llama3 where llama3.factor > 0;
// in float64 for a float64 `options`, else float32.
at::Tensor rope_inv_freq(int64_t d, double theta, const ModelConfig::Llama3Rope& llama3, const std::vector<double>& factors,
                         const at::TensorOptions& options);

// Inverted dropout at a numbered site (mlm.cpp's counter-based per-sample masks). Sites: 0 the
// embeddings; layer l: 1 + 3l the attention probabilities, 2 + 3l W_O's output, 3 + 3l the
// feed-forward output.
using DropoutFn = std::function<at::Tensor(const at::Tensor& x, uint64_t site)>;

enum class AttentionKernel {
  // Inference only (no autograd): per sample, so that BLAS reads the strided [H, T, d] views of
  // the fused QKV GEMM in place (a batched matmul over [B, H] copies them first), with the scale
  // and the key mask folded into one baddbmm and A·v one bmm per sample.
  PerSample,
  // Whole-batch matmuls that autograd differentiates; dropout on the probabilities.
  Batched,
};

struct LayerMode {
  AttentionKernel kernel = AttentionKernel::PerSample;
  DropoutFn dropout;  // empty: none
  // The head gates ξ of SPEC §8, [L, H] or per sample [B, L, H]: each head's context vector times
  // its gate before the output projection (ξ = 1: the same bits as none; 0: the head removed;
  // under autograd the gradient flows to ξ). Undefined: no gates.
  at::Tensor gates;
  // PerSample only: attention in tiles of this many query rows (0 or >= T: the whole maps at
  // once). Each tile [H, rows, T] of sample b goes to on_attention_rows and the trace's attention
  // stays undefined, so that at most one tile of a layer's maps exists at a time; every value is
  // the whole path's (the same products, row by row).
  int64_t attention_rows = 0;
  AttentionRowsFn on_attention_rows;
};

// The inference attention's matrix products run in blocks of this many query rows (every value
// the same bits whole or tiled; transformer_layer.cpp), and its tiles are whole blocks.
inline constexpr int64_t kAttentionRowBlock = 128;
// The rows of the tiles the forward makes for LayerMode::attention_rows = rows (> 0) at T tokens.
inline int64_t attention_tile_size(int64_t rows, int64_t T) {
  return std::min(T, (rows + kAttentionRowBlock - 1) / kAttentionRowBlock * kAttentionRowBlock);
}

// The dtype's lowest finite value: the additive mask of [PAD] keys (HF's finfo.min).
double mask_lowest(at::ScalarType dtype);

// The additive key mask: 0 on valid keys, mask_lowest on [PAD] keys, and for a causal family on
// the keys after the query too.
struct KeyMask {
  at::Tensor additive;                 // [B, 1, 1, T], or [B, 1, T, T] when causal (undefined: rows only)
  std::vector<at::Tensor> per_sample;  // [H, T, T] expanded views of it (the PerSample kernel's)
  at::Tensor keys;                     // [B, 1, 1, T] the key part alone
  bool causal = false;
  // Rows [first, first + count) of sample b's mask, [1, count, T]: the same values as additive's.
  at::Tensor rows(int64_t b, int64_t first, int64_t count) const;
};
// valid [B, T] bool; options: the activations' dtype and device. rows_only: no [B, 1, T, T] (the
// tiled attention takes its rows as it goes).
KeyMask key_mask(const at::Tensor& valid, int64_t heads, const at::TensorOptions& options, AttentionKernel kernel, bool causal = false,
                 bool rows_only = false);

// The last layer's output through the final norm where the family has one (GPT-2's ln_f,
// Llama's norm); x itself otherwise.
at::Tensor final_norm(const EmbeddingWeights& w, const at::Tensor& x, const LayerOptions& o);

// The family's normalisation of x [.., hidden]: LayerNorm with bias b, or RMSNorm (b undefined;
// Hugging Face's order: w · (x · rsqrt(mean(x²) + eps))).
at::Tensor normalise(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps, bool rms);

// ids [B, T] int64 → LayerNorm(word + position + token type 0) [B, T, hidden], then dropout site 0
// (a rotary family: the word embeddings alone).
// Positions 0 … T-1, or with pad_position p (RoBERTa) p + 1 + the token's index among the
// non-padding ids of its row, and p on padding ids.
at::Tensor embed(const EmbeddingWeights& w, const at::Tensor& ids, double eps, const DropoutFn& dropout = nullptr);

// What the attention block computed, for the caller that hands it out.
struct AttentionTrace {
  at::Tensor context;    // [B, H, T, d]  o_i = Σ_j A_ij v_j, before the output projection
  at::Tensor attention;  // [B, H, T, T]  A_ij (after dropout when training)
};

// x [B, T, hidden] → LayerNorm(x + W_O concat(heads) + b_O) [B, T, hidden] (post-LN), or
// x + W_O concat(heads of LayerNorm(x)) + b_O (pre-LN).
at::Tensor attention_block(const LayerWeights& w, const at::Tensor& x, const KeyMask& mask, const LayerOptions& o, const LayerMode& mode,
                           int64_t layer, AttentionTrace* trace = nullptr);
// act(gate) · up of a gated feed-forward's inner [..., 2F] = [gate | up]: at inference on the CPU
// in cache-sized blocks of rows on the threads (one pass over memory), else ATen's expression; the
// same bits either way.
at::Tensor gated_activation(const at::Tensor& inner, Activation a);
// h [B, T, hidden] → LayerNorm(h + W_2 act(W_1 h + b_1) + b_2) [B, T, hidden] (post-LN), or
// h + W_2 act(W_1 LayerNorm(h) + b_1) + b_2 (pre-LN).
at::Tensor feed_forward_block(const LayerWeights& w, const at::Tensor& h, const LayerOptions& o, const LayerMode& mode, int64_t layer);

// The weights by role from a family's names: get(name) returns the tensor of a bare-model name
// ("encoder.layer.0.attention.self.query.weight"); stack joins [W_q, W_k, W_v] along dim 0.
using TensorGetter = std::function<at::Tensor(const std::string& name)>;
// The embeddings of the family, with the config's padding id (RoBERTa's positions).
EmbeddingWeights gather_embeddings(const FamilySpec& f, int64_t pad_position, const TensorGetter& get);
LayerWeights gather_layer(const FamilySpec& f, int64_t layer, const TensorGetter& get,
                          const std::function<at::Tensor(const std::vector<at::Tensor>&)>& stack);

}  // namespace ctxsim
