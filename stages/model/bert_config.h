// A BERT encoder's shape: Hugging Face config.json in and out, presets, and the names and
// shapes of every encoder tensor in the HF `BertModel` layout. No LibTorch here.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ctxsim {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_layers = 12;               // num_hidden_layers
  int64_t num_heads = 12;                // num_attention_heads
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";       // gelu (erf) | relu | gelu_new (tanh approximation)
  int64_t head_dim() const { return hidden_size / num_heads; }

  static BertConfig load(const std::string& config_json);  // throws naming file and key
  static BertConfig parse(const std::string& text, const std::string& path);  // the same from text
  // Every size within ctxsim's limits and the heads dividing the hidden size, else throws
  // Error(where + key, …, fix).
  void check(const std::string& where, const std::string& fix) const;
  // HF config.json text, stable order; `architecture` as transformers names the model class,
  // `dropout` its hidden and attention dropout.
  std::string to_json(const std::string& architecture = "BertModel", double dropout = 0.1) const;
  static BertConfig preset(const std::string& name);      // bert-base | bert-mini | bert-tiny
  double flops_per_sample(int64_t seq_len) const;           // forward multiply-adds × 2
};

// Canonical names of the encoder tensors and their shapes (the pooler excluded).
std::map<std::string, std::vector<int64_t>> bert_tensor_shapes(const BertConfig& c);
// The pooler's two tensors (present in BertModel checkpoints, unused by ctxsim).
std::map<std::string, std::vector<int64_t>> bert_pooler_shapes(const BertConfig& c);

// Maps a checkpoint key to its canonical BertModel name: drops a `bert.` prefix and renames
// legacy LayerNorm `gamma`/`beta`. Returns "" for keys ctxsim ignores on purpose (`cls.*`
// heads, the `position_ids` buffer).
std::string canonical_tensor_name(const std::string& key);

}  // namespace ctxsim
