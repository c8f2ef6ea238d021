// The BERT encoder in LibTorch (ATen), inference only, Hugging Face `BertModel` weights. It hands
// the caller one layer at a time the per-head context vectors, optionally their projection
// through the head's slice of W_O, and the attention maps (SPEC §2). No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "stages/model/bert_config.h"
#include "stages/base/precision.h"

namespace ctxsim {

struct LoadReport {
  int64_t tensors_in_file = 0;
  int64_t encoder_tensors = 0;              // loaded (the pooler included when present)
  std::vector<std::string> ignored;         // cls.* heads and buffers, skipped on purpose
  std::vector<std::string> unexpected;      // neither encoder nor known heads: listed in one warning
  std::string weights_path;                 // <dir>/model.safetensors (hash it with sha256_file)
};

// What the caller wants of each layer; nothing else is materialised.
struct LayerRequest {
  bool projected = false;     // o_i W_O[h]: [B, H, T, hidden]
  bool final_hidden = true;   // false: the caller uses only the layer outputs, so the last
                              // layer's feed-forward block is skipped and forward returns undefined
};

// Views of one layer's tensors, valid during the callback only.
struct LayerOutputs {
  int64_t layer = 0;
  at::Tensor input;             // [B, T, hidden]    the layer's input hidden states X
  at::Tensor context;           // [B, H, T, d]      o_i = Σ_j A_ij v_j, before the output projection
  at::Tensor attention;         // [B, H, T, T]      A_ij, rows sum to 1, exactly 0 on [PAD] keys
  at::Tensor projected;         // [B, H, T, hidden] when requested, else undefined
  at::Tensor attention_output;  // [B, T, hidden]    LayerNorm(ctx W_O + b_O + X)
};
using LayerCallback = std::function<void(const LayerOutputs&)>;

class BertModel {
 public:
  // Reads <dir>/config.json and <dir>/model.safetensors (F32/F16/BF16/F64, converted to dtype),
  // and places the weights on `device`.
  static BertModel load(const std::string& dir, at::ScalarType dtype, LoadReport* report = nullptr, at::Device device = at::kCPU);
  // From named tensors in canonical BertModel names (see bert_tensor_shapes).
  static BertModel from_tensors(const BertConfig& config, std::map<std::string, at::Tensor> tensors, at::ScalarType dtype,
                                at::Device device = at::kCPU);

  const BertConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

  // ids [B, T] int64; valid [B, T] bool (false on [PAD]). Returns the last hidden states
  // [B, T, hidden] (undefined when !request.final_hidden). Calls on_layer after each layer's
  // attention when given.
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& valid, const LayerRequest& request = {},
                     const LayerCallback& on_layer = nullptr) const;

  // W_O of layer l split by head: [H, d, hidden], so projected = context @ this (a new tensor).
  at::Tensor output_projection_by_head(int64_t layer) const;

 private:
  struct Layer {
    at::Tensor qkv_w, qkv_b;  // [3 hidden, hidden], [3 hidden]: W_q, W_k, W_v stacked, one GEMM
    at::Tensor o_w, o_b, ln1_w, ln1_b, i_w, i_b, out_w, out_b, ln2_w, ln2_b;
  };
  BertConfig config_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor word_, pos_, type_, ln_w_, ln_b_;
  std::vector<Layer> layers_;
};

// The LibTorch dtype of a precision; parse_dtype reads "float32" | "bfloat16" | "float64".
at::ScalarType torch_dtype(Precision p);
at::ScalarType parse_dtype(const std::string& name);

// The device a rank computes on. choice "cpu"; "cuda": GPU local_rank % the visible count, and an
// error naming `where` when this LibTorch has no CUDA or no GPU is visible; "auto": CUDA when both
// are there, else the CPU.
at::Device compute_device(const std::string& choice, int local_rank, const std::string& where);
// "cpu", "cuda:0", …
std::string device_name(at::Device device);

// Sets LibTorch's intra-op threads: requested > 0, else SLURM_CPUS_PER_TASK, else
// OMP_NUM_THREADS, else the cores this process may run on — all of them when it is bound (mpirun
// binds each rank to its cores), else the machine's cores shared by the ranks on this node; at
// most kThreadsPerCore per core the process may use (stages/base/cpu_features.h). Returns the count
// now in force (callers say so when it is below what was asked).
int configure_threads(int64_t requested, int ranks_on_node = 1);

}  // namespace ctxsim
