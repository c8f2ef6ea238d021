// stages/model/family + transformer_layer: the family table (config.json keys, tensor names,
// skipped heads), DistilBERT checkpoints in both Hugging Face layouts, DistilBERT as BERT's layer
// under other names, and the layer's two attention kernels agreeing. The float64 comparison with
// an independent reference is tests/model_reference.py (cli.encoder_reference).
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include "stages/base/error.h"
#include "stages/base/model_folder.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/model/safetensors.h"
#include "stages/model/transformer_layer.h"
#include "stages/text/bpe.h"
#include "stages/text/utf8.h"
#include "test_helpers.h"

#include <nlohmann/json.hpp>

namespace ctxsim {
namespace {

using test::error_of;

std::string small_vocab(const test::TempDir& dir) {
  std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 0; i < 59; ++i) v += "tok" + std::to_string(i) + "\n";
  return dir.write("vocab.txt", v);
}

// The smallest byte-level BPE: one token per byte (GPT-2's spelling), no merges.
std::string small_bpe(const test::TempDir& dir) {
  std::string json = "{";
  for (int b = 0; b < 256; ++b) {
    std::string token;
    utf8::append(token, byte_to_unicode(uint8_t(b)));
    json += (b ? "," : "") + nlohmann::json(token).dump() + ":" + std::to_string(b);
  }
  dir.write("bpe/vocab.json", json + "}");
  dir.write("bpe/merges.txt", "#version: 0.2\n");
  return (dir.path / "bpe").string();
}

ModelConfig tiny(Family family) {
  ModelConfig c = ModelConfig::preset("bert-tiny", family);
  c.hidden_size = 32;
  c.num_heads = 4;
  c.intermediate_size = 48;
  c.num_layers = 3;
  c.max_position_embeddings = 16;
  return c;
}

std::map<std::string, TensorData> file_tensors(const std::string& path) {
  SafetensorsFile f(path);
  std::map<std::string, TensorData> t;
  for (const auto& [name, v] : f.tensors()) t[name] = TensorData{v.dtype, v.shape, std::vector<uint8_t>(v.data, v.data + v.nbytes)};
  return t;
}

// A checkpoint folder from a config.json text and tensors.
std::string write_folder(const test::TempDir& tmp, const std::string& name, const std::string& config_json,
                         const std::map<std::string, TensorData>& tensors) {
  const std::string dir = (tmp.path / name).string();
  std::filesystem::create_directories(dir);
  tmp.write(name + "/config.json", config_json);
  write_safetensors(dir + "/model.safetensors", tensors);
  return dir;
}

const at::Tensor kIds = at::tensor({2, 10, 11, 30, 12, 13, 3, 0, 0, 2, 20, 21, 22, 23, 24, 3}, at::kLong).view({2, 8});
const at::Tensor kValid = at::arange(8).view({1, 8}) < at::tensor({7, 8}, at::kLong).view({2, 1});

TEST(Families, ConfigJsonInEachFamilysKeys) {
  const ModelConfig d = tiny(family_named("distilbert"));
  const std::string json = d.to_json();
  for (const char* key : {"\"dim\": 32", "\"n_layers\": 3", "\"n_heads\": 4", "\"hidden_dim\": 48", "\"activation\": \"gelu\"",
                          "\"model_type\": \"distilbert\"", "\"sinusoidal_pos_embds\": false", "\"DistilBertModel\""})
    EXPECT_HAS(json, key);
  EXPECT_EQ(json.find("hidden_size"), std::string::npos);
  const ModelConfig back = ModelConfig::parse(json, "config.json");
  EXPECT_EQ(back.family, family_named("distilbert"));
  EXPECT_EQ(back.hidden_size, 32);
  EXPECT_EQ(back.num_layers, 3);
  EXPECT_EQ(back.intermediate_size, 48);
  EXPECT_EQ(back.type_vocab_size, 0);
  EXPECT_EQ(back.layer_norm_eps, 1e-12);
  // Without model_type a config.json is BERT's, as before families.
  EXPECT_EQ(ModelConfig::parse(R"({"vocab_size": 9, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "intermediate_size": 4})",
                               "c.json")
                .family,
            family_named("bert"));
}

// The Llama lineage's presets carry its shape's own keys, and config.json round-trips them
// (transformers reads the same file: tests/hf_reference.py).
TEST(Families, LlamaPresetsRoundTripThroughConfigJson) {
  const ModelConfig c = ModelConfig::preset("llama-3.2-1b", family_named("llama"));
  EXPECT_EQ(c.num_layers, 16);
  EXPECT_EQ(c.kv_heads(), 8);
  EXPECT_EQ(c.head_dim(), 64);
  EXPECT_EQ(c.llama3_rope.factor, 32);
  const std::string json = c.to_json();
  EXPECT_HAS(json, "\"rope_type\": \"llama3\"");
  EXPECT_HAS(json, "\"num_key_value_heads\": 8");
  const ModelConfig back = ModelConfig::parse(json, "config.json");
  EXPECT_EQ(back.family, family_named("llama"));
  EXPECT_EQ(back.kv_heads(), 8);
  EXPECT_EQ(back.head_dim(), 64);
  EXPECT_EQ(back.rope_theta, 500000);
  EXPECT_EQ(back.llama3_rope.factor, 32);
  EXPECT_EQ(back.llama3_rope.original_max_positions, 8192);
  // A sliding window read is written back (Mistral's; Qwen2's with its switch on).
  for (const char* type : {"mistral", "qwen2"}) {
    ModelConfig w = ModelConfig::preset("bert-tiny", family_named(type));
    w.sliding_window = 32;
    EXPECT_EQ(ModelConfig::parse(w.to_json(), "w.json").sliding_window, 32) << type;
  }
  const ModelConfig q = ModelConfig::parse(ModelConfig::preset("qwen3-0.6b", family_named("qwen3")).to_json(), "q.json");
  EXPECT_EQ(q.head_dim(), 128);  // not hidden / heads = 64
  EXPECT_EQ(q.rope_theta, 1e6);
  // A rope type ctxsim does not implement, and grouped heads that do not divide the heads.
  EXPECT_HAS(error_of([] {
               ModelConfig::parse(R"({"model_type": "llama", "vocab_size": 9, "hidden_size": 8, "num_hidden_layers": 1,
                                      "num_attention_heads": 2, "intermediate_size": 4, "rope_scaling": {"rope_type": "yarn"}})",
                                  "y.json");
             }),
             "y.json: rope_scaling: rope_type 'yarn' is not implemented");
  EXPECT_HAS(error_of([] {
               ModelConfig::parse(R"({"model_type": "llama", "vocab_size": 9, "hidden_size": 12, "num_hidden_layers": 1,
                                      "num_attention_heads": 3, "num_key_value_heads": 2, "intermediate_size": 4})",
                                  "g.json");
             }),
             "g.json: num_key_value_heads: 2 key/value heads do not divide the 3 attention heads");
}

TEST(Families, ConfigErrorsNameTheFileTheFamilysKeyAndTheFamilies) {
  try {
    ModelConfig::parse(R"({"model_type": "mamba", "hidden_size": 768})", "m/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(),
               "m/config.json: model_type: 'mamba' is not a model family ctxsim reads (it reads bert, distilbert, roberta, gpt2, llama, "
               "mistral, qwen2, qwen3)");
    EXPECT_HAS(e.what(), "; fix: ");
  }
  try {
    ModelConfig::parse(R"({"model_type": "distilbert", "vocab_size": 9, "n_layers": 1, "n_heads": 2, "hidden_dim": 4})", "c.json");
    FAIL();
  } catch (const Error& e) { EXPECT_HAS(e.what(), "c.json: dim: missing"); }
  try {
    ModelConfig::parse(R"({"model_type": "distilbert", "vocab_size": 9, "dim": 9, "n_layers": 1, "n_heads": 2, "hidden_dim": 4})",
                       "c.json");
    FAIL();
  } catch (const Error& e) { EXPECT_HAS(e.what(), "c.json: n_heads: dim 9 is not divisible by 2 heads"); }
  EXPECT_THROW(parse_family("mamba", "--family"), Error);
  EXPECT_EQ(parse_family("distilbert", "--family"), family_named("distilbert"));
}

// Keys config.json may leave out take transformers' class defaults (GPT2Config's n_positions is
// 1024), and a flag ctxsim computes at one value only is refused at the other, by name.
TEST(Families, ConfigDefaultsAndFixedFlagsAreTheConfigClasses) {
  const std::string gpt2 = R"({"model_type": "gpt2", "vocab_size": 9, "n_embd": 8, "n_layer": 1, "n_head": 2)";
  EXPECT_EQ(ModelConfig::parse(gpt2 + "}", "g.json").max_position_embeddings, 1024);
  EXPECT_EQ(ModelConfig::parse(gpt2 + R"(, "n_positions": 64, "scale_attn_weights": true})", "g.json").max_position_embeddings, 64);
  EXPECT_EQ(ModelConfig::parse(R"({"model_type": "bert", "vocab_size": 9, "hidden_size": 8, "num_hidden_layers": 1,
                                   "num_attention_heads": 2, "intermediate_size": 4})",
                               "b.json")
                .max_position_embeddings,
            512);
  try {
    ModelConfig::parse(gpt2 + R"(, "scale_attn_by_inverse_layer_idx": true})", "g.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(),
               "g.json: scale_attn_by_inverse_layer_idx: is true, and ctxsim computes GPT-2 with scale_attn_by_inverse_layer_idx false");
  }
  try {
    ModelConfig::parse(gpt2 + R"(, "scale_attn_weights": false})", "g.json");
    FAIL();
  } catch (const Error& e) { EXPECT_HAS(e.what(), "g.json: scale_attn_weights: is false"); }
}

TEST(Families, TensorNamesAndSkippedKeys) {
  const FamilySpec& d = family_spec(family_named("distilbert"));
  const FamilySpec& b = family_spec(family_named("bert"));
  EXPECT_EQ(canonical_tensor_name(d, "distilbert.transformer.layer.0.attention.q_lin.weight"),
            "transformer.layer.0.attention.q_lin.weight");
  EXPECT_EQ(canonical_tensor_name(d, "transformer.layer.0.ffn.lin1.bias"), "transformer.layer.0.ffn.lin1.bias");
  EXPECT_EQ(canonical_tensor_name(d, "vocab_projector.bias"), "");
  EXPECT_EQ(canonical_tensor_name(d, "vocab_layer_norm.weight"), "");
  EXPECT_EQ(canonical_tensor_name(d, "distilbert.embeddings.position_ids"), "");
  EXPECT_EQ(canonical_tensor_name(b, "bert.encoder.layer.0.output.LayerNorm.gamma"), "encoder.layer.0.output.LayerNorm.weight");
  EXPECT_EQ(canonical_tensor_name(b, "cls.predictions.bias"), "");
  EXPECT_EQ(encoder_tensor_shapes(tiny(family_named("distilbert"))).size(), 4u + 16u * 3);  // no token types
  EXPECT_EQ(encoder_tensor_shapes(tiny(family_named("bert"))).size(), 5u + 16u * 3);
  EXPECT_TRUE(pooler_shapes(tiny(family_named("distilbert"))).empty());
}

// A random model starts as transformers' _init_weights: every norm's weight 1 (LayerNorm or the
// Llama lineage's RMSNorms, whatever their names: input_layernorm, norm, q_norm), every other
// weight drawn, every bias 0.
TEST(Families, RandomWeightsStartNormsAtOne) {
  for (const FamilySpec* f : all_families()) {
    if (f->lm_head.objective == LmObjective::None) continue;
    const std::map<std::string, TensorData> weights = random_lm_weights(tiny(f->family), 3);
    int norms = 0;
    for (const auto& [name, t] : weights) {
      const float* v = reinterpret_cast<const float*>(t.bytes.data());
      const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
      if (bias) continue;
      if (t.shape.size() == 1) {  // a norm's weight (the only vectors besides biases)
        EXPECT_TRUE(v[0] == 1.0f && v[t.bytes.size() / 4 - 1] == 1.0f) << f->model_type << " " << name;
        ++norms;
      } else {
        EXPECT_NE(v[0], 1.0f) << f->model_type << " " << name;
      }
    }
    // One before or after each of the two blocks of each layer, and one at an end at least.
    EXPECT_GE(norms, 2 * 3 + 1) << f->model_type;
    if (f->q_norm) { EXPECT_GE(norms, 4 * 3 + 1) << f->model_type; }
  }
}

TEST(DistilBert, RandomCheckpointIsDistilBertForMaskedLM) {
  test::TempDir tmp;
  const std::string dir = (tmp.path / "d").string();
  write_random_checkpoint(tiny(family_named("distilbert")), 5, small_vocab(tmp), dir);
  const auto t = file_tensors(dir + "/model.safetensors");
  EXPECT_EQ(t.size(), 4u + 16u * 3 + 5);
  for (const char* name : {"distilbert.embeddings.word_embeddings.weight", "distilbert.transformer.layer.2.attention.out_lin.bias",
                           "distilbert.transformer.layer.0.sa_layer_norm.weight", "distilbert.transformer.layer.1.ffn.lin2.weight",
                           "vocab_transform.weight", "vocab_layer_norm.bias", "vocab_projector.bias"})
    EXPECT_EQ(t.count(name), 1u) << name;
  EXPECT_EQ(t.count("vocab_projector.weight"), 0u);  // tied to the word embeddings
  EXPECT_EQ(t.at("distilbert.transformer.layer.1.ffn.lin1.weight").shape, (std::vector<int64_t>{48, 32}));
  // LayerNorm weights start at 1 under DistilBERT's lower-case names too.
  const auto& norm = t.at("distilbert.transformer.layer.0.output_layer_norm.weight");
  EXPECT_EQ(reinterpret_cast<const float*>(norm.bytes.data())[5], 1.0f);
  LoadReport r;
  const TransformerEncoder m = TransformerEncoder::load(dir, at::kFloat, &r);
  EXPECT_EQ(m.config().family, family_named("distilbert"));
  EXPECT_EQ(r.encoder_tensors, 4 + 16 * 3);
  EXPECT_EQ(r.ignored.size(), 5u);
  EXPECT_TRUE(r.unexpected.empty());
}

TEST(DistilBert, BareAndMaskedLmLayoutsLoadTheSameModel) {
  test::TempDir tmp;
  const std::string dir = (tmp.path / "mlm").string();
  const ModelConfig c = tiny(family_named("distilbert"));
  write_random_checkpoint(c, 6, small_vocab(tmp), dir);
  std::map<std::string, TensorData> bare;
  for (auto& [name, t] : file_tensors(dir + "/model.safetensors"))
    if (name.rfind("distilbert.", 0) == 0) bare[name.substr(11)] = t;
  ModelConfig loaded = ModelConfig::load(dir + "/config.json");
  const std::string bare_dir = write_folder(tmp, "bare", loaded.to_json(), bare);
  const TransformerEncoder a = TransformerEncoder::load(dir, at::kDouble), b = TransformerEncoder::load(bare_dir, at::kDouble);
  EXPECT_TRUE(at::equal(a.forward(kIds, kValid), b.forward(kIds, kValid)));
  // An incomplete one names the family and its checkpoint classes.
  bare.erase("transformer.layer.1.attention.k_lin.bias");
  const std::string broken = write_folder(tmp, "broken", loaded.to_json(), bare);
  try {
    TransformerEncoder::load(broken, at::kFloat);
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "missing encoder tensors: transformer.layer.1.attention.k_lin.bias");
    EXPECT_HAS(e.what(), "use a complete DistilBERT checkpoint (DistilBertModel or DistilBertForMaskedLM)");
  }
}

// init-model --dtype bfloat16 writes BF16 (as large models ship): each value rounded to nearest,
// ties to even; the model loads and its forward is the float32 one's within bf16's precision.
TEST(Checkpoints, Bfloat16RoundsToNearestEven) {
  TensorData t;
  t.shape = {4};
  const uint32_t bits[4] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0xbf80ffffu};  // 1, a tie to 1, a tie to 1.015625, below -1.0078
  t.bytes.resize(16);
  std::memcpy(t.bytes.data(), bits, 16);
  const TensorData b = in_dtype({{"w", t}}, DType::BF16).at("w");
  ASSERT_EQ(b.dtype, DType::BF16);
  uint16_t got[4];
  std::memcpy(got, b.bytes.data(), 8);
  EXPECT_EQ(got[0], 0x3f80);
  EXPECT_EQ(got[1], 0x3f80);
  EXPECT_EQ(got[2], 0x3f82);
  EXPECT_EQ(got[3], 0xbf81);
  test::TempDir tmp;
  const ModelConfig c = tiny(family_named("bert"));
  write_random_checkpoint(c, 9, small_vocab(tmp), (tmp.path / "f32").string());
  write_random_checkpoint(c, 9, small_vocab(tmp), (tmp.path / "bf16").string(), DType::BF16);
  EXPECT_EQ(file_tensors((tmp.path / "bf16/model.safetensors").string()).at("embeddings.word_embeddings.weight").dtype, DType::BF16);
  const at::Tensor a = TransformerEncoder::load((tmp.path / "f32").string(), at::kFloat).forward(kIds, kValid);
  const at::Tensor z = TransformerEncoder::load((tmp.path / "bf16").string(), at::kFloat).forward(kIds, kValid);
  EXPECT_LT((a - z).abs().max().item<double>(), 0.05 * a.abs().max().item<double>());
  EXPECT_FALSE(at::equal(a, z));
}

// A checkpoint in shards (model.safetensors.index.json, as save_pretrained writes a large model)
// loads as the one file does; its digest is its own; an index that does not match its shards is
// one error naming the index and the tensor or shard.
TEST(Checkpoints, ShardsLoadAsOneFile) {
  test::TempDir tmp;
  const std::string dir = (tmp.path / "one").string();
  const ModelConfig c = tiny(family_named("bert"));
  write_random_checkpoint(c, 7, small_vocab(tmp), dir);
  std::map<std::string, TensorData> parts[2];
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  int k = 0;
  for (auto& [name, t] : file_tensors(dir + "/model.safetensors")) {
    const std::string shard = "model-0000" + std::to_string(k % 2 + 1) + "-of-00002.safetensors";
    parts[k % 2][name] = t;
    index["weight_map"][name] = shard;
    ++k;
  }
  const std::string sharded = (tmp.path / "sharded").string();
  std::filesystem::create_directories(sharded);
  for (const char* f : {"config.json", "vocab.txt"}) std::filesystem::copy_file(dir + "/" + f, sharded + "/" + f);
  write_safetensors(sharded + "/model-00001-of-00002.safetensors", parts[0]);
  write_safetensors(sharded + "/model-00002-of-00002.safetensors", parts[1]);
  tmp.write("sharded/model.safetensors.index.json", index.dump());
  const ModelFolder folder(sharded);
  EXPECT_TRUE(folder.sharded());
  EXPECT_EQ(folder.weight_files().size(), 2u);
  const TransformerEncoder a = TransformerEncoder::load(dir, at::kDouble), b = TransformerEncoder::load(sharded, at::kDouble);
  EXPECT_TRUE(at::equal(a.forward(kIds, kValid), b.forward(kIds, kValid)));
  EXPECT_NE(folder.weights_sha256(), ModelFolder(dir).weights_sha256());
  // The index names the other shard for a tensor; then a shard that is not there.
  const std::string moved = index["weight_map"].begin().key();
  nlohmann::json wrong = index;
  wrong["weight_map"][moved] = "model-00002-of-00002.safetensors";
  tmp.write("sharded/model.safetensors.index.json", wrong.dump());
  EXPECT_HAS(error_of([&] { TransformerEncoder::load(sharded, at::kFloat); }),
             "model.safetensors.index.json: weight_map: names model-00002-of-00002.safetensors for tensor '" + moved + "'");
  wrong["weight_map"][moved] = "model-00003-of-00002.safetensors";
  tmp.write("sharded/model.safetensors.index.json", wrong.dump());
  EXPECT_HAS(error_of([&] { TransformerEncoder::load(sharded, at::kFloat); }),
             "names the shard model-00003-of-00002.safetensors, which is not in");
  wrong["weight_map"][moved] = "../one/model.safetensors";
  tmp.write("sharded/model.safetensors.index.json", wrong.dump());
  EXPECT_HAS(error_of([&] { TransformerEncoder::load(sharded, at::kFloat); }), "is not a file name in the folder");
  // One tensor in both shards.
  parts[1][moved] = parts[0].count(moved) ? parts[0][moved] : parts[1][moved];
  parts[0][moved] = parts[1][moved];
  write_safetensors(sharded + "/model-00001-of-00002.safetensors", parts[0]);
  write_safetensors(sharded + "/model-00002-of-00002.safetensors", parts[1]);
  tmp.write("sharded/model.safetensors.index.json", index.dump());
  EXPECT_HAS(error_of([&] { TransformerEncoder::load(sharded, at::kFloat); }), "tensor '" + moved + "' is in two shards");
}

// DistilBERT is BERT's post-LN layer under other names, without token types: the same weights
// under BERT's names (token-type row 0 zero) give bit-identical outputs, layer by layer.
TEST(DistilBert, IsBertsLayerUnderOtherNames) {
  test::TempDir tmp;
  const std::string vocab = small_vocab(tmp);
  write_random_checkpoint(tiny(family_named("distilbert")), 7, vocab, (tmp.path / "d").string());
  const ModelConfig dc = ModelConfig::load((tmp.path / "d/config.json").string());
  ModelConfig bc = dc;
  bc.family = family_named("bert");
  bc.type_vocab_size = 2;
  const FamilySpec& df = family_spec(family_named("distilbert"));
  const FamilySpec& bf = family_spec(family_named("bert"));
  // The role of each DistilBERT name, then BERT's name for that role.
  std::map<std::string, std::string> rename = {{df.word, bf.word}, {df.position, bf.position}, {df.embed_norm, bf.embed_norm}};
  for (int l = 0; l < 3; ++l) {
    const std::string dp = df.layer_prefix + std::to_string(l) + ".", bp = bf.layer_prefix + std::to_string(l) + ".";
    const std::pair<const char*, const char*> roles[] = {
        {df.query, bf.query},         {df.key, bf.key},       {df.value, bf.value},     {df.attn_out, bf.attn_out},
        {df.attn_norm, bf.attn_norm}, {df.ffn_in, bf.ffn_in}, {df.ffn_out, bf.ffn_out}, {df.ffn_norm, bf.ffn_norm}};
    for (const auto& [d, b] : roles) rename[dp + d] = bp + b;
  }
  std::map<std::string, TensorData> bert;
  for (auto& [name, t] : file_tensors((tmp.path / "d/model.safetensors").string())) {
    if (name.rfind("distilbert.", 0) != 0) continue;
    const std::string bare = name.substr(11), base = bare.substr(0, bare.rfind('.'));
    bert[rename.at(base) + bare.substr(bare.rfind('.'))] = t;
  }
  bert["embeddings.token_type_embeddings.weight"] = TensorData{DType::F32, {2, 32}, std::vector<uint8_t>(2 * 32 * 4, 0)};
  const std::string bert_dir = write_folder(tmp, "b", bc.to_json(), bert);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const TransformerEncoder d = TransformerEncoder::load((tmp.path / "d").string(), dtype), b = TransformerEncoder::load(bert_dir, dtype);
    std::vector<at::Tensor> seen;
    d.forward(kIds, kValid, {}, [&](const LayerOutputs& o) {
      seen.push_back(o.context.clone());
      seen.push_back(o.attention.clone());
    });
    size_t i = 0;
    b.forward(kIds, kValid, {}, [&](const LayerOutputs& o) {
      EXPECT_TRUE(at::equal(o.context, seen[i++])) << "context of layer " << o.layer;
      EXPECT_TRUE(at::equal(o.attention, seen[i++])) << "attention of layer " << o.layer;
    });
    EXPECT_EQ(i, seen.size());
    EXPECT_TRUE(at::equal(d.forward(kIds, kValid), b.forward(kIds, kValid)));
  }
}

// RoBERTa is BERT's layer under "roberta.", with one token type and positions after the padding
// id: the same weights under BERT's names, BERT's position table being RoBERTa's from row
// pad + 1, give bit-identical outputs on ids without the padding id.
TEST(Roberta, IsBertsLayerWithPositionsAfterThePaddingId) {
  test::TempDir tmp;
  ModelConfig rc = tiny(family_named("roberta"));
  rc.max_position_embeddings = 16 + 2;
  EXPECT_EQ(rc.pad_position, 1);
  EXPECT_EQ(rc.type_vocab_size, 1);
  write_random_checkpoint(rc, 9, small_bpe(tmp), (tmp.path / "r").string());
  const ModelConfig loaded = ModelConfig::load((tmp.path / "r/config.json").string());
  EXPECT_EQ(loaded.family, family_named("roberta"));
  EXPECT_EQ(loaded.vocab_size, 256 + 5);  // <s> <pad> </s> <unk>, the bytes, <mask>
  const auto files = BpeModel::load((tmp.path / "r/vocab.json").string(), (tmp.path / "r/merges.txt").string());
  EXPECT_EQ(files->vocab.id("<pad>"), 1);
  EXPECT_EQ(files->vocab.id("<mask>"), 260);
  EXPECT_EQ(loaded.pad_position, 1);
  EXPECT_EQ(loaded.max_tokens(), 16);
  EXPECT_HAS(loaded.positions_problem(17), "17 tokens per sample exceed the 16 positions the model gives tokens");
  EXPECT_TRUE(loaded.positions_problem(16).empty());
  std::map<std::string, TensorData> bert = file_tensors((tmp.path / "r/model.safetensors").string());
  EXPECT_EQ(bert.count("encoder.layer.0.attention.self.query.weight"), 1u);  // RobertaModel: the bare names
  TensorData& pos = bert.at("embeddings.position_embeddings.weight");
  pos.shape = {16, 32};
  pos.bytes.erase(pos.bytes.begin(), pos.bytes.begin() + 2 * 32 * 4);  // rows 2 … 17 become 0 … 15
  ModelConfig bc = loaded;
  bc.family = family_named("bert");
  bc.pad_position = -1;
  bc.max_position_embeddings = 16;
  const std::string bert_dir = write_folder(tmp, "b", bc.to_json(), bert);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const TransformerEncoder r = TransformerEncoder::load((tmp.path / "r").string(), dtype);
    const TransformerEncoder b = TransformerEncoder::load(bert_dir, dtype);
    EXPECT_TRUE(at::equal(r.forward(kIds, kValid), b.forward(kIds, kValid)));  // kIds holds no 1
  }
  // With the padding id in a row: its tokens take position 1, the others count on without them.
  const TransformerEncoder r = TransformerEncoder::load((tmp.path / "r").string(), at::kDouble);
  const at::Tensor ids = at::tensor({5, 6, 1, 7}, at::kLong).view({1, 4});
  const at::Tensor shifted = at::tensor({5, 6, 7, 9}, at::kLong).view({1, 4});  // 9: any id, its position checked apart
  const at::Tensor all = at::ones({1, 4}, at::kBool);
  std::vector<at::Tensor> a, c;
  r.forward(ids, all, {}, [&](const LayerOutputs& o) { a.push_back(o.input.clone()); });
  r.forward(shifted, all, {}, [&](const LayerOutputs& o) { c.push_back(o.input.clone()); });
  // Layer 0's input is the embedding: tokens 0, 1 at positions 2, 3 in both; token 3 (id 7) at 4
  // after the padding id, and at 4 too when it is the third token without one.
  EXPECT_TRUE(at::equal(a[0][0][0], c[0][0][0]));
  EXPECT_TRUE(at::equal(a[0][0][1], c[0][0][1]));
  EXPECT_TRUE(at::equal(a[0][0][3], c[0][0][2]));
  const FamilySpec& f = family_spec(family_named("roberta"));
  EXPECT_EQ(canonical_tensor_name(f, "roberta.encoder.layer.0.output.dense.bias"), "encoder.layer.0.output.dense.bias");
  EXPECT_EQ(canonical_tensor_name(f, "lm_head.dense.weight"), "");
  EXPECT_EQ(canonical_tensor_name(f, "roberta.embeddings.token_type_ids"), "");
}

// GPT-2: its names (Conv1D weights, the fused c_attn, per-layer buffers skipped), n_inner null as
// 4 x n_embd, and causal attention: no weight on a later key, so a prefix's context vectors do not
// depend on what follows it. (Its float64 agreement with modeling_gpt2.py: cli.encoder_reference.)
TEST(Gpt2, NamesConfigAndCausalAttention) {
  const FamilySpec& f = family_spec(family_named("gpt2"));
  EXPECT_EQ(canonical_tensor_name(f, "transformer.h.0.attn.c_attn.weight"), "h.0.attn.c_attn.weight");
  EXPECT_EQ(canonical_tensor_name(f, "transformer.h.11.attn.bias"), "");  // the causal-mask buffer
  EXPECT_EQ(canonical_tensor_name(f, "h.3.attn.masked_bias"), "");
  EXPECT_EQ(canonical_tensor_name(f, "h.3.attn.c_proj.bias"), "h.3.attn.c_proj.bias");
  EXPECT_EQ(canonical_tensor_name(f, "lm_head.weight"), "");
  const ModelConfig parsed = ModelConfig::parse(
      R"({"model_type": "gpt2", "vocab_size": 64, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_inner": null, "n_positions": 16})", "c.json");
  EXPECT_EQ(parsed.intermediate_size, 128);
  EXPECT_EQ(parsed.hidden_act, "gelu_new");
  EXPECT_EQ(parsed.layer_norm_eps, 1e-5);
  EXPECT_EQ(encoder_tensor_shapes(parsed).at("h.1.attn.c_attn.weight"), (std::vector<int64_t>{32, 96}));  // Conv1D: [in, out]
  test::TempDir tmp;
  write_random_checkpoint(tiny(family_named("gpt2")), 4, small_bpe(tmp), (tmp.path / "g").string());
  // GPT-2's files gain <|endoftext|> (id 256); a RoBERTa's, its specials (test above).
  EXPECT_EQ(ModelConfig::load((tmp.path / "g/config.json").string()).vocab_size, 257);
  EXPECT_EQ(BpeModel::load((tmp.path / "g/vocab.json").string(), (tmp.path / "g/merges.txt").string())->vocab.id("<|endoftext|>"), 256);
  const TransformerEncoder m = TransformerEncoder::load((tmp.path / "g").string(), at::kDouble);
  const at::Tensor ids = at::tensor({2, 10, 11, 30, 12, 13, 3, 9}, at::kLong).view({1, 8});
  const at::Tensor prefix = ids.slice(1, 0, 5);
  std::vector<at::Tensor> full, part;
  m.forward(ids, at::ones({1, 8}, at::kBool), {}, [&](const LayerOutputs& o) {
    EXPECT_EQ(o.attention.triu(1).abs().max().item<double>(), 0.0) << "layer " << o.layer;
    full.push_back(o.context.slice(2, 0, 5).clone());
  });
  m.forward(prefix, at::ones({1, 5}, at::kBool), {}, [&](const LayerOutputs& o) { part.push_back(o.context.clone()); });
  ASSERT_EQ(full.size(), part.size());
  for (size_t l = 0; l < full.size(); ++l) EXPECT_LT((full[l] - part[l]).abs().max().item<double>(), 1e-12) << "layer " << l;
}

// The inference kernel (per sample, scale and mask folded into the GEMM) and the training kernel
// (whole-batch matmuls under autograd) compute the same layer: an encoder's on 8 tokens, and a
// causal layer's on 300 (blocks of 128, 128 and 44 query rows, whose products the inference
// kernel cuts to the keys each block can see: 128, 256 and 300), a [PAD] key in both.
void expect_kernels_agree(bool causal, int64_t T) {
  at::manual_seed(3);
  const int64_t B = 2, hidden = 32, heads = 4, ffn = 48;
  const auto r = [](std::vector<int64_t> shape, double scale) { return at::randn(shape, at::kDouble) * scale; };
  LayerWeights w{r({3 * hidden, hidden}, 0.3),
                 r({3 * hidden}, 0.1),
                 r({hidden, hidden}, 0.2),
                 r({hidden}, 0.1),
                 1 + r({hidden}, 0.1),
                 r({hidden}, 0.1),
                 r({ffn, hidden}, 0.2),
                 r({ffn}, 0.1),
                 r({hidden, ffn}, 0.2),
                 r({hidden}, 0.1),
                 1 + r({hidden}, 0.1),
                 r({hidden}, 0.1),
                 {},
                 {}};  // no q/k norms
  LayerOptions o;
  o.heads = heads;
  o.causal = causal;
  const at::Tensor x = r({B, T, hidden}, 1.0);
  const at::Tensor valid = at::arange(T).view({1, T}) < at::tensor({T - 1, T}, at::kLong).view({2, 1});
  AttentionTrace fast, plain;
  const LayerMode inference{AttentionKernel::PerSample, nullptr, {}, 0, {}}, training{AttentionKernel::Batched, nullptr, {}, 0, {}};
  const at::Tensor a = feed_forward_block(
      w, attention_block(w, x, key_mask(valid, heads, x.options(), inference.kernel, causal), o, inference, 0, &fast), o, inference, 0);
  const at::Tensor b = feed_forward_block(
      w, attention_block(w, x, key_mask(valid, heads, x.options(), training.kernel, causal), o, training, 0, &plain), o, training, 0);
  const std::string where = causal ? "causal, T " + std::to_string(T) : "T " + std::to_string(T);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-12) << where;
  EXPECT_LT((fast.context - plain.context).abs().max().item<double>(), 1e-12) << where;
  EXPECT_LT((fast.attention - plain.attention).abs().max().item<double>(), 1e-14) << where;
  EXPECT_EQ(fast.attention[0].slice(2, T - 1, T).abs().max().item<double>(), 0.0) << where;  // the [PAD] key of sample 0
  if (causal) {
    EXPECT_EQ(fast.attention.triu(1).abs().max().item<double>(), 0.0) << where;  // no later key
  }
}

TEST(TransformerLayer, PerSampleAndBatchedKernelsAgree) {
  expect_kernels_agree(false, 8);
  expect_kernels_agree(true, 300);
}

// Long contexts: the attention in tiles of query rows gives every map row and context vector the
// whole maps give, bit for bit, in every family's layer (causal or not, rotary, grouped heads),
// for tiles that divide T and tiles that do not (T = 300: blocks of 128, 128 and 44 rows), in
// float32, float64 and bfloat16.
TEST(TransformerLayer, TiledAttentionIsTheWholeMapsBitForBit) {
  for (const char* name : {"bert", "gpt2", "llama"}) {
    ModelConfig c = tiny(family_named(name));
    c.hidden_size = 64;
    c.max_position_embeddings = 320;
    if (std::string(name) == "llama") c.num_kv_heads = 2;
    for (const at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
      at::manual_seed(11);
      std::map<std::string, at::Tensor> tensors;
      for (const auto& [tensor, shape] : encoder_tensor_shapes(c)) tensors[tensor] = at::randn(shape) * 0.3;
      const TransformerEncoder m = TransformerEncoder::from_tensors(c, tensors, dtype);
      const int64_t B = 2, T = 300, H = c.num_heads;
      const at::Tensor ids = at::randint(4, c.vocab_size, {B, T}, at::kLong);
      const at::Tensor valid = at::arange(T).view({1, T}) < at::tensor({257, 300}, at::kLong).view({2, 1});
      std::vector<at::Tensor> maps, contexts;
      m.forward(ids, valid, {}, [&](const LayerOutputs& o) {
        maps.push_back(o.attention.clone());
        contexts.push_back(o.context.clone());
      });
      for (const int64_t rows : {int64_t(1), int64_t(200), int64_t(299)}) {  // tiles of 128, 256 and 384 (one) rows
        LayerRequest tiled;
        at::Tensor map;
        int64_t next = 0;
        tiled.attention_rows = rows;
        tiled.on_attention_rows = [&](int64_t layer, int64_t b, int64_t first, const at::Tensor& part) {
          if (b == 0 && first == 0) map = at::full({B, H, T, T}, -1.0, part.options());
          EXPECT_EQ(first, b == 0 && next >= T ? 0 : next % T) << name;
          next = first + part.size(1);
          map[b].narrow(1, first, part.size(1)).copy_(part);
          (void)layer;
        };
        m.forward(ids, valid, tiled, [&](const LayerOutputs& o) {
          const std::string where =
              std::string(name) + " " + c10::toString(dtype) + " rows " + std::to_string(rows) + " layer " + std::to_string(o.layer);
          EXPECT_FALSE(o.attention.defined()) << where;
          EXPECT_TRUE(at::equal(map, maps[size_t(o.layer)])) << where;
          EXPECT_TRUE(at::equal(o.context, contexts[size_t(o.layer)])) << where;
          next = 0;
        });
      }
    }
  }
}

// The forward computes the same bits on one thread and on two, beyond one block of rows too
// (T = 300), for every family's layer shape: its attention maps, context vectors and layer outputs;
// in float64, and in float32 where OpenBLAS runs its AVX-512 kernels. Its AVX2 ones (Haswell, Zen:
// what an AVX2 node and CTXSIM_ISA=x86-64-v3 run) round float32 products differently at other
// thread counts (docs/PERFORMANCE.md "Machines and ISA levels"), so float32 is not asserted there.
TEST(TransformerLayer, OneThreadAndTwoGiveTheSameBits) {
  const bool avx2_kernels = test::openblas_avx2_kernels();
  const int threads = at::get_num_threads();
  for (const char* name : {"bert", "gpt2", "llama"}) {
    ModelConfig c = tiny(family_named(name));
    c.hidden_size = 64;
    c.max_position_embeddings = 320;
    if (std::string(name) == "llama") c.num_kv_heads = 2;
    for (const at::ScalarType dtype : {at::kDouble, at::kFloat}) {
      if (dtype == at::kFloat && avx2_kernels) continue;
      at::manual_seed(11);
      std::map<std::string, at::Tensor> tensors;
      for (const auto& [tensor, shape] : encoder_tensor_shapes(c)) tensors[tensor] = at::randn(shape) * 0.3;
      const TransformerEncoder m = TransformerEncoder::from_tensors(c, tensors, dtype);
      const int64_t B = 2, T = 300;
      const at::Tensor ids = at::randint(4, c.vocab_size, {B, T}, at::kLong);
      const at::Tensor valid = at::arange(T).view({1, T}) < at::tensor({257, 300}, at::kLong).view({2, 1});
      std::vector<std::vector<at::Tensor>> runs;
      for (const int n : {1, 2}) {
        at::set_num_threads(n);
        runs.emplace_back();
        m.forward(ids, valid, {}, [&](const LayerOutputs& o) {
          for (const at::Tensor& t : {o.input, o.attention, o.context, o.attention_output}) runs.back().push_back(t.clone());
        });
      }
      at::set_num_threads(threads);
      const char* what[] = {"input", "attention", "context", "attention_output"};
      for (size_t i = 0; i < runs[0].size(); ++i)
        EXPECT_TRUE(at::equal(runs[0][i], runs[1][i])) << name << " " << c10::toString(dtype) << " layer " << i / 4 << " " << what[i % 4]
                                                       << ": " << at::ne(runs[0][i], runs[1][i]).sum().item<int64_t>() << " values differ";
    }
  }
}

// The gated activation at inference (act(gate) · up in blocks of rows, on the threads) is the
// whole-tensor expression that autograd runs, bit for bit, on 1, 2 and 3 threads and in
// InferenceMode: every activation, float32 and float64, one row, three, and rows over many
// blocks, -0, infinities and NaN among the inputs. (ATen's activation over strided rows and over a contiguous tensor differ
// in their last bits: gelu in float32 so differs in about 800 of a row's 1,536 values; a block of
// one row would be the latter.)
TEST(TransformerLayer, GatedActivationInRowBlocksIsTheExpressionBitForBit) {
  const int64_t F = 1536;
  const int threads = at::get_num_threads();
  for (const Activation a : {Activation::Silu, Activation::Gelu, Activation::GeluTanh, Activation::Relu}) {
    for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
      // One row, three, one block of float32's 85 rows or several of float64's 42, and 2 x 85 + 1
      // rows (the last block takes the remainder).
      for (const auto& bt : {std::pair<int64_t, int64_t>{1, 1}, {1, 3}, {3, 37}, {2, 85}, {3, 57}}) {
        at::manual_seed(5);
        const auto [B, T] = bt;
        at::Tensor inner = at::randn({B, T, 2 * F}, at::TensorOptions().dtype(dtype)) * 4;
        const double special[] = {-0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN()};
        for (int k = 0; k < 4; ++k) inner[B - 1][T - 1][k] = special[k], inner[0][0][F + 4 + k] = special[k];  // in the gate, in up
        const at::ScalarType bits = dtype == at::kFloat ? at::kInt : at::kLong;                                // -0 and NaN payloads too
        at::Tensor expression;
        {
          const at::AutoGradMode grad(true);  // autograd's path: ATen's expression
          expression = gated_activation(inner, a).detach();
        }
        for (const int n : {1, 2, 3, 4}) {
          at::set_num_threads(n == 4 ? 2 : n);
          const at::NoGradGuard no_grad;  // the inference path; the fourth run in InferenceMode, as the pipeline's
          std::optional<c10::InferenceMode> inference;
          if (n == 4) inference.emplace();
          const at::Tensor fused = gated_activation(inner, a);
          ASSERT_EQ(fused.sizes(), expression.sizes());
          EXPECT_EQ((fused.contiguous().view(bits) != expression.contiguous().view(bits)).sum().item<int64_t>(), 0)
              << int(a) << " " << c10::toString(dtype) << " " << B << " x " << T << " rows on " << n << " threads";
          EXPECT_GE(fused.isnan().sum().item<int64_t>(), 2) << "the NaN inputs give NaN";
        }
        at::set_num_threads(threads);
      }
    }
  }
}

}  // namespace
}  // namespace ctxsim
