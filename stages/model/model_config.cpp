#include "stages/model/bert_config.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"

namespace ctxsim {

BertConfig BertConfig::load(const std::string& path) {
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
void read_fields(const nlohmann::json& j, const FamilySpec& f, const std::string& path, BertConfig& c) {
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

BertConfig BertConfig::parse(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) { throw Error(path, std::string("malformed JSON: ") + e.what(), kFixConfig); }
  if (!j.is_object()) throw Error(path, "expected a JSON object", kFixConfig);
  BertConfig c;
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

std::string BertConfig::positions_problem(int64_t tokens) const {
  if (pad_position < 0 || tokens <= max_tokens()) return ctxsim::positions_problem(tokens, max_position_embeddings);
  return std::to_string(tokens) + " " + kSeqLen.quantity + " exceed the " + std::to_string(max_tokens()) +
         " positions the model gives tokens (max_position_embeddings " + std::to_string(max_position_embeddings) + ", of which " +
         std::to_string(pad_position + 1) + " come before the first token)";
}

void BertConfig::check(const std::string& where, const std::string& fix) const {
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

std::string BertConfig::to_json(const std::string& architecture, double dropout) const {
  const FamilySpec& f = family_spec(family);
  nlohmann::ordered_json j;
  if (family == Family::Gpt2) {  // transformers' GPT2Config, keys in its sorted order
    j["activation_function"] = hidden_act;
    j["architectures"] = {architecture.empty() ? f.model_class : architecture};
    j["attn_pdrop"] = dropout;
    j["bos_token_id"] = vocab_size - 1;
    j["embd_pdrop"] = dropout;
    j["eos_token_id"] = vocab_size - 1;
    j["initializer_range"] = 0.02;
    j["layer_norm_epsilon"] = layer_norm_eps;
    j["model_type"] = "gpt2";
    j["n_embd"] = hidden_size;
    j["n_head"] = num_heads;
    j["n_inner"] = intermediate_size;
    j["n_layer"] = num_layers;
    j["n_positions"] = max_position_embeddings;
    j["resid_pdrop"] = dropout;
    j["scale_attn_weights"] = true;
    j["vocab_size"] = vocab_size;
    return j.dump(2) + "\n";
  }
  if (family == Family::DistilBert) {  // transformers' DistilBertConfig, keys in its sorted order
    j["activation"] = hidden_act;
    j["architectures"] = {architecture.empty() ? f.model_class : architecture};
    j["attention_dropout"] = dropout;
    j["dim"] = hidden_size;
    j["dropout"] = dropout;
    j["hidden_dim"] = intermediate_size;
    j["initializer_range"] = 0.02;
    j["max_position_embeddings"] = max_position_embeddings;
    j["model_type"] = "distilbert";
    j["n_heads"] = num_heads;
    j["n_layers"] = num_layers;
    j["pad_token_id"] = 0;
    j["qa_dropout"] = 0.1;
    j["seq_classif_dropout"] = 0.2;
    j["sinusoidal_pos_embds"] = false;
    j["tie_weights_"] = true;
    j["vocab_size"] = vocab_size;
    return j.dump(2) + "\n";
  }
  // BertConfig's keys (RobertaConfig adds its padding, start and end ids), sorted.
  j["architectures"] = {architecture.empty() ? f.model_class : architecture};
  j["attention_probs_dropout_prob"] = dropout;
  if (pad_position >= 0) j["bos_token_id"] = 0, j["eos_token_id"] = 2;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = dropout;
  j["hidden_size"] = hidden_size;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = intermediate_size;
  j["layer_norm_eps"] = layer_norm_eps;
  j["max_position_embeddings"] = max_position_embeddings;
  j["model_type"] = f.model_type;
  j["num_attention_heads"] = num_heads;
  j["num_hidden_layers"] = num_layers;
  j["pad_token_id"] = pad_position >= 0 ? pad_position : 0;
  j["position_embedding_type"] = "absolute";
  j["type_vocab_size"] = type_vocab_size;
  j["vocab_size"] = vocab_size;
  return j.dump(2) + "\n";
}

BertConfig BertConfig::preset(const std::string& name, Family family) {
  BertConfig c;
  c.family = family;
  const FamilySpec& f = family_spec(family);
  c.type_vocab_size = f.token_type ? (f.pad_key ? 1 : 2) : 0;  // RoBERTa: one token type
  if (f.causal) {                                              // gpt2's: 1024 positions, gelu_new, LayerNorm epsilon 1e-5
    c.max_position_embeddings = 1024;
    c.hidden_act = "gelu_new";
    c.layer_norm_eps = 1e-5;
    c.vocab_size = 50257;
  }
  if (f.pad_key) {  // roberta-base's: positions 2 … 513, LayerNorm epsilon 1e-5
    c.pad_position = 1;
    c.max_position_embeddings = 514;
    c.layer_norm_eps = 1e-5;
  }
  if (name == "bert-base" || name == "roberta-base" || name == "gpt2") return c;
  if (name == "distilbert-base") {
    c.num_layers = 6;
    return c;
  }
  if (name == "bert-mini") {
    c.num_layers = 4;
    c.hidden_size = 256;
    c.num_heads = 4;
    c.intermediate_size = 1024;
    return c;
  }
  if (name == "bert-tiny" || name == "roberta-tiny" || name == "gpt2-tiny") {
    c.num_layers = 2;
    c.hidden_size = 128;
    c.num_heads = 2;
    c.intermediate_size = 512;
    return c;
  }
  throw Error("--preset " + name, "unknown preset",
              "use bert-base, distilbert-base, bert-mini, bert-tiny, roberta-base, roberta-tiny, gpt2 or gpt2-tiny");
}

double BertConfig::flops_per_sample(int64_t T) const {
  const double t = double(T), h = double(hidden_size), f = double(intermediate_size);
  const double per_layer = 2 * (4 * t * h * h + 2 * t * h * f + 2 * t * t * h);
  return per_layer * double(num_layers);
}

std::map<std::string, std::vector<int64_t>> encoder_tensor_shapes(const BertConfig& c) {
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

std::map<std::string, std::vector<int64_t>> pooler_shapes(const BertConfig& c) {
  const char* pooler = family_spec(c.family).pooler;
  if (!pooler) return {};
  return {{std::string(pooler) + ".weight", {c.hidden_size, c.hidden_size}}, {std::string(pooler) + ".bias", {c.hidden_size}}};
}

}  // namespace ctxsim
