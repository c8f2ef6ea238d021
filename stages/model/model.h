// The transformer encoder of every family in family.h (BERT, DistilBERT, RoBERTa, GPT-2) in LibTorch (ATen),
// inference only, loaded from a Hugging Face folder: the Encoder the analysis runs. Its layers
// are transformer_layer.h's with the inference kernels; the family's table names the weights.
// Also where a rank computes (dtype, device, threads). No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "stages/base/precision.h"
#include "stages/model/encoder.h"
#include "stages/model/load_report.h"
#include "stages/model/model_config.h"
#include "stages/model/transformer_layer.h"

namespace ctxsim {

struct TensorView;
class SafetensorsFile;

class TransformerEncoder final : public Encoder {
 public:
  // Reads <dir>/config.json (its model_type picks the family) and <dir>/model.safetensors
  // (F32/F16/BF16/F64, converted to dtype), and places the weights on `device`.
  static TransformerEncoder load(const std::string& dir, at::ScalarType dtype, LoadReport* report = nullptr, at::Device device = at::kCPU);
  // From named tensors in the family's bare-model names (see encoder_tensor_shapes).
  static TransformerEncoder from_tensors(const ModelConfig& config, std::map<std::string, at::Tensor> tensors, at::ScalarType dtype,
                                         at::Device device = at::kCPU);

  const ModelConfig& config() const override { return config_; }
  const FamilySpec& family() const { return family_spec(config_.family); }
  at::ScalarType dtype() const override { return dtype_; }
  at::Device device() const override { return device_; }
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& valid, const LayerRequest& request = {},
                     const LayerCallback& on_layer = nullptr) const override;
  at::Tensor output_projection_by_head(int64_t layer) const override;

 private:
  ModelConfig config_;
  LayerOptions options_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  EmbeddingWeights embeddings_;
  std::vector<LayerWeights> layers_;
};

// The LibTorch dtype of a precision; parse_dtype reads "float32" | "bfloat16" | "float64".
at::ScalarType torch_dtype(Precision p);
at::ScalarType parse_dtype(const std::string& name, const std::string& where);  // where: the key or option
// The LibTorch dtype of a checkpoint's weight `v` in `path`; an integer tensor (a buffer's type)
// given as a weight is an error naming the tensor.
at::ScalarType weight_dtype(const TensorView& v, const std::string& path);

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
// After configure_threads: " (1 of 2 cores busy with other work)" when it took fewer threads
// for that reason, else "" (for the job's first log line).
std::string busy_cores_note();

}  // namespace ctxsim
