#include "stages/model/model.h"

#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/InferenceMode.h>
#include <omp.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <filesystem>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/model/safetensors.h"

namespace ctxsim {
namespace {

at::ScalarType torch_dtype(DType t) {
  switch (t) {
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::F32: return at::kFloat;
    case DType::F64: return at::kDouble;
  }
  return at::kFloat;
}

// The first items, then how many there are in all.
std::string join_first(const std::vector<std::string>& v, size_t max_items = 12) {
  std::string s = join(std::vector<std::string>(v.begin(), v.begin() + long(std::min(max_items, v.size()))));
  if (v.size() > max_items) s += ", … (" + std::to_string(v.size()) + " in all)";
  return s;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  t += join_each(s, [](int64_t d) { return std::to_string(d); });
  return t + "]";
}

// The layers the checkpoint holds (encoder.layer.N.*) must be the layers config.json declares:
// fewer would be missing tensors, more a model silently cut short.
void check_layer_count(const SafetensorsFile& file, const BertConfig& config, const std::string& config_path) {
  const std::string prefix = "encoder.layer.";
  int64_t layers = 0;
  for (const auto& [key, view] : file.tensors()) {
    const std::string name = canonical_tensor_name(key);
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t n = -1;
    const char* first = name.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, name.data() + name.size(), n);
    if (ec == std::errc() && end != first && *end == '.' && n >= 0 && n < (int64_t(1) << 20)) layers = std::max(layers, n + 1);
  }
  if (layers != config.num_layers)
    throw Error(config_path + ": num_hidden_layers", "declares " + std::to_string(config.num_layers) + " layer(s), but " + file.path() + " holds " +
                                                         std::to_string(layers) + " (encoder.layer.0 … encoder.layer." + std::to_string(layers - 1) + ")",
                "use the config.json that belongs to these weights");
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
    adjacent = adjacent && t.is_contiguous() && t.dtype() == parts[0].dtype() && t.device() == parts[0].device() &&
               t.sizes().slice(1) == parts[0].sizes().slice(1) &&
               (i == 0 || static_cast<const char*>(t.data_ptr()) ==
                              static_cast<const char*>(parts[i - 1].data_ptr()) + parts[i - 1].nbytes());
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

at::ScalarType parse_dtype(const std::string& name) {
  const auto p = parse_precision(name);
  if (!p) throw Error("model.dtype", "'" + name + "' is not float32, bfloat16 or float64", "pick one of them");
  return torch_dtype(*p);
}

int configure_threads(int64_t requested, int ranks_on_node) {
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
  if (n <= 0) n = allowed < machine ? allowed : std::max(1, machine / std::max(1, ranks_on_node));
  n = std::min(n, kThreadsPerCore * allowed);
  at::set_num_threads(n);
  return at::get_num_threads();
}

at::Device compute_device(const std::string& choice, int local_rank, const std::string& where) {
  const bool has_cuda = at::hasCUDA();
  const int64_t gpus = has_cuda ? int64_t(at::detail::getCUDAHooks().getNumGPUs()) : 0;
  if (choice == "cpu" || (choice == "auto" && gpus == 0)) return at::kCPU;
  if (!has_cuda)
    throw Error(where, "this ctxsim's LibTorch has no CUDA (Debian's libtorch is CPU-only), so it cannot compute on a GPU",
                "reconfigure with -DCTXSIM_CUDA=ON against a CUDA LibTorch (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; "
                "print(torch.utils.cmake_prefix_path)'), README: GPU ranks), or set runtime.device=cpu");
  if (gpus == 0) throw Error(where, "no CUDA device is visible", "run on a GPU node (check CUDA_VISIBLE_DEVICES), or set runtime.device=cpu");
  return at::Device(at::kCUDA, at::DeviceIndex(local_rank % gpus));
}

std::string device_name(at::Device device) { return device.is_cpu() ? "cpu" : device.str(); }

BertModel BertModel::load(const std::string& dir, at::ScalarType dtype, LoadReport* report, at::Device device) {
  namespace fs = std::filesystem;
  const OneIntraOpThread one_thread;
  const BertConfig config = BertConfig::load((fs::path(dir) / "config.json").string());
  const std::string weights = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(weights))
    throw Error(weights, "missing", "ctxsim reads model.safetensors (convert a pytorch_model.bin with the safetensors "
                                    "convert script, or make a random model with 'ctxsim init-model')");
  const SafetensorsFile file(weights);
  check_layer_count(file, config, (fs::path(dir) / "config.json").string());
  auto expected = bert_tensor_shapes(config);
  const auto pooler = bert_pooler_shapes(config);
  LoadReport local;
  LoadReport& r = report ? *report : local;
  r.tensors_in_file = static_cast<int64_t>(file.tensors().size());
  std::map<std::string, at::Tensor> tensors;
  std::vector<std::string> mismatched;
  // A layer's query, key and value are copied straight into one stacked block (from_tensors
  // uses it as the fused projection as it is), so the weights are not copied a second time.
  std::map<std::string, at::Tensor> blocks;
  const auto qkv_slot = [&](const std::string& name, at::ScalarType file_dtype) -> at::Tensor {
    static const std::pair<const char*, int64_t> kParts[] = {{"attention.self.query.", 0}, {"attention.self.key.", 1}, {"attention.self.value.", 2}};
    for (const auto& [part, index] : kParts) {
      const size_t at = name.find(part);
      if (at == std::string::npos) continue;
      const std::string kind = name.substr(at + std::strlen(part));  // weight | bias
      const int64_t H = config.hidden_size;
      at::Tensor& block = blocks[name.substr(0, at) + kind + "/" + std::to_string(int(file_dtype))];
      if (!block.defined()) block = at::empty(kind == "weight" ? std::vector<int64_t>{3 * H, H} : std::vector<int64_t>{3 * H}, file_dtype);
      return block.narrow(0, index * H, H);
    }
    return {};
  };
  for (const auto& [key, view] : file.tensors()) {
    const std::string name = canonical_tensor_name(key);
    if (name.empty()) {
      r.ignored.push_back(key);
      continue;
    }
    auto it = expected.find(name);
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
    if (is_pooler) continue;  // present and well-formed; ctxsim does not use it
    // Copy out of the mapping (offsets may be unaligned), then convert to the run's dtype. The
    // mapped pages are dropped once copied, so the weights are not resident twice.
    // NaN or inf in a weight gives nonsense statistics without any other sign: refused.
    at::Tensor raw = qkv_slot(name, torch_dtype(view.dtype));
    if (!raw.defined()) raw = at::empty(view.shape, at::TensorOptions().dtype(torch_dtype(view.dtype)));
    int64_t first = -1;
    if (const int64_t bad = copy_counting_nonfinite(file.file(), view, raw.data_ptr(), &first))
      throw Error(weights + ": tensor '" + key + "'",
                  std::to_string(bad) + " of " + std::to_string(raw.numel()) + " values are not finite (NaN or inf), the first at flat index " +
                      std::to_string(first),
                  "the checkpoint is damaged: copy or convert it again");
    tensors[name] = raw.to(dtype);
  }
  if (!mismatched.empty())
    throw Error(weights, "tensor shapes do not match " + (fs::path(dir) / "config.json").string() + ": " + join_first(mismatched),
                "use the config.json that belongs to these weights");
  std::vector<std::string> missing;
  for (const auto& [name, shape] : expected)
    if (!tensors.count(name)) missing.push_back(name);
  if (!missing.empty())
    throw Error(weights, "missing encoder tensors: " + join_first(missing),
                "use a complete BERT checkpoint (BertModel, BertForMaskedLM or BertForPreTraining)");
  r.encoder_tensors = static_cast<int64_t>(tensors.size());
  for (const auto& [name, shape] : pooler)
    for (const auto& [key, view] : file.tensors())
      if (canonical_tensor_name(key) == name) ++r.encoder_tensors;
  r.weights_path = weights;
  return from_tensors(config, std::move(tensors), dtype, device);
}

BertModel BertModel::from_tensors(const BertConfig& config, std::map<std::string, at::Tensor> t, at::ScalarType dtype, at::Device device) {
  BertModel m;
  m.config_ = config;
  m.dtype_ = dtype;
  m.device_ = device;
  // Each tensor leaves the map as it is taken, so that the stacked projections are not held
  // twice for the whole model.
  const auto get = [&](const std::string& name) {
    const auto it = t.find(name);
    if (it == t.end()) throw Error("model", "missing tensor " + name, "use a complete BERT checkpoint");
    at::Tensor v = it->second.to(dtype).to(device).contiguous();
    t.erase(it);
    return v;
  };
  m.word_ = get("embeddings.word_embeddings.weight");
  m.pos_ = get("embeddings.position_embeddings.weight");
  m.type_ = get("embeddings.token_type_embeddings.weight");
  m.ln_w_ = get("embeddings.LayerNorm.weight");
  m.ln_b_ = get("embeddings.LayerNorm.bias");
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    Layer L;
    L.qkv_w = stacked_rows({get(p + "attention.self.query.weight"), get(p + "attention.self.key.weight"),
                            get(p + "attention.self.value.weight")});
    L.qkv_b = stacked_rows({get(p + "attention.self.query.bias"), get(p + "attention.self.key.bias"),
                            get(p + "attention.self.value.bias")});
    L.o_w = get(p + "attention.output.dense.weight"); L.o_b = get(p + "attention.output.dense.bias");
    L.ln1_w = get(p + "attention.output.LayerNorm.weight"); L.ln1_b = get(p + "attention.output.LayerNorm.bias");
    L.i_w = get(p + "intermediate.dense.weight");     L.i_b = get(p + "intermediate.dense.bias");
    L.out_w = get(p + "output.dense.weight");         L.out_b = get(p + "output.dense.bias");
    L.ln2_w = get(p + "output.LayerNorm.weight");     L.ln2_b = get(p + "output.LayerNorm.bias");
    m.layers_.push_back(std::move(L));
  }
  return m;
}

at::Tensor BertModel::output_projection_by_head(int64_t layer) const {
  // W_O is [hidden_out, hidden_in]; head h owns input columns h*d … (h+1)*d - 1.
  const int64_t H = config_.num_heads, d = config_.head_dim(), hidden = config_.hidden_size;
  return layers_.at(size_t(layer)).o_w.view({hidden, H, d}).permute({1, 2, 0}).contiguous();  // [H, d, hidden]
}

at::Tensor BertModel::forward(const at::Tensor& ids, const at::Tensor& valid, const LayerRequest& request,
                              const LayerCallback& on_layer) const {
  c10::InferenceMode guard;
  const int64_t B = ids.size(0), T = ids.size(1);
  const int64_t hidden = config_.hidden_size, H = config_.num_heads, d = config_.head_dim();
  if (T > config_.max_position_embeddings)
    throw Error("samples.seq_len", std::to_string(T) + " exceeds the model's max_position_embeddings (" +
                                       std::to_string(config_.max_position_embeddings) + ")", "lower samples.seq_len");
  const double eps = config_.layer_norm_eps;
  at::Tensor x = at::embedding(word_, ids) + pos_.slice(0, 0, T).unsqueeze(0) + type_[0];
  x = at::layer_norm(x, {hidden}, ln_w_, ln_b_, eps);
  // Additive key mask [B, 1, 1, T]: 0 on valid keys, the dtype's lowest value on [PAD] keys.
  const double lowest = dtype_ == at::kDouble     ? std::numeric_limits<double>::lowest()
                        : dtype_ == at::kBFloat16 ? -3.3895313892515355e38
                                                  : double(std::numeric_limits<float>::lowest());
  const at::Tensor mask = at::zeros({B, 1, 1, T}, x.options()).masked_fill(valid.logical_not().view({B, 1, 1, T}), lowest);
  std::vector<at::Tensor> sample_mask;  // [H, T, T] per sample: the GEMM adds it (beta = 1)
  for (int64_t b = 0; b < B; ++b) sample_mask.push_back(mask[b].expand({H, T, T}));
  const double scale = 1.0 / std::sqrt(double(d));
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const Layer& L = layers_[l];
    // One GEMM for the three projections, then [B, T, 3, H, d] → three [B, H, T, d] views.
    const at::Tensor qkv = at::linear(x, L.qkv_w, L.qkv_b).view({B, T, 3, H, d}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
    // Per sample, so that BLAS reads the strided [H, T, d] views in place (a batched matmul over
    // [B, H] copies them first), with the scale and the key mask folded into the GEMM.
    at::Tensor scores = at::empty({B, H, T, T}, x.options());  // q kᵀ / √d + mask
    for (int64_t b = 0; b < B; ++b) {
      at::Tensor out = scores[b];
      at::baddbmm_out(out, sample_mask[size_t(b)], q[b], k[b].transpose(-1, -2), /*beta=*/1, /*alpha=*/scale);
    }
    const at::Tensor attention = at::softmax(scores, -1);
    at::Tensor context = at::empty({B, H, T, d}, x.options());  // [B, H, T, d]
    for (int64_t b = 0; b < B; ++b) {
      at::Tensor out = context[b];
      at::bmm_out(out, attention[b], v[b]);
    }
    const at::Tensor merged = context.transpose(1, 2).reshape({B, T, hidden});
    const at::Tensor attention_output = at::layer_norm(at::linear(merged, L.o_w, L.o_b) + x, {hidden}, L.ln1_w, L.ln1_b, eps);
    if (on_layer) {
      LayerOutputs out;
      out.layer = l;
      out.input = x;
      out.context = context;
      out.attention = attention;
      out.attention_output = attention_output;
      if (request.projected) out.projected = at::matmul(context, output_projection_by_head(l));  // [B,H,T,d] @ [H,d,hidden]
      on_layer(out);
    }
    if (l + 1 == config_.num_layers && !request.final_hidden) return {};  // its feed-forward block feeds nothing
    at::Tensor inter = at::linear(attention_output, L.i_w, L.i_b);
    if (config_.hidden_act == "relu") inter = at::relu(inter);
    else inter = at::gelu(inter, config_.hidden_act == "gelu_new" ? "tanh" : "none");
    x = at::layer_norm(at::linear(inter, L.out_w, L.out_b) + attention_output, {hidden}, L.ln2_w, L.ln2_b, eps);
  }
  return x;
}

}  // namespace ctxsim
