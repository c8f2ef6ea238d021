#include "stages/model/family.h"

#include "stages/base/error.h"

namespace ctxsim {
namespace {

// The table. BERT: transformers' modeling_bert.py (BertModel, BertForMaskedLM, BertForPreTraining).
// DistilBERT: modeling_distilbert.py (DistilBertModel, DistilBertForMaskedLM), whose LayerNorms
// are built with eps=1e-12 and whose config.json has no epsilon key.
const std::vector<FamilySpec>& families() {
  static const std::vector<FamilySpec> rows = [] {
    const FamilySpec bert = {Family::Bert,
                             "bert",
                             "BERT",
                             "BertModel",
                             "BertForMaskedLM",
                             "BertModel, BertForMaskedLM or BertForPreTraining",
                             "bert.",
                             {"cls."},
                             {"embeddings.position_ids"},
                             {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                              "max_position_embeddings", "hidden_act", "layer_norm_eps", "type_vocab_size"},
                             1e-12,
                             "embeddings.word_embeddings",
                             "embeddings.position_embeddings",
                             "embeddings.token_type_embeddings",
                             "embeddings.LayerNorm",
                             "encoder.layer.",
                             "attention.self.query",
                             "attention.self.key",
                             "attention.self.value",
                             "attention.output.dense",
                             "attention.output.LayerNorm",
                             "intermediate.dense",
                             "output.dense",
                             "output.LayerNorm",
                             "pooler.dense",
                             true,
                             NormPlacement::Post,
                             nullptr,
                             false,
                             false};
    const FamilySpec distilbert = {
        Family::DistilBert,
        "distilbert",
        "DistilBERT",
        "DistilBertModel",
        "DistilBertForMaskedLM",
        "DistilBertModel or DistilBertForMaskedLM",
        "distilbert.",
        {"vocab_transform.", "vocab_layer_norm.", "vocab_projector."},
        {"embeddings.position_ids"},
        {"vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings", "activation", nullptr, nullptr},
        1e-12,
        "embeddings.word_embeddings",
        "embeddings.position_embeddings",
        nullptr,
        "embeddings.LayerNorm",
        "transformer.layer.",
        "attention.q_lin",
        "attention.k_lin",
        "attention.v_lin",
        "attention.out_lin",
        "sa_layer_norm",
        "ffn.lin1",
        "ffn.lin2",
        "output_layer_norm",
        nullptr,
        false,
        NormPlacement::Post,
        nullptr,
        true,
        false};
    // RoBERTa: modeling_roberta.py (RobertaModel, RobertaForMaskedLM): BERT's layout under
    // "roberta.", one token type, positions after the padding id, GPT-2's byte-level BPE.
    FamilySpec roberta = bert;
    roberta.family = Family::Roberta;
    roberta.model_type = "roberta";
    roberta.display = "RoBERTa";
    roberta.model_class = "RobertaModel";
    roberta.mlm_class = "RobertaForMaskedLM";
    roberta.checkpoints = "RobertaModel or RobertaForMaskedLM";
    roberta.model_prefix = "roberta.";
    roberta.head_prefixes = {"lm_head."};
    roberta.buffers = {"embeddings.position_ids", "embeddings.token_type_ids"};
    roberta.pad_key = "pad_token_id";
    roberta.byte_level_bpe = true;
    roberta.frame = {"<s>", "</s>", "<pad>", {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}};
    // GPT-2: modeling_gpt2.py (GPT2Model, GPT2LMHeadModel): Conv1D weights, one fused c_attn,
    // pre-LN blocks and ln_f, causal attention, learned positions from 0, no token types.
    FamilySpec gpt2 = {
        Family::Gpt2,
        "gpt2",
        "GPT-2",
        "GPT2Model",
        "GPT2LMHeadModel",
        "GPT2Model or GPT2LMHeadModel",
        "transformer.",
        {"lm_head."},
        {},
        {"vocab_size", "n_embd", "n_layer", "n_head", "n_inner", "n_positions", "activation_function", "layer_norm_epsilon", nullptr},
        1e-5,
        "wte",
        "wpe",
        nullptr,
        nullptr,
        "h.",
        nullptr,
        nullptr,
        nullptr,
        "attn.c_proj",
        "ln_1",
        "mlp.c_fc",
        "mlp.c_proj",
        "ln_2",
        nullptr,
        true,
        NormPlacement::Pre,
        nullptr,
        false,
        true,
        "attn.c_attn",
        true,
        "ln_f",
        {"attn.bias", "attn.masked_bias"},
        true,
        true,
        "gelu_new"};
    gpt2.frame = {"<|endoftext|>", nullptr, "<|endoftext|>", {"<|endoftext|>"}};  // no end token; padding is invalid
    return std::vector<FamilySpec>{bert, distilbert, roberta, gpt2};
  }();
  return rows;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const FamilySpec& family_spec(Family f) {
  for (const auto& spec : families())
    if (spec.family == f) return spec;
  CTXSIM_FAIL("family_spec: a family without a table row");
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
  if (ends_with(k, "LayerNorm.gamma"))
    k = k.substr(0, k.size() - 5) + "weight";
  else if (ends_with(k, "LayerNorm.beta"))
    k = k.substr(0, k.size() - 4) + "bias";
  return k;
}

}  // namespace ctxsim
