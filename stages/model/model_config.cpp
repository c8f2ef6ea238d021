#include "stages/model/model_config.h"

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
  if (it == j.end()) return family_spec(Family::Bert);
  if (!it->is_string()) throw Error(path + ": model_type", "expected a string, got " + it->dump(), kFixConfig);
  const std::string type = it->get<std::string>();
  if (const FamilySpec* f = family_by_model_type(type)) return *f;
  throw Error(path + ": model_type", "'" + type + "' is not a model family ctxsim reads (it reads " + supported_model_types() + ")",
              "use a checkpoint of one of these families (a new family is a row of stages/model/family.cpp)");
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
  get_int(k.positions, c.max_position_embeddings, false);
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
    if (c.hidden_act != "gelu" && c.hidden_act != "relu" && c.hidden_act != "gelu_new")
      throw Error(path + ": " + k.activation, "'" + c.hidden_act + "' is not supported (gelu, gelu_new, relu)",
                  std::string("use a ") + f.display + " checkpoint");
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
  if (hidden_size % num_heads != 0)
    throw Error(where + k.heads,
                std::string(k.hidden) + " " + std::to_string(hidden_size) + " is not divisible by " + std::to_string(num_heads) + " heads",
                fix);
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
  return j.dump(2) + "\n";
}

namespace {

// The shapes a preset names; the rest is the family's base model (FamilySpec::base).
struct Preset {
  const char* name;
  int64_t layers, hidden, heads, ffn;
};
// clang-format off
constexpr Preset kPresets[] = {
  {"bert-base",       12, 768, 12, 3072},
  {"distilbert-base",  6, 768, 12, 3072},
  {"bert-mini",        4, 256,  4, 1024},
  {"bert-tiny",        2, 128,  2,  512},
  {"roberta-base",    12, 768, 12, 3072},
  {"roberta-tiny",     2, 128,  2,  512},
  {"gpt2",            12, 768, 12, 3072},
  {"gpt2-tiny",        2, 128,  2,  512},
};
// clang-format on

}  // namespace

ModelConfig ModelConfig::preset(const std::string& name, Family family) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    const FamilySpec& f = family_spec(family);
    ModelConfig c;
    c.family = family;
    c.vocab_size = f.base.vocab;
    c.max_position_embeddings = f.base.positions;
    c.type_vocab_size = f.base.type_vocab;
    c.pad_position = f.base.pad_position;
    c.layer_norm_eps = f.base.eps;
    c.hidden_act = f.default_activation;
    c.num_layers = p.layers;
    c.hidden_size = p.hidden;
    c.num_heads = p.heads;
    c.intermediate_size = p.ffn;
    return c;
  }
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  throw Error("--preset " + name, "unknown preset", "use one of " + join(names));
}

double ModelConfig::flops_per_sample(int64_t T) const {
  const double t = double(T), h = double(hidden_size), f = double(intermediate_size);
  const double per_layer = 2 * (4 * t * h * h + 2 * t * h * f + 2 * t * t * h);
  return per_layer * double(num_layers);
}

std::map<std::string, std::vector<int64_t>> encoder_tensor_shapes(const ModelConfig& c) {
  const FamilySpec& f = family_spec(c.family);
  const int64_t H = c.hidden_size, F = c.intermediate_size;
  const auto name = [](const std::string& base, const char* kind) { return base + "." + kind; };
  std::map<std::string, std::vector<int64_t>> s;
  // A Linear weight [out, in] as the file holds it: transposed for Conv1D ([in, out]).
  const auto linear = [&](int64_t out, int64_t in) { return f.conv1d ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in}; };
  s[name(f.word, "weight")] = {c.vocab_size, H};
  s[name(f.position, "weight")] = {c.max_position_embeddings, H};
  if (f.token_type) s[name(f.token_type, "weight")] = {c.type_vocab_size, H};
  for (const char* norm : {f.embed_norm, f.final_norm})
    if (norm) s[name(norm, "weight")] = {H}, s[name(norm, "bias")] = {H};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = f.layer_prefix + std::to_string(l) + ".";
    if (f.qkv) {
      s[name(p + f.qkv, "weight")] = linear(3 * H, H);
      s[name(p + f.qkv, "bias")] = {3 * H};
    }
    for (const char* m : {f.query, f.key, f.value, f.attn_out}) {
      if (!m) continue;
      s[name(p + m, "weight")] = linear(H, H);
      s[name(p + m, "bias")] = {H};
    }
    for (const char* norm : {f.attn_norm, f.ffn_norm}) {
      s[name(p + norm, "weight")] = {H};
      s[name(p + norm, "bias")] = {H};
    }
    s[name(p + f.ffn_in, "weight")] = linear(F, H);
    s[name(p + f.ffn_in, "bias")] = {F};
    s[name(p + f.ffn_out, "weight")] = linear(H, F);
    s[name(p + f.ffn_out, "bias")] = {H};
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
  return s;
}

std::map<std::string, std::vector<int64_t>> pooler_shapes(const ModelConfig& c) {
  const char* pooler = family_spec(c.family).pooler;
  if (!pooler) return {};
  return {{std::string(pooler) + ".weight", {c.hidden_size, c.hidden_size}}, {std::string(pooler) + ".bias", {c.hidden_size}}};
}

}  // namespace ctxsim
