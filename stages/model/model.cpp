#include "stages/model/model.h"

#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <omp.h>
#include <torch/version.h>

#include <sched.h>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include <algorithm>
#include <thread>

#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"
#include "stages/model/checkpoint_checks.h"
#include "stages/model/compute_build.h"
#include "stages/model/gguf_model.h"
#include "stages/model/safetensors.h"

namespace ctxsim {
namespace {

// The first items, then how many there are in all.
std::string join_first(const std::vector<std::string>& v, size_t max_items = 12) {
  std::string s = join(std::vector<std::string>(v.begin(), v.begin() + long(std::min(max_items, v.size()))));
  if (v.size() > max_items) s += ", … (" + std::to_string(v.size()) + " in all)";
  return s;
}

// Within its scope this thread's ATen work runs on one OpenMP thread: the load runs beside
// the tokenizer and the hash at start-up, where a second team of spinning OpenMP workers only
// takes cores from them. (ATen sets a new thread's OpenMP threads on its first parallel call,
// hence the call before.)
class OneIntraOpThread {
 public:
  OneIntraOpThread() : before_(at::get_num_threads()) { omp_set_num_threads(1); }
  ~OneIntraOpThread() { omp_set_num_threads(before_); }
  OneIntraOpThread(const OneIntraOpThread&) = delete;
  OneIntraOpThread& operator=(const OneIntraOpThread&) = delete;

 private:
  int before_;
};

// The tensors stacked along dim 0: a view when they already lie one after another in one
// contiguous block (as load() places a layer's query, key and value), else a copy.
at::Tensor stacked_rows(const std::vector<at::Tensor>& parts) {
  bool adjacent = true;
  int64_t rows = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const at::Tensor& t = parts[i];
    adjacent =
        adjacent && t.is_contiguous() && t.dtype() == parts[0].dtype() && t.device() == parts[0].device() &&
        t.sizes().slice(1) == parts[0].sizes().slice(1) &&
        (i == 0 || static_cast<const char*>(t.data_ptr()) == static_cast<const char*>(parts[i - 1].data_ptr()) + parts[i - 1].nbytes());
    rows += t.size(0);
  }
  if (!adjacent) return at::cat(parts);
  std::vector<int64_t> shape = parts[0].sizes().vec();
  shape[0] = rows;
  return parts[0].as_strided(shape, at::detail::defaultStrides(shape));
}

}  // namespace

at::ScalarType torch_dtype(Precision p) {
  switch (p) {
    case Precision::Float32: return at::kFloat;
    case Precision::BFloat16: return at::kBFloat16;
    case Precision::Float64: return at::kDouble;
  }
  return at::kFloat;
}

at::ScalarType weight_dtype(const TensorView& v, const std::string& path) {
  switch (v.dtype) {
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::F32: return at::kFloat;
    case DType::F64: return at::kDouble;
    default:
      throw Error(path + ": tensor '" + v.name + "'",
                  std::string("is ") + dtype_name(v.dtype) + ", but it is a weight, which must be floating",
                  "convert the checkpoint's weights to F32, F16, BF16 or F64");
  }
}

at::ScalarType parse_dtype(const std::string& name, const std::string& where) {
  const auto p = parse_precision(name);
  if (!p) throw Error(where, "'" + name + "' is not float32, bfloat16 or float64", "pick one of them");
  return torch_dtype(*p);
}

namespace {
std::string g_busy_note;
}

std::string busy_cores_note() { return g_busy_note; }

int configure_threads(int64_t requested, int ranks_on_node) {
  g_busy_note.clear();
  int n = static_cast<int>(requested);
  const auto from_env = [](const char* var) {
    const char* v = std::getenv(var);
    return v && *v ? std::atoi(v) : 0;
  };
  if (n <= 0) n = from_env("SLURM_CPUS_PER_TASK");
  if (n <= 0) n = from_env("OMP_NUM_THREADS");
  const int machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int allowed = std::min(usable_cores(), machine);
  // LibTorch's own default comes from libcpuinfo, which can see one core on VMs.
  if (n <= 0) {
    n = allowed < machine ? allowed : std::max(1, machine / std::max(1, ranks_on_node));
    // Cores that other processes keep busy (this job's other ranks on the node aside) are not
    // this rank's: a team with a thread on such a core waits for it at every parallel region
    // (2x slower than one thread on 2 cores with one busy, docs/PERFORMANCE.md).
    const int others = std::max(0, cores_busy_elsewhere() - (std::max(1, ranks_on_node) - 1));
    if (others > 0) {
      n = std::min(n, std::max(1, (allowed - others) / std::max(1, ranks_on_node)));
      g_busy_note =
          " (" + std::to_string(others) + " of " + std::to_string(allowed) + " cores busy with other work; runtime.threads sets the count)";
    }
  }
  n = std::min(n, kThreadsPerCore * allowed);
  at::set_num_threads(n);
  return at::get_num_threads();
}

namespace {

// A CUDA LibTorch registers its CUDA hooks when libtorch_cuda loads; at::hasCUDA() alone is false
// both without them and with them but no device, and the two need different fixes.
bool cuda_built_in() { return at::detail::getCUDAHooks().hasCUDART(); }

int64_t cuda_devices() { return cuda_built_in() ? int64_t(at::detail::getCUDAHooks().getNumGPUs()) : 0; }

// Why a CUDA build sees no device: no driver at all, or a driver that shows none to this process.
std::string why_no_device() {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(driver);
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return std::string("the NVIDIA driver is there but shows no device") +
           (visible ? std::string("; CUDA_VISIBLE_DEVICES=") + visible : std::string());
  }
  return "no NVIDIA driver: libcuda.so.1 not found";
}

}  // namespace

std::string compute_build_line() {
  std::string line = std::string("LibTorch ") + TORCH_VERSION;
  if (!cuda_built_in()) return line + ", CPU only (no CUDA built in)";
  const long v = at::detail::getCUDAHooks().versionCUDART();
  line += ", CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + " built in; ";
  const int64_t gpus = cuda_devices();
  if (gpus == 0) return line + "no CUDA device present (" + why_no_device() + ")";
  return line + std::to_string(gpus) + " CUDA device(s) present";
}

at::Device compute_device(const std::string& choice, int local_rank, const std::string& where) {
  const bool has_cuda = cuda_built_in();
  const int64_t gpus = cuda_devices();
  if (choice == "cpu" || (choice == "auto" && gpus == 0)) return at::kCPU;
  if (!has_cuda)
    throw Error(where, "this ctxsim's LibTorch has no CUDA (Debian's libtorch is CPU-only), so it cannot compute on a GPU",
                "reconfigure with -DCTXSIM_CUDA=ON against a CUDA LibTorch (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; "
                "print(torch.utils.cmake_prefix_path)'), docs/CLUSTER.md: GPU ranks), or set runtime.device=cpu");
  if (gpus == 0)
    throw Error(where, "this ctxsim has CUDA built in, but no CUDA device is visible (" + why_no_device() + ")",
                "run on a GPU node (check nvidia-smi and CUDA_VISIBLE_DEVICES), or set runtime.device=cpu");
  return at::Device(at::kCUDA, at::DeviceIndex(local_rank % gpus));
}

std::string device_name(at::Device device) { return device.is_cpu() ? "cpu" : device.str(); }

namespace {

// Where load() copies a layer's query, key and value: one stacked block per layer, kind (weight
// or bias) and file dtype, which from_tensors uses as the fused projection as it is, so that the
// weights are not copied a second time.
class QkvBlocks {
 public:
  QkvBlocks(const FamilySpec& f, const ModelConfig& c) : hidden_(c.hidden_size) {
    if (f.qkv) return;  // fused in the file already (GPT-2's c_attn)
    const int64_t q = c.num_heads * c.head_dim(), kv = c.kv_heads() * c.head_dim();
    parts_ = {{std::string(f.query) + ".", {0, q}}, {std::string(f.key) + ".", {q, kv}}, {std::string(f.value) + ".", {q + kv, kv}}};
    rows_ = q + 2 * kv;
  }
  // The slot of a canonical name in its block; undefined when it is not a query, key or value.
  at::Tensor slot(const std::string& name, at::ScalarType file_dtype) {
    for (const auto& [part, rows] : parts_) {
      const size_t at = name.find(part);
      if (at == std::string::npos) continue;
      const std::string kind = name.substr(at + part.size());  // weight | bias
      at::Tensor& block = blocks_[name.substr(0, at) + kind + "/" + std::to_string(int(file_dtype))];
      if (!block.defined())
        block = at::empty(kind == "weight" ? std::vector<int64_t>{rows_, hidden_} : std::vector<int64_t>{rows_}, file_dtype);
      return block.narrow(0, rows.first, rows.second);
    }
    return {};
  }

 private:
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> parts_;  // (name part, (first row, rows))
  int64_t hidden_, rows_ = 0;
  std::map<std::string, at::Tensor> blocks_;
};

// One tensor copied out of the mapping (offsets may be unaligned) into `raw` when given, else a
// new tensor, and converted to the run's dtype. The mapped pages are dropped once copied, so the
// weights are not resident twice. NaN or inf in a weight gives nonsense statistics without any
// other sign: refused.
at::Tensor read_tensor(const SafetensorsFile& file, const std::string& key, const TensorView& view, at::Tensor raw, at::ScalarType dtype) {
  if (!raw.defined()) raw = at::empty(view.shape, at::TensorOptions().dtype(weight_dtype(view, file.path())));
  int64_t first = -1;
  if (const int64_t bad = copy_counting_nonfinite(view, raw.data_ptr(), &first))
    throw Error(file.path() + ": tensor '" + key + "'",
                std::to_string(bad) + " of " + std::to_string(raw.numel()) +
                    " values are not finite (NaN or inf), the first at flat index " + std::to_string(first),
                "the checkpoint is damaged: copy or convert it again");
  return raw.to(dtype);
}

// The encoder's tensors of `file` by canonical name, each checked against the shape config.json
// implies; everything else sorted into the report (ignored heads, unexpected keys).
std::map<std::string, at::Tensor> read_encoder_tensors(const SafetensorsFile& file, const ModelConfig& config, at::ScalarType dtype,
                                                       const std::string& config_path, LoadReport& r) {
  const FamilySpec& f = family_spec(config.family);
  const auto expected = encoder_tensor_shapes(config);
  const auto pooler = pooler_shapes(config);
  std::map<std::string, at::Tensor> tensors;
  std::vector<std::string> mismatched;
  QkvBlocks blocks(f, config);
  std::map<std::string, std::string> key_of;  // canonical name -> the checkpoint's key that gave it
  for (const auto& [key, view] : file.tensors()) {
    const std::string name = canonical_tensor_name(f, key);
    if (name.empty()) {
      r.ignored.push_back(key);
      continue;
    }
    // Two spellings of one parameter ("distilbert.X" and "X", "gamma" and "weight"): which one the
    // model was meant to have cannot be told, so neither is picked.
    if (const auto [it, fresh] = key_of.emplace(name, key); !fresh)
      throw Error(file.path(), "holds two tensors for the parameter " + name + ": '" + it->second + "' and '" + key + "'",
                  "keep one of them (re-save the checkpoint from the model that should be analysed)");
    const auto it = expected.find(name);
    const bool is_pooler = pooler.count(name) > 0;
    if (it == expected.end() && !is_pooler) {
      r.unexpected.push_back(key);
      continue;
    }
    const auto& want = is_pooler ? pooler.at(name) : it->second;
    if (view.shape != want) {
      mismatched.push_back(key + " is " + shape_text(view.shape) + ", config.json implies " + shape_text(want));
      continue;
    }
    if (is_pooler) {  // present and well-formed; ctxsim does not use it
      ++r.encoder_tensors;
      continue;
    }
    tensors[name] = read_tensor(file, key, view, blocks.slot(name, weight_dtype(view, file.path())), dtype);
  }
  if (!mismatched.empty())
    throw Error(file.path(), "tensor shapes do not match " + config_path + ": " + join_first(mismatched),
                "use the config.json that belongs to these weights");
  std::vector<std::string> missing;
  for (const auto& [name, shape] : expected)
    if (!tensors.count(name)) missing.push_back(name);
  if (!missing.empty())
    throw Error(file.path(), "missing encoder tensors: " + join_first(missing),
                std::string("use a complete ") + f.display + " checkpoint (" + f.checkpoints + ")");
  r.encoder_tensors += static_cast<int64_t>(tensors.size());
  return tensors;
}

}  // namespace

TransformerEncoder TransformerEncoder::load(const std::string& dir, at::ScalarType dtype, LoadReport* report, at::Device device) {
  namespace fs = std::filesystem;
  const OneIntraOpThread one_thread;
  const ModelFolder folder(dir);
  if (folder.is_gguf()) {  // llama.cpp's file: config, weights (dequantised) and tokenizer in one
    const GgufFile file(dir);
    const ModelConfig config = gguf_model_config(file.header(), dir);
    LoadReport local;
    std::map<std::string, at::Tensor> tensors = read_gguf_tensors(file.header(), config, dir, report ? *report : local);
    return from_tensors(config, std::move(tensors), dtype, device);
  }
  const std::string config_path = folder.config();
  const ModelConfig config = ModelConfig::load(config_path);
  const std::string weights = folder.weights();
  if (!fs::exists(weights) && !folder.sharded())
    throw Error(weights, "missing",
                "ctxsim reads model.safetensors or the shards of model.safetensors.index.json (convert a pytorch_model.bin "
                "with the safetensors convert script, or make a random model with 'ctxsim init-model')");
  const SafetensorsFile file = open_checkpoint(folder);
  check_layer_count(file.tensors(), file.path(), config, config_path);
  LoadReport local;
  LoadReport& r = report ? *report : local;
  r.tensors_in_file = static_cast<int64_t>(file.tensors().size());
  std::map<std::string, at::Tensor> tensors = read_encoder_tensors(file, config, dtype, config_path, r);
  return from_tensors(config, std::move(tensors), dtype, device);
}

TransformerEncoder TransformerEncoder::from_tensors(const ModelConfig& config, std::map<std::string, at::Tensor> t, at::ScalarType dtype,
                                                    at::Device device) {
  TransformerEncoder m;
  m.config_ = config;
  m.options_ = layer_options(config);
  m.dtype_ = dtype;
  m.device_ = device;
  const FamilySpec& f = family_spec(config.family);
  // Each tensor leaves the map as it is taken, so that the stacked projections are not held
  // twice for the whole model.
  const auto get = [&](const std::string& name) {
    const auto it = t.find(name);
    if (it == t.end()) throw Error("model", "missing tensor " + name, std::string("use a complete ") + f.display + " checkpoint");
    at::Tensor v = it->second.to(dtype).to(device).contiguous();
    t.erase(it);
    return v;
  };
  m.embeddings_ = gather_embeddings(f, config.pad_position, get);
  for (int64_t l = 0; l < config.num_layers; ++l) m.layers_.push_back(gather_layer(f, l, get, stacked_rows));
  return m;
}

at::Tensor TransformerEncoder::output_projection_by_head(int64_t layer) const {
  // W_O is [hidden_out, hidden_in]; head h owns input columns h*d … (h+1)*d - 1.
  const int64_t H = config_.num_heads, d = config_.head_dim(), hidden = config_.hidden_size;
  return layers_.at(size_t(layer)).o_w.view({hidden, H, d}).permute({1, 2, 0}).contiguous();  // [H, d, hidden]
}

at::Tensor TransformerEncoder::forward(const at::Tensor& ids, const at::Tensor& valid, const LayerRequest& request,
                                       const LayerCallback& on_layer) const {
  c10::InferenceMode guard;
  const int64_t T = ids.size(1);
  if (T > config_.max_tokens())
    throw Error(kSeqLen.quantity, config_.positions_problem(T), "use at most " + std::to_string(config_.max_tokens()));
  CTXSIM_CHECK(!request.gates.defined() || request.gates.size(-2) == config_.num_layers, "forward: gates of another model's layers");
  const LayerMode mode{AttentionKernel::PerSample, nullptr, request.gates, request.attention_rows, request.on_attention_rows};
  const bool tiled = request.attention_rows > 0 && request.attention_rows < T;
  at::Tensor x = embed(embeddings_, ids, config_.layer_norm_eps);  // [B, T, hidden]
  const KeyMask mask = key_mask(valid, config_.num_heads, x.options(), mode.kernel, options_.causal, tiled);
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const LayerWeights& L = layers_[size_t(l)];
    AttentionTrace trace;
    const at::Tensor attention_output = attention_block(L, x, mask, options_, mode, l, &trace);  // [B, T, hidden]
    if (on_layer) {
      LayerOutputs out;
      out.layer = l;
      out.input = x;
      out.context = trace.context;
      out.attention = trace.attention;
      out.attention_output = attention_output;
      if (request.projected) out.projected = at::matmul(trace.context, output_projection_by_head(l));  // [B,H,T,d] @ [H,d,hidden]
      on_layer(out);
    }
    if (l + 1 == config_.num_layers && !request.final_hidden) return {};  // its feed-forward block feeds nothing
    x = feed_forward_block(L, attention_output, options_, mode, l);
  }
  return final_norm(embeddings_, x, options_);
}

}  // namespace ctxsim
