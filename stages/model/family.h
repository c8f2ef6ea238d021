// Model families as tables, not forks: for each family ctxsim reads (BERT, DistilBERT, RoBERTa, GPT-2) its
// config.json keys, its checkpoint's tensor names by role, the task heads and buffers a loader
// skips, and what its layers do differently. Everything that loads, writes or names a checkpoint
// reads this one table, so a new family of the same shape is one row (docs/ARCHITECTURE.md: how
// to add a model family). No LibTorch here.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stages/text/frame.h"

namespace ctxsim {

// A family: the index of its row in the table (families() in family.cpp). Family{} is the first
// row, BERT's, the default of a config.json without model_type; any other is named by its
// model_type (family_named), so that a new family is its row and nothing else here.
struct Family {
  int row = 0;
  bool operator==(const Family& o) const { return row == o.row; }
  bool operator!=(const Family& o) const { return row != o.row; }
};

// Where a layer's two LayerNorms sit: after each residual add (post-LN: BERT, DistilBERT,
// RoBERTa), or on each block's input, the residual add after (pre-LN: GPT-2, with a final one).
enum class NormPlacement { Post, Pre };

// What the family's language-model head predicts (SPEC §8): masked positions (the *ForMaskedLM
// classes) or the next token (GPT2LMHeadModel and the decoders after it).
enum class LmObjective { None, Masked, Causal };

// The language-model head of the family's mlm_class by its checkpoint names (full names, outside
// model_prefix), without `.weight` / `.bias`. Its decoder is the word embeddings (tied), plus
// `bias` where the family has one.
struct LmHead {
  LmObjective objective = LmObjective::None;   // None: no head ctxsim evaluates
  const char* transform = nullptr;             // dense [hidden, hidden] with a bias, then an activation; nullptr: none
  const char* transform_activation = nullptr;  // that activation; nullptr: the config's
  const char* transform_norm = nullptr;        // LayerNorm [hidden] after it; nullptr: none
  const char* bias = nullptr;                  // the decoder's bias [vocab]; nullptr: none
  const char* decoder = nullptr;               // its own decoder [vocab, hidden] when config.json's tie_word_embeddings is false
  const char* mask_token = nullptr;            // a masked position's input ("[MASK]", "<mask>"); nullptr: causal
};

// The config.json keys of one family; nullptr: the family has no such key.
struct ConfigKeys {
  const char* vocab;       // vocab_size
  const char* hidden;      // hidden_size | dim
  const char* layers;      // num_hidden_layers | n_layers
  const char* heads;       // num_attention_heads | n_heads
  const char* ffn;         // intermediate_size | hidden_dim
  const char* positions;   // max_position_embeddings (optional, 512)
  const char* activation;  // hidden_act | activation
  const char* eps;         // layer_norm_eps; nullptr: fixed at FamilySpec::eps
  const char* type_vocab;  // type_vocab_size; nullptr: no token-type embeddings
  // The Llama lineage's (nullptr: the family has no such key).
  const char* kv_heads = nullptr;    // num_key_value_heads (grouped-query attention; default: the heads)
  const char* head_dim = nullptr;    // head_dim (default: hidden / heads)
  const char* rope_theta = nullptr;  // rope_theta (default 10000)
};

// One family, a row of families() in family.cpp whose fields are set by name. Tensor names are
// the bare model's (BertModel, DistilBertModel), without the `.weight` / `.bias` suffix;
// per-layer names follow `layer_prefix` + N + ".".
struct FamilySpec {
  Family family = {};                      // its row (set by the table)
  const char* model_type = nullptr;        // config.json "model_type"
  const char* display = nullptr;           // "BERT"
  const char* model_class = nullptr;       // the bare model's Hugging Face class: "BertModel"
  const char* mlm_class = nullptr;         // the masked-LM class: "BertForMaskedLM"
  const char* checkpoints = nullptr;       // what loads, for the fix of an incomplete checkpoint
  const char* model_prefix = nullptr;      // the encoder's prefix inside task-head checkpoints: "bert."
  std::vector<std::string> head_prefixes;  // task heads skipped on purpose: "cls."
  std::vector<std::string> buffers;        // non-weight entries skipped: "embeddings.position_ids"
  ConfigKeys keys = {};
  double eps = 1e-12;  // LayerNorm epsilon when keys.eps is nullptr (and its default)
  // Embeddings.
  const char* word = nullptr;        // [vocab, hidden]
  const char* position = nullptr;    // [max_positions, hidden]
  const char* token_type = nullptr;  // [type_vocab, hidden]; nullptr: none (row 0 is added for every token)
  const char* embed_norm = nullptr;  // LayerNorm [hidden]
  // One layer.
  const char* layer_prefix = nullptr;  // "encoder.layer."
  const char* query = nullptr;         // [heads·d, hidden], key and value [kv_heads·d, hidden]: HF Linear ([out, in])
  const char* key = nullptr;
  const char* value = nullptr;
  const char* attn_out = nullptr;   // W_O
  const char* attn_norm = nullptr;  // LayerNorm after the attention block
  const char* ffn_in = nullptr;     // [ffn, hidden]
  const char* ffn_out = nullptr;    // [hidden, ffn]
  const char* ffn_norm = nullptr;   // LayerNorm after the feed-forward block
  const char* pooler = nullptr;     // [hidden, hidden] in bare-model checkpoints, unused; nullptr: none
  // Training only: BERT drops out W_O's output before the residual add, DistilBERT does not.
  bool dropout_after_attention_output = true;
  NormPlacement norm = NormPlacement::Post;
  // Positions: nullptr, numbered 0, 1, …; else the config key of the padding id p (RoBERTa's
  // pad_token_id, default 1), and a token's position is p + its index among the non-padding
  // tokens (p for padding), as Hugging Face's create_position_ids_from_input_ids.
  const char* pad_key = nullptr;
  // What `init-model` writes: the masked-LM class (its head too) rather than the bare model.
  bool init_writes_mlm = false;
  // Its tokenizer: WordPiece with [CLS] … [SEP] samples, or byte-level BPE (SPEC §7).
  bool byte_level_bpe = false;
  // Its frame's begin and pad tokens come from the model's tokenizer_config.json (bos_token,
  // pad_token or else eos_token; SPEC §7), not from `frame` (the Llama lineage: Llama 3's
  // <|begin_of_text|>, SmolLM2's <|im_start|>, none for Qwen).
  bool frame_from_tokenizer_config = false;
  // GPT-2's layout: one fused projection [W_q | W_k | W_v] (`qkv`; query, key and value are then
  // nullptr), weights stored as Conv1D ([in, out], the transpose of a Linear), a final LayerNorm
  // after the last layer, per-layer buffers skipped (names within a layer), causal attention, and
  // an intermediate size that config.json may leave null (then 4 x hidden).
  const char* qkv = nullptr;
  bool conv1d = false;
  const char* final_norm = nullptr;
  std::vector<std::string> layer_buffers = {};
  bool causal = false;
  bool ffn_null_is_4x = false;
  const char* default_activation = "gelu";  // when config.json names none (GPT2Config: gelu_new)
  // The Llama lineage's layer (SPEC §7): RMSNorm (a weight, no bias) where the others have
  // LayerNorm; rotary positions in Hugging Face's rotate_half layout instead of a position table;
  // grouped-query attention (keys.kv_heads); a gated feed-forward down(act(gate(x)) * up(x)) with
  // `ffn_gate` the gate and ffn_in the up projection; and which projections carry biases.
  bool rms_norm = false;
  bool rotary = false;
  const char* ffn_gate = nullptr;
  bool qkv_bias = true;  // q, k, v (Qwen2 yes, Llama no)
  // Qwen3's RMSNorm over head_dim on each head's q and k, before the rotation: [head_dim] each.
  const char* q_norm = nullptr;
  const char* k_norm = nullptr;
  // A sliding-window attention's config key (Mistral's sliding_window), and the key that switches
  // it on where one must (Qwen2's use_sliding_window); ctxsim is exact up to the window.
  const char* window_key = nullptr;
  const char* window_switch = nullptr;
  bool dense_bias = true;  // W_O and the feed-forward projections
  // Its language-model head: what pretrain, prune and init-model --mlm train, evaluate or write.
  LmHead lm_head = {};
  // What init-model writes into config.json besides the sizes (keys above): the constant keys of
  // transformers' config class as JSON text, the dropout keys (set to --dropout), and keys that
  // hold the last token id (GPT-2's bos and eos: <|endoftext|>, appended last).
  const char* config_constants = "{}";
  // config.json's values as transformers' config class defaults them when the file leaves them
  // out: the positions (BertConfig 512, GPT2Config's n_positions 1024, LlamaConfig 2048, …), and
  // boolean keys ctxsim computes only at one value (GPT-2's scale_attn_weights true,
  // scale_attn_by_inverse_layer_idx false): the other value is refused by name.
  int64_t default_positions = 512;
  std::vector<std::pair<const char*, bool>> fixed_flags = {};
  std::vector<const char*> dropout_keys = {};
  std::vector<const char*> last_id_keys = {};
  // The special tokens init-model adds to byte-level BPE files that lack them: before the files'
  // tokens (RoBERTa's <s> <pad> </s> <unk>, so that pad_token_id 1 is <pad>) and after them.
  std::vector<const char*> bpe_specials_first = {};
  std::vector<const char*> bpe_specials_last = {};
  // The family's base model (bert-base, roberta-base, gpt2), which every preset starts from.
  struct Base {
    int64_t vocab = 30522, positions = 512, type_vocab = 2, pad_position = -1;
    double eps = 1e-12;
  } base = {};
  // Its samples' frame and special tokens (SPEC §7): [CLS] … [SEP] [PAD]… unless the row says.
  FrameTokens frame = wordpiece_frame_tokens();
};

const FamilySpec& family_spec(Family f);
// Every row of the table, in order.
std::vector<const FamilySpec*> all_families();
// The family whose model_type is `type`, or nullptr.
const FamilySpec* family_by_model_type(const std::string& type);
// The family of a model_type the table has (a bug otherwise): family_named("gpt2").
Family family_named(const std::string& type);
// "bert, distilbert": for error messages.
std::string supported_model_types();
// The same for the families with a language-model head.
std::string lm_model_types();
// The family named on a command line (`--family bert`), or an Error naming `where` and the choices.
Family parse_family(const std::string& name, const std::string& where);

// A checkpoint key as the bare model names it: the family's model prefix dropped, legacy
// LayerNorm `gamma`/`beta` renamed to `weight`/`bias`. "" for the keys ctxsim skips on purpose
// (task heads, buffers).
std::string canonical_tensor_name(const FamilySpec& f, const std::string& key);
// A key with the legacy LayerNorm names `gamma`/`beta` as `weight`/`bias` (any other as it is).
std::string legacy_norm_name(const std::string& key);

}  // namespace ctxsim
