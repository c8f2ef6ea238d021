#include "stages/model/bert_config.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {

BertConfig BertConfig::load(const std::string& path) {
  return parse(read_file_bytes(path, kMaxJsonBytes, "config.json", "a Hugging Face model folder holds config.json next to model.safetensors"),
               path);
}

BertConfig BertConfig::parse(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path, std::string("malformed JSON: ") + e.what(), "restore the model's config.json");
  }
  if (!j.is_object()) throw Error(path, "expected a JSON object", "restore the model's config.json");
  BertConfig c;
  const auto get_int = [&](const char* key, int64_t& dst, bool required) {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required) throw Error(path + ": " + key, "missing", "restore the model's config.json");
      return;
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw Error(path + ": " + key, "expected a positive integer, got " + it->dump(), "restore the model's config.json");
    dst = it->get<int64_t>();
  };
  get_int("vocab_size", c.vocab_size, true);
  get_int("hidden_size", c.hidden_size, true);
  get_int("num_hidden_layers", c.num_layers, true);
  get_int("num_attention_heads", c.num_heads, true);
  get_int("intermediate_size", c.intermediate_size, true);
  get_int("max_position_embeddings", c.max_position_embeddings, false);
  get_int("type_vocab_size", c.type_vocab_size, false);
  if (auto it = j.find("layer_norm_eps"); it != j.end()) {
    if (!it->is_number()) throw Error(path + ": layer_norm_eps", "expected a number", "restore the model's config.json");
    c.layer_norm_eps = it->get<double>();
    if (!(c.layer_norm_eps > 0 && c.layer_norm_eps < 1))
      throw Error(path + ": layer_norm_eps", "expected a small positive number, got " + it->dump(), "restore the model's config.json");
  }
  if (auto it = j.find("hidden_act"); it != j.end()) {
    if (!it->is_string()) throw Error(path + ": hidden_act", "expected a string", "restore the model's config.json");
    c.hidden_act = it->get<std::string>();
    if (c.hidden_act != "gelu" && c.hidden_act != "relu" && c.hidden_act != "gelu_new")
      throw Error(path + ": hidden_act", "'" + c.hidden_act + "' is not supported (gelu, gelu_new, relu)", "use a BERT checkpoint");
  }
  if (auto it = j.find("position_embedding_type"); it != j.end() && it->is_string() && it->get<std::string>() != "absolute")
    throw Error(path + ": position_embedding_type", "only 'absolute' position embeddings are supported", "use a BERT checkpoint");
  c.check(path + ": ", "restore the model's config.json");
  return c;
}

void BertConfig::check(const std::string& where, const std::string& fix) const {
  // Far above any BERT, far below what would exhaust memory before the weights are even read.
  const std::pair<const char*, std::pair<int64_t, int64_t>> limits[] = {
      {"vocab_size", {vocab_size, int64_t(1) << 22}},         {"hidden_size", {hidden_size, int64_t(1) << 16}},
      {"num_hidden_layers", {num_layers, 1024}},               {"num_attention_heads", {num_heads, 1024}},
      {"intermediate_size", {intermediate_size, int64_t(1) << 18}}, {"max_position_embeddings", {max_position_embeddings, int64_t(1) << 20}},
      {"type_vocab_size", {type_vocab_size, 1024}}};
  for (const auto& [key, v] : limits)
    if (v.first < 1 || v.first > v.second)
      throw Error(where + key, std::to_string(v.first) + " is outside what ctxsim supports (1 to " + std::to_string(v.second) + ")", fix);
  if (hidden_size % num_heads != 0)
    throw Error(where + "num_attention_heads", "hidden_size " + std::to_string(hidden_size) + " is not divisible by " +
                    std::to_string(num_heads) + " heads", fix);
}

std::string BertConfig::to_json(const std::string& architecture, double dropout) const {
  nlohmann::ordered_json j;
  j["architectures"] = {architecture};
  j["attention_probs_dropout_prob"] = dropout;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = dropout;
  j["hidden_size"] = hidden_size;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = intermediate_size;
  j["layer_norm_eps"] = layer_norm_eps;
  j["max_position_embeddings"] = max_position_embeddings;
  j["model_type"] = "bert";
  j["num_attention_heads"] = num_heads;
  j["num_hidden_layers"] = num_layers;
  j["pad_token_id"] = 0;
  j["position_embedding_type"] = "absolute";
  j["type_vocab_size"] = type_vocab_size;
  j["vocab_size"] = vocab_size;
  return j.dump(2) + "\n";
}

BertConfig BertConfig::preset(const std::string& name) {
  BertConfig c;
  if (name == "bert-base") return c;
  if (name == "bert-mini") { c.num_layers = 4; c.hidden_size = 256; c.num_heads = 4; c.intermediate_size = 1024; return c; }
  if (name == "bert-tiny") { c.num_layers = 2; c.hidden_size = 128; c.num_heads = 2; c.intermediate_size = 512; return c; }
  throw Error("--preset " + name, "unknown preset", "use bert-base, bert-mini or bert-tiny");
}

double BertConfig::flops_per_sample(int64_t T) const {
  const double t = double(T), h = double(hidden_size), f = double(intermediate_size);
  const double per_layer = 2 * (4 * t * h * h + 2 * t * h * f + 2 * t * t * h);
  return per_layer * double(num_layers);
}

std::map<std::string, std::vector<int64_t>> bert_tensor_shapes(const BertConfig& c) {
  const int64_t H = c.hidden_size, F = c.intermediate_size;
  std::map<std::string, std::vector<int64_t>> s;
  s["embeddings.word_embeddings.weight"] = {c.vocab_size, H};
  s["embeddings.position_embeddings.weight"] = {c.max_position_embeddings, H};
  s["embeddings.token_type_embeddings.weight"] = {c.type_vocab_size, H};
  s["embeddings.LayerNorm.weight"] = {H};
  s["embeddings.LayerNorm.bias"] = {H};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      s[p + m + ".weight"] = {H, H};
      s[p + m + ".bias"] = {H};
    }
    s[p + "attention.output.LayerNorm.weight"] = {H};
    s[p + "attention.output.LayerNorm.bias"] = {H};
    s[p + "intermediate.dense.weight"] = {F, H};
    s[p + "intermediate.dense.bias"] = {F};
    s[p + "output.dense.weight"] = {H, F};
    s[p + "output.dense.bias"] = {H};
    s[p + "output.LayerNorm.weight"] = {H};
    s[p + "output.LayerNorm.bias"] = {H};
  }
  return s;
}

std::map<std::string, std::vector<int64_t>> bert_pooler_shapes(const BertConfig& c) {
  return {{"pooler.dense.weight", {c.hidden_size, c.hidden_size}}, {"pooler.dense.bias", {c.hidden_size}}};
}

std::string canonical_tensor_name(const std::string& key) {
  std::string k = key;
  if (k.rfind("bert.", 0) == 0) k = k.substr(5);
  if (k.rfind("cls.", 0) == 0 || k == "embeddings.position_ids") return "";
  const auto ends_with = [&](const std::string& suffix) {
    return k.size() >= suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("LayerNorm.gamma")) k = k.substr(0, k.size() - 5) + "weight";
  else if (ends_with("LayerNorm.beta")) k = k.substr(0, k.size() - 4) + "bias";
  return k;
}

}  // namespace ctxsim
