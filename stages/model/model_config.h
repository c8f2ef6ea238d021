// A model's shape and family: Hugging Face config.json in and out (each family's keys and
// constants from its row in family.h; the family from "model_type", "bert" when absent), the
// presets (a table of shapes over the family's base model), and the names and shapes of every
// tensor of the family's bare-model layout. No LibTorch here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/model/family.h"

namespace ctxsim {

struct ModelConfig {
  Family family = {};  // config.json "model_type" (BERT when absent)
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;         // BERT hidden_size, DistilBERT dim
  int64_t num_layers = 12;           // num_hidden_layers | n_layers
  int64_t num_heads = 12;            // num_attention_heads | n_heads
  int64_t intermediate_size = 3072;  // intermediate_size | hidden_dim
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;  // 0 for a family without token-type embeddings
  double layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";  // hidden_act | activation: gelu (erf) | relu | gelu_new (tanh)
  int64_t pad_position = -1;        // RoBERTa: pad_token_id, where positions start (FamilySpec::pad_key); -1: none
  int64_t num_kv_heads = 0;         // num_key_value_heads (grouped-query attention); 0: num_heads
  int64_t explicit_head_dim = 0;    // head_dim when config.json gives it; 0: hidden / heads
  double rope_theta = 10000;        // rotary families' base
  // rope_type llama3 (Llama 3.1+): Meta's rescaling of the inverse frequencies; factor 0: none.
  struct Llama3Rope {
    double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
    int64_t original_max_positions = 8192;
  } llama3_rope;
  // A GGUF's rope_freqs.weight (llama.cpp's form of Llama 3.1+'s scaling): inverse frequency i is
  // divided by factor i; empty: none. Where these are llama3's (gguf_model.cpp fits them),
  // llama3_rope holds its parameters as well, for config.json (init-model --like).
  std::vector<double> rope_freq_factors;
  bool tie_word_embeddings = true;  // the language-model head's decoder is the word embeddings
  // The tokens a sample can hold: max_position_embeddings, less the positions before the first
  // (RoBERTa's 0 … pad_token_id).
  int64_t sliding_window = 0;  // Mistral's: each query sees the last sliding_window keys; 0: all
  int64_t max_tokens() const {
    const int64_t positions = pad_position < 0 ? max_position_embeddings : max_position_embeddings - pad_position - 1;
    return sliding_window > 0 ? std::min(positions, sliding_window) : positions;  // within the window, attention is full
  }
  int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden_size / num_heads; }
  int64_t kv_heads() const { return num_kv_heads > 0 ? num_kv_heads : num_heads; }

  static ModelConfig load(const std::string& config_json);                     // throws naming file and key
  static ModelConfig parse(const std::string& text, const std::string& path);  // the same from text
  // Every size within ctxsim's limits and the heads dividing the hidden size, else throws
  // Error(where + key, …, fix) with the family's key name.
  void check(const std::string& where, const std::string& fix) const;
  // HF config.json text in the family's keys and constants, keys sorted; `architecture` as
  // transformers names the model class ("" = the family's bare model), `dropout` the family's
  // dropout keys.
  std::string to_json(const std::string& architecture = "", double dropout = 0.1) const;
  // A shape of the presets table (bert-base, bert-mini, bert-tiny, distilbert-base: bert-base's
  // with 6 layers, roberta-*, gpt2*) over the given family's base model (FamilySpec::base).
  static ModelConfig preset(const std::string& name, Family family = {});
  // The family's base model (FamilySpec::base: vocabulary, positions, token types, epsilon,
  // activation) with bert-base's shape, which a preset or pretrain's shape keys then set.
  static ModelConfig of_family(Family family);
  double flops_per_sample(int64_t seq_len) const;  // forward multiply-adds × 2
  // "" when `tokens` positions fit max_position_embeddings, else what is wrong (the quantity:
  // the caller names the key or option that asked for them).
  std::string positions_problem(int64_t tokens) const;  // against max_tokens()
};

// The config of a model path: a folder's config.json, or a GGUF file's metadata (gguf_model.cpp).
ModelConfig model_config_of(const std::string& model_path);

// A tensor's shape as messages write it: "[768, 3072]".
std::string shape_text(const std::vector<int64_t>& shape);

// The encoder tensors (the pooler excluded) by their bare-model names in the config's family,
// with their shapes.
std::map<std::string, std::vector<int64_t>> encoder_tensor_shapes(const ModelConfig& c);
// The language-model head's own tensors by their checkpoint names (FamilySpec::lm_head; the tied
// decoder weight is the word embeddings, not among them); none for a family without one.
std::map<std::string, std::vector<int64_t>> lm_head_shapes(const ModelConfig& c);
// The pooler's two tensors (in BertModel checkpoints, unused by ctxsim); none for DistilBERT.
std::map<std::string, std::vector<int64_t>> pooler_shapes(const ModelConfig& c);

}  // namespace ctxsim
