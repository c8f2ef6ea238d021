#include "stages/model/model_config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"

namespace ctxsim {

ModelConfig ModelConfig::load(const std::string& path) {
  return parse(
      read_file_bytes(path, kMaxJsonBytes, ModelFolder::kConfig, "a Hugging Face model folder holds config.json next to model.safetensors"),
      path);
}

namespace {

const char* const kFixConfig = "restore the model's config.json";

// The family config.json's "model_type" names ("bert" when absent).
const FamilySpec& family_of(const nlohmann::json& j, const std::string& path) {
  const auto it = j.find("model_type");
  if (it == j.end()) return family_spec(Family{});
  if (!it->is_string()) throw Error(path + ": model_type", "expected a string, got " + it->dump(), kFixConfig);
  const std::string type = it->get<std::string>();
  if (const FamilySpec* f = family_by_model_type(type)) return *f;
  throw Error(path + ": model_type", "'" + type + "' is not a model family ctxsim reads (it reads " + supported_model_types() + ")",
              "use a checkpoint of one of these families (a new family is a row of stages/model/family.cpp)");
}

// A rotary family's base and rope scaling (the default, or llama3's), from the top level or from
// transformers 5's rope_parameters.
void read_rope(const nlohmann::json& j, const ConfigKeys& k, const std::string& path, ModelConfig& c) {
  // transformers 5 writes rope_parameters {rope_theta, rope_type, …}; earlier versions a
  // top-level rope_theta and rope_scaling (null, or {rope_type | type, …}).
  const auto params = j.find("rope_parameters");
  const bool nested = params != j.end() && params->is_object();
  const std::string where = nested ? "rope_parameters." : "";
  const nlohmann::json& holder = nested ? *params : j;
  if (auto it = holder.find(k.rope_theta); it != holder.end()) {
    if (!it->is_number() || !(it->get<double>() > 1))
      throw Error(path + ": " + where + k.rope_theta, "expected a number above 1", kFixConfig);
    c.rope_theta = it->get<double>();
  }
  const auto scaling = nested ? params : j.find("rope_scaling");
  if (scaling != j.end() && !scaling->is_null()) {
    const std::string key = nested ? "rope_parameters" : "rope_scaling";
    const std::string type = scaling->is_object() ? scaling->value("rope_type", scaling->value("type", std::string())) : std::string();
    if (type == "llama3") {
      const auto number = [&](const char* name, double& dst) {
        const auto it = scaling->find(name);
        if (it == scaling->end() || !it->is_number() || !(it->get<double>() > 0))
          throw Error(path + ": " + key + "." + name, "expected a positive number for rope_type llama3", kFixConfig);
        dst = it->get<double>();
      };
      auto& r = c.llama3_rope;
      number("factor", r.factor);
      number("low_freq_factor", r.low_freq_factor);
      number("high_freq_factor", r.high_freq_factor);
      double original = 0;
      number("original_max_position_embeddings", original);
      r.original_max_positions = int64_t(original);
      if (!(r.high_freq_factor > r.low_freq_factor))
        throw Error(path + ": " + key + ".high_freq_factor", "must exceed low_freq_factor", kFixConfig);
    } else if (type != "default") {
      throw Error(path + ": " + key, "rope_type '" + type + "' is not implemented (default and llama3 are)",
                  "use a checkpoint whose rope_type is default or llama3");
    }
  }
}

// The sizes, epsilon and activation under the family's key names.
void read_fields(const nlohmann::json& j, const FamilySpec& f, const std::string& path, ModelConfig& c) {
  const auto get_int = [&](const char* key, int64_t& dst, bool required) {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required) throw Error(path + ": " + key, "missing", kFixConfig);
      return;
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw Error(path + ": " + key, "expected a positive integer, got " + it->dump(), kFixConfig);
    dst = it->get<int64_t>();
  };
  const ConfigKeys& k = f.keys;
  get_int(k.vocab, c.vocab_size, true);
  get_int(k.hidden, c.hidden_size, true);
  get_int(k.layers, c.num_layers, true);
  get_int(k.heads, c.num_heads, true);
  if (f.ffn_null_is_4x && (!j.contains(k.ffn) || j[k.ffn].is_null()))
    c.intermediate_size = 4 * c.hidden_size;  // GPT2Config's n_inner: None
  else
    get_int(k.ffn, c.intermediate_size, true);
  c.max_position_embeddings = f.default_positions;
  get_int(k.positions, c.max_position_embeddings, false);
  for (const auto& [key, value] : f.fixed_flags)
    if (auto it = j.find(key); it != j.end() && !(it->is_boolean() && it->get<bool>() == value))
      throw Error(path + ": " + key,
                  "is " + it->dump() + ", and ctxsim computes " + f.display + " with " + key + " " + (value ? "true" : "false"),
                  std::string("use a checkpoint whose ") + key + " is " + (value ? "true" : "false") + " (transformers' default)");
  c.type_vocab_size = 0;
  if (k.type_vocab) {
    c.type_vocab_size = 2;
    get_int(k.type_vocab, c.type_vocab_size, false);
  }
  c.layer_norm_eps = f.eps;
  if (auto it = k.eps ? j.find(k.eps) : j.end(); it != j.end()) {
    if (!it->is_number()) throw Error(path + ": " + k.eps, "expected a number", kFixConfig);
    c.layer_norm_eps = it->get<double>();
    if (!(c.layer_norm_eps > 0 && c.layer_norm_eps < 1))
      throw Error(path + ": " + k.eps, "expected a small positive number, got " + it->dump(), kFixConfig);
  }
  if (f.pad_key) {
    c.pad_position = 1;  // RobertaConfig's default
    if (auto it = j.find(f.pad_key); it != j.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= c.max_position_embeddings - 1)
        throw Error(path + ": " + f.pad_key, "expected a padding id below max_position_embeddings - 1, got " + it->dump(), kFixConfig);
      c.pad_position = it->get<int64_t>();
    }
  }
  c.hidden_act = f.default_activation;
  if (auto it = j.find(k.activation); it != j.end()) {
    if (!it->is_string()) throw Error(path + ": " + k.activation, "expected a string", kFixConfig);
    c.hidden_act = it->get<std::string>();
    if (c.hidden_act != "gelu" && c.hidden_act != "relu" && c.hidden_act != "gelu_new" && c.hidden_act != "silu")
      throw Error(path + ": " + k.activation, "'" + c.hidden_act + "' is not supported (gelu, gelu_new, relu, silu)",
                  std::string("use a ") + f.display + " checkpoint");
  }
  // The Llama lineage's keys: grouped-query heads, the head size, the rotary base.
  if (k.kv_heads) get_int(k.kv_heads, c.num_kv_heads, false);
  if (k.head_dim && j.contains(k.head_dim) && !j[k.head_dim].is_null()) get_int(k.head_dim, c.explicit_head_dim, true);
  if (f.rotary) read_rope(j, k, path, c);
  // A sliding window (Mistral; Qwen2 only with use_sliding_window): exact up to its length.
  if (f.window_key && (!f.window_switch || j.value(f.window_switch, false)))
    if (auto it = j.find(f.window_key); it != j.end() && !it->is_null()) get_int(f.window_key, c.sliding_window, true);
  // Biases where the row has none (Llama's attention_bias, mlp_bias): other weights than it reads.
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (auto it = j.find(key); it != j.end() && it->is_boolean() && it->get<bool>() && !f.dense_bias)
      throw Error(path + ": " + key, std::string("is true, and ctxsim reads ") + f.display + " projections without biases",
                  std::string("use a ") + f.display + " checkpoint without them");
  if (auto it = j.find("tie_word_embeddings"); it != j.end()) {
    if (!it->is_boolean()) throw Error(path + ": tie_word_embeddings", "expected true or false, got " + it->dump(), kFixConfig);
    c.tie_word_embeddings = it->get<bool>();
  } else if (f.lm_head.decoder) {
    c.tie_word_embeddings = false;  // LlamaConfig's default
  }
}

}  // namespace

ModelConfig ModelConfig::parse(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) { throw Error(path, std::string("malformed JSON: ") + e.what(), kFixConfig); }
  if (!j.is_object()) throw Error(path, "expected a JSON object", kFixConfig);
  ModelConfig c;
  const FamilySpec& f = family_of(j, path);
  c.family = f.family;
  read_fields(j, f, path, c);
  // BERT's relative position variants have other weights and arithmetic. (DistilBERT's
  // sinusoidal_pos_embds are stored in position_embeddings like learned ones, so they load.)
  if (auto it = j.find("position_embedding_type"); it != j.end() && it->is_string() && it->get<std::string>() != "absolute")
    throw Error(path + ": position_embedding_type", "only 'absolute' position embeddings are supported",
                std::string("use a ") + f.display + " checkpoint");
  c.check(path + ": ", kFixConfig);
  return c;
}

std::string ModelConfig::positions_problem(int64_t tokens) const {
  if (sliding_window > 0 && tokens > sliding_window && tokens <= max_position_embeddings)
    return std::to_string(tokens) + " " + kSeqLen.quantity + " exceed the model's sliding window of " + std::to_string(sliding_window) +
           " (sliding_window: beyond it a query no longer sees every earlier key, which ctxsim does not implement)";
  if (pad_position < 0 || tokens <= max_tokens()) return ctxsim::positions_problem(tokens, max_position_embeddings);
  return std::to_string(tokens) + " " + kSeqLen.quantity + " exceed the " + std::to_string(max_tokens()) +
         " positions the model gives tokens (max_position_embeddings " + std::to_string(max_position_embeddings) + ", of which " +
         std::to_string(pad_position + 1) + " come before the first token)";
}

void ModelConfig::check(const std::string& where, const std::string& fix) const {
  const ConfigKeys& k = family_spec(family).keys;
  // Far above any BERT, far below what would exhaust memory before the weights are even read.
  const std::pair<const char*, std::pair<int64_t, int64_t>> limits[] = {
      {k.vocab, {vocab_size, int64_t(1) << 22}},      {k.hidden, {hidden_size, int64_t(1) << 16}},
      {k.layers, {num_layers, kLayersOrHeads.hi}},    {k.heads, {num_heads, kLayersOrHeads.hi}},
      {k.ffn, {intermediate_size, int64_t(1) << 18}}, {k.positions, {max_position_embeddings, int64_t(1) << 20}},
      {k.type_vocab, {type_vocab_size, 1024}}};
  for (const auto& [key, v] : limits)
    if (key && (v.first < 1 || v.first > v.second))
      throw Error(where + key, std::to_string(v.first) + " is outside what ctxsim supports (1 to " + std::to_string(v.second) + ")", fix);
  if (explicit_head_dim == 0 && hidden_size % num_heads != 0)
    throw Error(where + k.heads,
                std::string(k.hidden) + " " + std::to_string(hidden_size) + " is not divisible by " + std::to_string(num_heads) + " heads",
                fix);
  if (explicit_head_dim > (int64_t(1) << 12))
    throw Error(where + k.head_dim, std::to_string(explicit_head_dim) + " is outside what ctxsim supports (1 to 4096)", fix);
  if (num_kv_heads > 0 && (num_kv_heads > num_heads || num_heads % num_kv_heads != 0))
    throw Error(where + k.kv_heads,
                std::to_string(num_kv_heads) + " key/value heads do not divide the " + std::to_string(num_heads) + " attention heads", fix);
}

std::string ModelConfig::to_json(const std::string& architecture, double dropout) const {
  // The row's constant keys, then the sizes under its key names: every family's config class
  // (BertConfig, DistilBertConfig, RobertaConfig, GPT2Config) in one sorted object, as
  // transformers' save_pretrained sorts them.
  const FamilySpec& f = family_spec(family);
  nlohmann::json j = nlohmann::json::parse(f.config_constants);
  j["architectures"] = {architecture.empty() ? f.model_class : architecture};
  j["model_type"] = f.model_type;
  for (const char* key : f.dropout_keys) j[key] = dropout;
  for (const char* key : f.last_id_keys) j[key] = vocab_size - 1;
  const ConfigKeys& k = f.keys;
  const std::pair<const char*, int64_t> sizes[] = {{k.vocab, vocab_size},          {k.hidden, hidden_size},
                                                   {k.layers, num_layers},         {k.heads, num_heads},
                                                   {k.ffn, intermediate_size},     {k.positions, max_position_embeddings},
                                                   {k.type_vocab, type_vocab_size}};
  for (const auto& [key, value] : sizes)
    if (key) j[key] = value;
  j[k.activation] = hidden_act;
  if (k.eps) j[k.eps] = layer_norm_eps;
  if (f.pad_key) j[f.pad_key] = pad_position;
  if (k.kv_heads) j[k.kv_heads] = kv_heads();
  if (k.head_dim) j[k.head_dim] = head_dim();
  if (k.rope_theta) j[k.rope_theta] = rope_theta;
  const bool scaled = std::any_of(rope_freq_factors.begin(), rope_freq_factors.end(), [](double x) { return x != 1; });
  if (scaled && llama3_rope.factor <= 0)
    throw Error("tensor 'rope_freqs.weight'", "scales the rotary frequencies by factors that are not Llama 3's (rope_type llama3)",
                "give the model's Hugging Face folder (its config.json's rope_scaling) instead of the GGUF file");
  if (llama3_rope.factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", llama3_rope.factor},
                         {"low_freq_factor", llama3_rope.low_freq_factor},
                         {"high_freq_factor", llama3_rope.high_freq_factor},
                         {"original_max_position_embeddings", llama3_rope.original_max_positions}};
  if (f.lm_head.decoder) j["tie_word_embeddings"] = tie_word_embeddings;
  if (f.window_key && sliding_window > 0) {  // a window read is a window written (init-model --like)
    j[f.window_key] = sliding_window;
    if (f.window_switch) j[f.window_switch] = true;
  }
  return j.dump(2) + "\n";
}

namespace {

// The shapes a preset names; the rest is the family's base model (FamilySpec::base). The Llama
// lineage's presets also give grouped heads, head_dim, positions and the rotary base (0: the
// family's), and Llama 3.2's llama3 rope factor.
struct Preset {
  const char* name;
  int64_t layers, hidden, heads, ffn;
  int64_t kv_heads = 0, head_dim = 0, positions = 0;
  double rope_theta = 0, llama3_factor = 0;
};
// clang-format off
const Preset kPresets[] = {
  {"bert-base",       12,  768, 12, 3072},
  {"distilbert-base",  6,  768, 12, 3072},
  {"bert-mini",        4,  256,  4, 1024},
  {"bert-tiny",        2,  128,  2,  512},
  {"roberta-base",    12,  768, 12, 3072},
  {"roberta-tiny",     2,  128,  2,  512},
  {"gpt2",            12,  768, 12, 3072},
  {"gpt2-tiny",        2,  128,  2,  512},
  {"smollm2-135m",    30,  576,  9, 1536,  3,  64,   8192, 100000},      // HuggingFaceTB/SmolLM2-135M
  {"llama-3.2-1b",    16, 2048, 32, 8192,  8,  64, 131072, 500000, 32},  // meta-llama/Llama-3.2-1B
  {"qwen3-0.6b",      28, 1024, 16, 3072,  8, 128,  40960, 1000000},     // Qwen/Qwen3-0.6B
};
// clang-format on

}  // namespace

ModelConfig ModelConfig::of_family(Family family) {
  const FamilySpec& f = family_spec(family);
  ModelConfig c;
  c.family = family;
  c.vocab_size = f.base.vocab;
  c.max_position_embeddings = f.base.positions;
  c.type_vocab_size = f.base.type_vocab;
  c.pad_position = f.base.pad_position;
  c.layer_norm_eps = f.base.eps;
  c.hidden_act = f.default_activation;
  return c;
}

ModelConfig ModelConfig::preset(const std::string& name, Family family) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    ModelConfig c = of_family(family);
    c.num_layers = p.layers;
    c.hidden_size = p.hidden;
    c.num_heads = p.heads;
    c.intermediate_size = p.ffn;
    c.num_kv_heads = p.kv_heads;
    c.explicit_head_dim = p.head_dim;
    if (p.positions > 0) c.max_position_embeddings = p.positions;
    if (p.rope_theta > 0) c.rope_theta = p.rope_theta;
    if (p.llama3_factor > 0) c.llama3_rope = {p.llama3_factor, 1, 4, 8192};
    return c;
  }
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  throw Error("--preset " + name, "unknown preset", "use one of " + join(names));
}

double ModelConfig::flops_per_sample(int64_t T) const {
  const double t = double(T), h = double(hidden_size), f = double(intermediate_size);
  const double q = double(num_heads * head_dim()), kv = double(kv_heads() * head_dim());
  const double gated = family_spec(family).ffn_gate ? 3 : 2;  // up, down (and gate)
  const double per_layer = 2 * (t * h * (2 * q + 2 * kv) + gated * t * h * f + 2 * t * t * q);
  return per_layer * double(num_layers);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return "[" + join_each(shape, [](int64_t d) { return std::to_string(d); }) + "]";
}

std::map<std::string, std::vector<int64_t>> encoder_tensor_shapes(const ModelConfig& c) {
  const FamilySpec& f = family_spec(c.family);
  const int64_t H = c.hidden_size, F = c.intermediate_size, Q = c.num_heads * c.head_dim(), KV = c.kv_heads() * c.head_dim();
  const auto name = [](const std::string& base, const char* kind) { return base + "." + kind; };
  std::map<std::string, std::vector<int64_t>> s;
  // A Linear weight [out, in] as the file holds it: transposed for Conv1D ([in, out]).
  const auto linear = [&](const std::string& base, int64_t out, int64_t in, bool bias) {
    s[name(base, "weight")] = f.conv1d ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in};
    if (bias) s[name(base, "bias")] = {out};
  };
  const auto norm = [&](const std::string& base) {  // LayerNorm: weight and bias; RMSNorm: its weight
    s[name(base, "weight")] = {H};
    if (!f.rms_norm) s[name(base, "bias")] = {H};
  };
  s[name(f.word, "weight")] = {c.vocab_size, H};
  if (f.position) s[name(f.position, "weight")] = {c.max_position_embeddings, H};
  if (f.token_type) s[name(f.token_type, "weight")] = {c.type_vocab_size, H};
  for (const char* n : {f.embed_norm, f.final_norm})
    if (n) norm(n);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = f.layer_prefix + std::to_string(l) + ".";
    if (f.qkv) linear(p + f.qkv, 3 * H, H, true);
    if (f.query) linear(p + f.query, Q, H, f.qkv_bias), linear(p + f.key, KV, H, f.qkv_bias), linear(p + f.value, KV, H, f.qkv_bias);
    for (const char* n : {f.q_norm, f.k_norm})
      if (n) s[name(p + n, "weight")] = {c.head_dim()};
    linear(p + f.attn_out, H, Q, f.dense_bias);
    norm(p + f.attn_norm);
    norm(p + f.ffn_norm);
    linear(p + f.ffn_in, F, H, f.dense_bias);
    if (f.ffn_gate) linear(p + f.ffn_gate, F, H, f.dense_bias);
    linear(p + f.ffn_out, H, F, f.dense_bias);
  }
  return s;
}

std::map<std::string, std::vector<int64_t>> lm_head_shapes(const ModelConfig& c) {
  const LmHead& head = family_spec(c.family).lm_head;
  const int64_t H = c.hidden_size;
  std::map<std::string, std::vector<int64_t>> s;
  if (head.transform) s[std::string(head.transform) + ".weight"] = {H, H}, s[std::string(head.transform) + ".bias"] = {H};
  if (head.transform_norm) s[std::string(head.transform_norm) + ".weight"] = {H}, s[std::string(head.transform_norm) + ".bias"] = {H};
  if (head.bias) s[head.bias] = {c.vocab_size};
  if (head.decoder && !c.tie_word_embeddings) s[std::string(head.decoder) + ".weight"] = {c.vocab_size, H};
  return s;
}

std::map<std::string, std::vector<int64_t>> pooler_shapes(const ModelConfig& c) {
  const char* pooler = family_spec(c.family).pooler;
  if (!pooler) return {};
  return {{std::string(pooler) + ".weight", {c.hidden_size, c.hidden_size}}, {std::string(pooler) + ".bias", {c.hidden_size}}};
}

}  // namespace ctxsim
