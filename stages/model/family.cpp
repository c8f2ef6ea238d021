#include "stages/model/family.h"

#include "stages/base/error.h"

namespace ctxsim {
namespace {

// The table. BERT: transformers' modeling_bert.py (BertModel, BertForMaskedLM, BertForPreTraining).
// DistilBERT: modeling_distilbert.py (DistilBertModel, DistilBertForMaskedLM), whose LayerNorms
// are built with eps=1e-12 and whose config.json has no epsilon key.
// clang-format off
const std::vector<FamilySpec>& families() {
  static const std::vector<FamilySpec> rows = [] {
    FamilySpec bert;
    bert.model_type      = "bert";
    bert.display         = "BERT";
    bert.model_class     = "BertModel";
    bert.mlm_class       = "BertForMaskedLM";
    bert.checkpoints     = "BertModel, BertForMaskedLM or BertForPreTraining";
    bert.model_prefix    = "bert.";
    bert.head_prefixes   = {"cls."};
    bert.buffers         = {"embeddings.position_ids"};
    bert.keys            = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                            "max_position_embeddings", "hidden_act", "layer_norm_eps", "type_vocab_size"};
    bert.eps             = 1e-12;
    bert.word            = "embeddings.word_embeddings";
    bert.position        = "embeddings.position_embeddings";
    bert.token_type      = "embeddings.token_type_embeddings";
    bert.embed_norm      = "embeddings.LayerNorm";
    bert.layer_prefix    = "encoder.layer.";
    bert.query           = "attention.self.query";
    bert.key             = "attention.self.key";
    bert.value           = "attention.self.value";
    bert.attn_out        = "attention.output.dense";
    bert.attn_norm       = "attention.output.LayerNorm";
    bert.ffn_in          = "intermediate.dense";
    bert.ffn_out         = "output.dense";
    bert.ffn_norm        = "output.LayerNorm";
    bert.pooler          = "pooler.dense";
    bert.dropout_after_attention_output = true;
    bert.norm            = NormPlacement::Post;
    bert.config_constants = R"({"initializer_range": 0.02, "pad_token_id": 0, "position_embedding_type": "absolute"})";
    bert.dropout_keys    = {"attention_probs_dropout_prob", "hidden_dropout_prob"};
    bert.base            = {30522, 512, 2, -1, 1e-12};
    bert.lm_head         = {LmObjective::Masked, "cls.predictions.transform.dense", nullptr, "cls.predictions.transform.LayerNorm",
                            "cls.predictions.bias", nullptr, "[MASK]"};

    FamilySpec distilbert = bert;
    distilbert.model_type      = "distilbert";
    distilbert.display         = "DistilBERT";
    distilbert.model_class     = "DistilBertModel";
    distilbert.mlm_class       = "DistilBertForMaskedLM";
    distilbert.checkpoints     = "DistilBertModel or DistilBertForMaskedLM";
    distilbert.model_prefix    = "distilbert.";
    distilbert.head_prefixes   = {"vocab_transform.", "vocab_layer_norm.", "vocab_projector."};
    distilbert.keys            = {"vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings", "activation",
                                  nullptr, nullptr};
    distilbert.token_type      = nullptr;
    distilbert.layer_prefix    = "transformer.layer.";
    distilbert.query           = "attention.q_lin";
    distilbert.key             = "attention.k_lin";
    distilbert.value           = "attention.v_lin";
    distilbert.attn_out        = "attention.out_lin";
    distilbert.attn_norm       = "sa_layer_norm";
    distilbert.ffn_in          = "ffn.lin1";
    distilbert.ffn_out         = "ffn.lin2";
    distilbert.ffn_norm        = "output_layer_norm";
    distilbert.pooler          = nullptr;
    distilbert.dropout_after_attention_output = false;
    distilbert.init_writes_mlm = true;
    distilbert.config_constants = R"({"initializer_range": 0.02, "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
                                      "sinusoidal_pos_embds": false, "tie_weights_": true})";
    distilbert.dropout_keys    = {"attention_dropout", "dropout"};
    distilbert.base            = {30522, 512, 0, -1, 1e-12};
    distilbert.lm_head         = {LmObjective::Masked, "vocab_transform", nullptr, "vocab_layer_norm", "vocab_projector.bias", nullptr, "[MASK]"};

    // RoBERTa: modeling_roberta.py (RobertaModel, RobertaForMaskedLM): BERT's layout under
    // "roberta.", one token type, positions after the padding id, GPT-2's byte-level BPE.
    FamilySpec roberta = bert;
    roberta.model_type     = "roberta";
    roberta.display        = "RoBERTa";
    roberta.model_class    = "RobertaModel";
    roberta.mlm_class      = "RobertaForMaskedLM";
    roberta.checkpoints    = "RobertaModel or RobertaForMaskedLM";
    roberta.model_prefix   = "roberta.";
    roberta.head_prefixes  = {"lm_head."};
    roberta.buffers        = {"embeddings.position_ids", "embeddings.token_type_ids"};
    roberta.pad_key        = "pad_token_id";
    roberta.byte_level_bpe = true;
    roberta.frame          = {"<s>", "</s>", "<pad>", {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}};
    roberta.config_constants = R"({"bos_token_id": 0, "eos_token_id": 2, "initializer_range": 0.02, "position_embedding_type": "absolute"})";
    roberta.base           = {30522, 514, 1, 1, 1e-5};  // roberta-base's positions 2 … 513 after pad_token_id 1
    roberta.bpe_specials_first = {"<s>", "<pad>", "</s>", "<unk>"};
    roberta.bpe_specials_last  = {"<mask>"};
    roberta.lm_head        = {LmObjective::Masked, "lm_head.dense", "gelu", "lm_head.layer_norm", "lm_head.bias", nullptr, "<mask>"};
    // (RobertaLMHead applies gelu whatever hidden_act says.)

    // GPT-2: modeling_gpt2.py (GPT2Model, GPT2LMHeadModel): Conv1D weights, one fused c_attn,
    // pre-LN blocks and ln_f, causal attention, learned positions from 0, no token types.
    FamilySpec gpt2;
    gpt2.model_type         = "gpt2";
    gpt2.display            = "GPT-2";
    gpt2.model_class        = "GPT2Model";
    gpt2.mlm_class          = "GPT2LMHeadModel";
    gpt2.checkpoints        = "GPT2Model or GPT2LMHeadModel";
    gpt2.model_prefix       = "transformer.";
    gpt2.head_prefixes      = {"lm_head."};
    gpt2.buffers            = {};
    gpt2.keys               = {"vocab_size", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "activation_function",
                               "layer_norm_epsilon", nullptr};
    gpt2.eps                = 1e-5;
    gpt2.word               = "wte";
    gpt2.position           = "wpe";
    gpt2.token_type         = nullptr;
    gpt2.embed_norm         = nullptr;
    gpt2.layer_prefix       = "h.";
    gpt2.qkv                = "attn.c_attn";
    gpt2.attn_out           = "attn.c_proj";
    gpt2.attn_norm          = "ln_1";
    gpt2.ffn_in             = "mlp.c_fc";
    gpt2.ffn_out            = "mlp.c_proj";
    gpt2.ffn_norm           = "ln_2";
    gpt2.pooler             = nullptr;
    gpt2.dropout_after_attention_output = true;
    gpt2.norm               = NormPlacement::Pre;
    gpt2.byte_level_bpe     = true;
    gpt2.conv1d             = true;
    gpt2.final_norm         = "ln_f";
    gpt2.layer_buffers      = {"attn.bias", "attn.masked_bias"};
    gpt2.causal             = true;
    gpt2.ffn_null_is_4x     = true;
    gpt2.default_activation = "gelu_new";
    gpt2.frame              = {"<|endoftext|>", nullptr, "<|endoftext|>", {"<|endoftext|>"}};  // no end token; padding is invalid
    gpt2.config_constants   = R"({"initializer_range": 0.02, "scale_attn_weights": true})";
    gpt2.default_positions  = 1024;
    gpt2.fixed_flags        = {{"scale_attn_weights", true}, {"scale_attn_by_inverse_layer_idx", false}};
    gpt2.dropout_keys       = {"attn_pdrop", "embd_pdrop", "resid_pdrop"};
    gpt2.last_id_keys       = {"bos_token_id", "eos_token_id"};
    gpt2.base               = {50257, 1024, 0, -1, 1e-5};
    gpt2.bpe_specials_last  = {"<|endoftext|>"};
    gpt2.lm_head            = {LmObjective::Causal, nullptr, nullptr, nullptr, nullptr};  // ln_f, then wte tied

    // Llama: modeling_llama.py (LlamaModel, LlamaForCausalLM): pre-RMSNorm blocks and a final
    // norm, rotary positions, grouped-query attention, SwiGLU, no biases, causal attention.
    FamilySpec llama;
    llama.model_type         = "llama";
    llama.display            = "Llama";
    llama.model_class        = "LlamaModel";
    llama.mlm_class          = "LlamaForCausalLM";
    llama.checkpoints        = "LlamaModel or LlamaForCausalLM";
    llama.model_prefix       = "model.";
    llama.head_prefixes      = {"lm_head."};
    llama.buffers            = {};
    llama.keys               = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                                "max_position_embeddings", "hidden_act", "rms_norm_eps", nullptr, "num_key_value_heads", "head_dim",
                                "rope_theta"};
    llama.eps                = 1e-6;
    llama.word               = "embed_tokens";
    llama.position           = nullptr;
    llama.token_type         = nullptr;
    llama.embed_norm         = nullptr;
    llama.layer_prefix       = "layers.";
    llama.query              = "self_attn.q_proj";
    llama.key                = "self_attn.k_proj";
    llama.value              = "self_attn.v_proj";
    llama.attn_out           = "self_attn.o_proj";
    llama.attn_norm          = "input_layernorm";
    llama.ffn_in             = "mlp.up_proj";
    llama.ffn_gate           = "mlp.gate_proj";
    llama.ffn_out            = "mlp.down_proj";
    llama.ffn_norm           = "post_attention_layernorm";
    llama.final_norm         = "norm";
    llama.layer_buffers      = {"self_attn.rotary_emb.inv_freq"};  // in checkpoints of older transformers
    llama.pooler             = nullptr;
    llama.norm               = NormPlacement::Pre;
    llama.rms_norm           = true;
    llama.rotary             = true;
    llama.qkv_bias           = false;
    llama.dense_bias         = false;
    llama.causal             = true;
    llama.default_activation = "silu";
    llama.byte_level_bpe     = true;
    llama.frame_from_tokenizer_config = true;
    llama.lm_head            = {LmObjective::Causal, nullptr, nullptr, nullptr, nullptr, "lm_head", nullptr};
    llama.default_positions  = 2048;  // LlamaConfig's
    llama.config_constants   = R"({"attention_bias": false, "attention_dropout": 0.0, "initializer_range": 0.02, "mlp_bias": false,
                                  "rope_scaling": null})";
    llama.base               = {32000, 2048, 0, -1, 1e-6};
    llama.frame              = {"<|begin_of_text|>", nullptr, "<|end_of_text|>", {"<|begin_of_text|>", "<|end_of_text|>"}};  // Llama 3's

    // Mistral: modeling_mistral.py, Llama's layout with a sliding window (exact up to it).
    FamilySpec mistral = llama;
    mistral.model_type       = "mistral";
    mistral.display          = "Mistral";
    mistral.model_class      = "MistralModel";
    mistral.mlm_class        = "MistralForCausalLM";
    mistral.checkpoints      = "MistralModel or MistralForCausalLM";
    mistral.window_key       = "sliding_window";
    mistral.config_constants = R"({"attention_dropout": 0.0, "initializer_range": 0.02, "sliding_window": null})";
    mistral.default_positions = 4096 * 32;  // MistralConfig's
    mistral.base             = {32000, 32768, 0, -1, 1e-6};
    mistral.frame            = {"<s>", nullptr, "</s>", {"<s>", "</s>", "<unk>"}};

    // Qwen2: modeling_qwen2.py, Llama's layout with q, k and v biases; its sliding window only
    // when use_sliding_window says so.
    FamilySpec qwen2 = llama;
    qwen2.model_type       = "qwen2";
    qwen2.display          = "Qwen2";
    qwen2.model_class      = "Qwen2Model";
    qwen2.mlm_class        = "Qwen2ForCausalLM";
    qwen2.checkpoints      = "Qwen2Model or Qwen2ForCausalLM";
    qwen2.qkv_bias         = true;
    qwen2.window_key       = "sliding_window";
    qwen2.window_switch    = "use_sliding_window";
    qwen2.config_constants = R"({"attention_dropout": 0.0, "initializer_range": 0.02, "use_sliding_window": false})";
    qwen2.default_positions = 32768;  // Qwen2Config's (and Qwen3Config's)
    qwen2.base             = {151936, 32768, 0, -1, 1e-6};
    qwen2.frame            = {nullptr, nullptr, "<|endoftext|>", {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}};  // no bos

    // Qwen3: modeling_qwen3.py, Qwen2's layout without biases and with an RMSNorm over head_dim
    // on each head's q and k before the rotation.
    FamilySpec qwen3 = qwen2;
    qwen3.model_type  = "qwen3";
    qwen3.display     = "Qwen3";
    qwen3.model_class = "Qwen3Model";
    qwen3.mlm_class   = "Qwen3ForCausalLM";
    qwen3.checkpoints = "Qwen3Model or Qwen3ForCausalLM";
    qwen3.qkv_bias    = false;
    qwen3.q_norm      = "self_attn.q_norm";
    qwen3.k_norm      = "self_attn.k_norm";

    std::vector<FamilySpec> table = {bert, distilbert, roberta, gpt2, llama, mistral, qwen2, qwen3};  // BERT first: Family{}
    for (size_t i = 0; i < table.size(); ++i) table[i].family = Family{int(i)};
    return table;
  }();
  return rows;
}
// clang-format on

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const FamilySpec& family_spec(Family f) {
  CTXSIM_CHECK(f.row >= 0 && size_t(f.row) < families().size(), "family_spec: a family without a table row");
  return families()[size_t(f.row)];
}

Family family_named(const std::string& type) {
  const FamilySpec* f = family_by_model_type(type);
  CTXSIM_CHECK(f != nullptr, "family_named: no row has model_type " + type);
  return f->family;
}

std::vector<const FamilySpec*> all_families() {
  std::vector<const FamilySpec*> out;
  for (const auto& spec : families()) out.push_back(&spec);
  return out;
}

const FamilySpec* family_by_model_type(const std::string& type) {
  for (const auto& spec : families())
    if (type == spec.model_type) return &spec;
  return nullptr;
}

std::string supported_model_types() {
  std::string s;
  for (const auto& spec : families()) s += (s.empty() ? "" : ", ") + std::string(spec.model_type);
  return s;
}

std::string lm_model_types() {
  std::string s;
  for (const auto& spec : families())
    if (spec.lm_head.objective != LmObjective::None) s += (s.empty() ? "" : ", ") + std::string(spec.model_type);
  return s;
}

Family parse_family(const std::string& name, const std::string& where) {
  if (const FamilySpec* f = family_by_model_type(name)) return f->family;
  throw Error(where, "'" + name + "' is not a model family ctxsim reads", "use one of " + supported_model_types());
}

std::string canonical_tensor_name(const FamilySpec& f, const std::string& key) {
  std::string k = starts_with(key, f.model_prefix) ? key.substr(std::string(f.model_prefix).size()) : key;
  for (const auto& head : f.head_prefixes)
    if (starts_with(k, head)) return "";
  for (const auto& buffer : f.buffers)
    if (k == buffer) return "";
  // A per-layer buffer: <layer_prefix>N.<name> (GPT-2's causal-mask attn.bias).
  if (!f.layer_buffers.empty() && starts_with(k, f.layer_prefix)) {
    const size_t dot = k.find('.', std::string(f.layer_prefix).size());
    if (dot != std::string::npos)
      for (const auto& buffer : f.layer_buffers)
        if (k.compare(dot + 1, std::string::npos, buffer) == 0) return "";
  }
  return legacy_norm_name(k);
}

std::string legacy_norm_name(const std::string& k) {
  if (ends_with(k, "LayerNorm.gamma")) return k.substr(0, k.size() - 5) + "weight";
  if (ends_with(k, "LayerNorm.beta")) return k.substr(0, k.size() - 4) + "bias";
  return k;
}

}  // namespace ctxsim
