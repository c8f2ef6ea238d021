#include "stages/model/gguf_model.h"

#include <algorithm>
#include <cmath>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/model/family.h"
#include "stages/model/transformer_layer.h"

namespace ctxsim {
namespace {

// The GGUF architectures ctxsim reads, a row each: general.architecture, the family it is, and
// whether llama.cpp's converter permuted the rows of Q and K (LlamaModel.permute: each head's
// rotary halves interleaved, for ggml's rope of adjacent pairs).
struct GgufArchitecture {
  const char* name;
  const char* model_type;
  bool permuted_qk;
};
const GgufArchitecture kArchitectures[] = {{"llama", "llama", true}, {"qwen2", "qwen2", false}, {"qwen3", "qwen3", false}};

const GgufArchitecture& architecture_of(const GgufHeader& h, const std::string& path) {
  const std::string arch = h.text("general.architecture", path);
  std::string known;
  for (const GgufArchitecture& a : kArchitectures) {
    if (arch == a.name) return a;
    known += (known.empty() ? "" : ", ") + std::string(a.name);
  }
  throw Error(path, "is a GGUF of architecture '" + arch + "', and ctxsim reads " + known,
              "use a model of one of these architectures, or its Hugging Face folder if its family is one ctxsim reads");
}

// A layer tensor's name in GGUF (blk.N.<gguf>.weight) and the family row's module it is.
struct LayerTensor {
  const char* gguf;
  const char* FamilySpec::*module;
};
const LayerTensor kLayerTensors[] = {
    {"attn_norm", &FamilySpec::attn_norm}, {"attn_q", &FamilySpec::query},         {"attn_k", &FamilySpec::key},
    {"attn_v", &FamilySpec::value},        {"attn_output", &FamilySpec::attn_out}, {"attn_q_norm", &FamilySpec::q_norm},
    {"attn_k_norm", &FamilySpec::k_norm},  {"ffn_norm", &FamilySpec::ffn_norm},    {"ffn_gate", &FamilySpec::ffn_gate},
    {"ffn_up", &FamilySpec::ffn_in},       {"ffn_down", &FamilySpec::ffn_out},
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The bare Hugging Face name of a GGUF tensor ("" for one ctxsim does not know).
std::string hf_name(const FamilySpec& f, const std::string& name, int64_t layers) {
  const std::string kind = ends_with(name, ".weight") ? ".weight" : ends_with(name, ".bias") ? ".bias" : "";
  if (kind.empty()) return "";
  const std::string stem = name.substr(0, name.size() - kind.size());
  if (stem == "token_embd") return std::string(f.word) + kind;
  if (stem == "output_norm" && f.final_norm) return std::string(f.final_norm) + kind;
  if (stem == "output" && f.lm_head.decoder) return std::string(f.lm_head.decoder) + kind;
  if (stem.rfind("blk.", 0) != 0) return "";
  const size_t dot = stem.find('.', 4);
  if (dot == std::string::npos) return "";
  const std::string index = stem.substr(4, dot - 4), part = stem.substr(dot + 1);
  if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos) return "";
  if (std::stoll(index) >= layers) return "";
  for (const LayerTensor& t : kLayerTensors)
    if (part == t.gguf && f.*t.module) return std::string(f.layer_prefix) + index + "." + (f.*t.module) + kind;
  return "";
}

// Hugging Face's row order of a Q or K weight from llama.cpp's: within each of `heads` heads the
// converter wrote row 2i + j for row j·d/2 + i (j the rotary half).
at::Tensor unpermute(const at::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), d = rows / heads;
  return w.reshape({heads, d / 2, 2, w.size(1)}).transpose(1, 2).reshape({rows, w.size(1)}).contiguous();
}

// llama.cpp's converter stores Llama 3.1+'s rope scaling as rope_freqs.weight, a factor per
// inverse frequency (its LlamaModel.generate_extra_tensors): the factors, checked, and llama3's
// parameters that give them, found from them (factor the largest; with low_freq_factor 1, the
// smoothed band's factors fix original_max_position_embeddings and high_freq_factor, Meta's 8192
// and 4 where the band holds fewer than two), kept only where they give every factor to float32's
// precision, so that a config.json can say rope_type llama3 (init-model --like).
void read_rope_freqs(const GgufHeader& h, const std::string& path, ModelConfig& c) {
  const GgufTensor* t = h.tensor("rope_freqs.weight");
  if (!t) return;
  const std::string where = path + ": tensor 'rope_freqs.weight'";
  const int64_t d = c.head_dim(), half = d / 2;
  if (t->shape != std::vector<int64_t>{half})
    throw Error(where, "is " + shape_text(t->shape) + ", one factor per rotary frequency is [" + std::to_string(half) + "]",
                "use a complete, unedited model file");
  if (!t->type->dequantises)
    throw Error(where, std::string("is of type ") + t->type->name + ", which ctxsim does not dequantise",
                "use a complete, unedited model file");
  std::vector<float> v(size_t(half), 0.f);
  dequantize(*t->type, t->data, half, v.data());
  for (int64_t i = 0; i < half; ++i)
    if (!std::isfinite(v[size_t(i)]) || v[size_t(i)] <= 0)
      throw Error(where, "factor " + std::to_string(i) + " is " + std::to_string(v[size_t(i)]) + ", not a positive number",
                  "the file is damaged: download or convert it again");
  c.rope_freq_factors.assign(v.begin(), v.end());
  const double factor = *std::max_element(v.begin(), v.end());
  ModelConfig::Llama3Rope r{factor, 1, 4, 8192};
  const at::TensorOptions f64 = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor base = rope_inv_freq(d, c.rope_theta, {}, {}, f64);
  std::vector<std::pair<double, double>> band;  // (1 / wavelength, smooth) of factors between 1 and factor
  for (int64_t i = 0; i < half; ++i)
    if (v[size_t(i)] > 1 + 1e-6 && v[size_t(i)] < factor * (1 - 1e-6))
      band.emplace_back(base[i].item<double>() / (2 * M_PI), (1 / double(v[size_t(i)]) - 1 / factor) / (1 - 1 / factor));
  if (band.size() >= 2) {  // smooth (high - 1) = old / wavelength - 1 at the band's ends
    const auto [x1, s1] = band.front();
    const auto [x2, s2] = band.back();
    const double det = x1 * s2 - x2 * s1;
    if (det != 0)
      r.original_max_positions = std::llround((s2 - s1) / det), r.high_freq_factor = 1 + std::round((x2 - x1) / det * 1e3) / 1e3;
  }
  const at::Tensor implied = base / rope_inv_freq(d, c.rope_theta, r, {}, f64);
  const at::Tensor stored = at::tensor(c.rope_freq_factors, f64);
  if (factor > 1 && r.original_max_positions > 0 && r.high_freq_factor > 1 &&
      ((implied - stored).abs() <= stored * 1e-6).all().item<bool>())
    c.llama3_rope = r;
}

}  // namespace

ModelConfig gguf_model_config(const GgufHeader& h, const std::string& path) {
  const GgufArchitecture& arch = architecture_of(h, path);
  const std::string a = std::string(arch.name) + ".";
  ModelConfig c = ModelConfig::of_family(family_by_model_type(arch.model_type)->family);
  c.num_layers = h.integer(a + "block_count", path);
  c.hidden_size = h.integer(a + "embedding_length", path);
  c.num_heads = h.integer(a + "attention.head_count", path);
  c.num_kv_heads = h.integer(a + "attention.head_count_kv", path, c.num_heads);
  c.intermediate_size = h.integer(a + "feed_forward_length", path);
  c.max_position_embeddings = h.integer(a + "context_length", path, c.max_position_embeddings);
  c.layer_norm_eps = h.number(a + "attention.layer_norm_rms_epsilon", path, c.layer_norm_eps);
  c.rope_theta = h.number(a + "rope.freq_base", path, c.rope_theta);
  const GgufTensor* embedding = h.tensor("token_embd.weight");
  if (!embedding || embedding->shape.size() != 2)
    throw Error(path, "has no token_embd.weight of two dimensions", "use a complete model file");
  c.vocab_size = h.integer(a + "vocab_size", path, embedding->shape[0]);
  if (c.num_heads > 0 && c.hidden_size % c.num_heads != 0 && !h.find(a + "attention.key_length"))
    throw Error(path + ": " + a + "attention.head_count",
                std::to_string(c.num_heads) + " heads do not divide the hidden size " + std::to_string(c.hidden_size),
                "use a complete model file");
  c.explicit_head_dim = h.integer(a + "attention.key_length", path, 0);
  if (c.explicit_head_dim > 0 && h.integer(a + "attention.value_length", path, c.explicit_head_dim) != c.explicit_head_dim)
    throw Error(path + ": " + a + "attention.value_length", "differs from the key length",
                "ctxsim reads models whose heads' keys and values have one size");
  c.check(path + ": ", "use a complete model file");
  if (h.integer(a + "rope.dimension_count", path, c.head_dim()) != c.head_dim())
    throw Error(path + ": " + a + "rope.dimension_count",
                "rotates part of each head (" + std::to_string(h.integer(a + "rope.dimension_count", path)) + " of " +
                    std::to_string(c.head_dim()) + " dimensions), which ctxsim does not compute",
                "use a model with rotary positions over whole heads");
  if (const GgufValue* s = h.find(a + "rope.scaling.type"); s && s->text != "none")
    throw Error(path + ": " + a + "rope.scaling.type", "is '" + s->text + "', a rope scaling ctxsim does not compute from GGUF",
                "use the model's Hugging Face folder (its config.json's rope_scaling), or a GGUF without rope scaling");
  read_rope_freqs(h, path, c);
  c.tie_word_embeddings = h.tensor("output.weight") == nullptr;
  c.sliding_window = 0;
  return c;
}

ModelConfig model_config_of(const std::string& model_path) {
  const ModelFolder folder(model_path);
  if (!folder.is_gguf()) return ModelConfig::load(folder.config());
  const GgufFile file(model_path);
  return gguf_model_config(file.header(), model_path);
}

std::map<std::string, at::Tensor> read_gguf_tensors(const GgufHeader& h, const ModelConfig& c, const std::string& path, LoadReport& r,
                                                    bool head) {
  const GgufArchitecture& arch = architecture_of(h, path);
  const FamilySpec& f = family_spec(c.family);
  const auto expected = encoder_tensor_shapes(c);
  std::map<std::string, at::Tensor> out;
  r.tensors_in_file = int64_t(h.tensors.size());
  for (const GgufTensor& t : h.tensors) {
    const std::string where = path + ": tensor '" + t.name + "'";
    if (t.name == "rope_freqs.weight") continue;  // read with the config (read_rope_freqs)
    const std::string name = hf_name(f, t.name, c.num_layers);
    const bool is_head = !name.empty() && f.lm_head.decoder && name == std::string(f.lm_head.decoder) + ".weight";
    const auto it = expected.find(name);
    // A bias of a module the family's layout has without one (a llama GGUF with q/k/v biases):
    // the model would run without it, so it is refused, as config.json's attention_bias is.
    if (!name.empty() && it == expected.end() && ends_with(name, ".bias") && expected.count(name.substr(0, name.size() - 5) + ".weight"))
      throw Error(where, std::string("is a bias, and ctxsim reads ") + f.display + " projections without biases",
                  "use a model of an architecture with them (qwen2), or its Hugging Face folder");
    if (name.empty() || (it == expected.end() && !is_head)) {
      r.unexpected.push_back(t.name);
      continue;
    }
    if (is_head && !head) {
      r.ignored.push_back(t.name);
      continue;
    }
    const std::vector<int64_t> want = is_head ? std::vector<int64_t>{c.vocab_size, c.hidden_size} : it->second;
    if (t.shape != want)
      throw Error(where, "is " + shape_text(t.shape) + ", the metadata implies " + shape_text(want) + " for " + name,
                  "use a complete, unedited model file");
    if (!t.type->dequantises)
      throw Error(
          where,
          std::string("is of type ") + t.type->name + ", which ctxsim does not dequantise (it reads " + dequantised_type_names() + ")",
          "use a file quantised to one of these (llama.cpp's llama-quantize), or the model's Hugging Face folder");
    at::Tensor v = at::empty(t.shape, at::kFloat);
    dequantize(*t.type, t.data, t.numel(), v.data_ptr<float>());
    const int64_t bad = t.numel() - v.isfinite().sum().item<int64_t>();
    if (bad > 0)
      throw Error(where, std::to_string(bad) + " of " + std::to_string(t.numel()) + " values are not finite (NaN or inf)",
                  "the file is damaged: download or convert it again");
    const bool q = ends_with(t.name, ".attn_q.weight"), k = ends_with(t.name, ".attn_k.weight");
    if (arch.permuted_qk && (q || k)) v = unpermute(v, q ? c.num_heads : c.kv_heads());
    out.emplace(name, std::move(v));
  }
  std::vector<std::string> missing;
  for (const auto& [name, shape] : expected)
    if (!out.count(name)) missing.push_back(name);
  if (!missing.empty())
    throw Error(path,
                "misses tensors of the model: " + missing.front() +
                    (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : ""),
                "use a complete model file");
  r.encoder_tensors = int64_t(out.size()) - (out.count(std::string(f.lm_head.decoder ? f.lm_head.decoder : "") + ".weight") ? 1 : 0);
  return out;
}

}  // namespace ctxsim
