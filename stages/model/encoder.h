// The seam between the analysis and a model: an Encoder runs token ids through its layers and
// hands the caller, one layer at a time, the per-head context vectors, optionally their
// projection through the head's slice of W_O, and the attention maps (SPEC §2). Analysis,
// the benchmarks and the tools take an Encoder; model.h implements it for every family in
// family.h. No MPI, no HDF5, no checkpoint format here.
#pragma once
#include <ATen/ATen.h>

#include <functional>

#include "stages/model/model_config.h"

namespace ctxsim {

// Rows [first, first + count) of sample b's attention maps in layer l, [H, count, T].
using AttentionRowsFn = std::function<void(int64_t layer, int64_t sample, int64_t first, const at::Tensor& rows)>;

// What the caller wants of each layer; nothing else is materialised.
struct LayerRequest {
  bool projected = false;    // o_i W_O[h]: [B, H, T, hidden]
  bool final_hidden = true;  // false: the caller uses only the layer outputs, so the last
                             // layer's feed-forward block is skipped and forward returns undefined
  at::Tensor gates;          // head gates ξ [L, H] or [B, L, H] (SPEC §8, transformer_layer.h); undefined: none
  // > 0 and < T: the attention maps in tiles of this many query rows, each handed to
  // on_attention_rows before the layer's callback, whose `attention` is then undefined (long
  // contexts: no [B, H, T, T] tensor). The same values as the whole maps.
  int64_t attention_rows = 0;
  AttentionRowsFn on_attention_rows;
};

// Views of one layer's tensors, valid during the callback only.
struct LayerOutputs {
  int64_t layer = 0;
  at::Tensor input;             // [B, T, hidden]    the layer's input hidden states X
  at::Tensor context;           // [B, H, T, d]      o_i = Σ_j A_ij v_j, before the output projection
  at::Tensor attention;         // [B, H, T, T]      A_ij, rows sum to 1, exactly 0 on [PAD] keys (undefined when tiled)
  at::Tensor projected;         // [B, H, T, hidden] when requested, else undefined
  at::Tensor attention_output;  // [B, T, hidden]    LayerNorm(ctx W_O + b_O + X)
};
using LayerCallback = std::function<void(const LayerOutputs&)>;

class Encoder {
 public:
  virtual ~Encoder() = default;
  // The shape and family: num_layers, num_heads, head_dim(), hidden_size,
  // max_position_embeddings, vocab_size.
  virtual const ModelConfig& config() const = 0;
  virtual at::ScalarType dtype() const = 0;  // of the weights and activations
  virtual at::Device device() const = 0;     // where they live
  // ids [B, T] int64; valid [B, T] bool (false on [PAD]). Returns the last hidden states
  // [B, T, hidden] (undefined when !request.final_hidden). Calls on_layer after each layer's
  // attention block when given.
  virtual at::Tensor forward(const at::Tensor& ids, const at::Tensor& valid, const LayerRequest& request = {},
                             const LayerCallback& on_layer = nullptr) const = 0;
  // W_O of layer l split by head: [H, d, hidden], so projected = context @ this (a new tensor).
  virtual at::Tensor output_projection_by_head(int64_t layer) const = 0;
};

}  // namespace ctxsim
