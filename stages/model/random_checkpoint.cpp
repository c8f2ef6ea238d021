#include "stages/model/random_checkpoint.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/random.h"
#include "stages/model/family.h"
#include "stages/text/bpe.h"
#include "stages/text/tokenizer_files.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ctxsim {
namespace {

// A random checkpoint's tokenizer files (name → bytes) and vocabulary size, from --vocab.
struct TokenizerOut {
  std::vector<std::pair<std::string, std::string>> files;
  int64_t size = 0;
};

// vocab.txt as read, or written from a WordPiece tokenizer.json's tokens.
TokenizerOut wordpiece_files(const TokenizerFiles& files) {
  const std::string& path = files.vocab;
  std::string vocab;
  if (files.wordpiece_json()) {
    vocab = files.wordpiece_vocab().lines();
  } else {
    vocab = read_file_bytes(path, kMaxVocabBytes, "the vocabulary",
                            "give --vocab a vocab.txt (scripts/setup.sh makes data/vocab/bert-base-uncased.txt)");
  }
  int64_t lines = 0;
  for (char c : vocab) lines += c == '\n';
  if (!vocab.empty() && vocab.back() != '\n') ++lines;
  if (lines == 0) throw Error(path, "the vocabulary is empty", "give a WordPiece vocab.txt");
  return {{{ModelFolder::kVocabTxt, vocab}}, lines};
}

// vocab.json + merges.txt of a byte-level BPE, written from the files read (a tokenizer.json's
// too), with the family's special tokens the files lack (FamilySpec::bpe_specials_first and
// _last): a RoBERTa made from GPT-2's files gets <s> <pad> </s> <unk> first (so that pad_token_id
// 1 is <pad>, as in every RoBERTa, and positions start after it) and <mask> last; a GPT-2 gets
// <|endoftext|> if its files lack it.
TokenizerOut bpe_files(const FamilySpec& f, const std::string& path, const TokenizerFiles& files) {
  const auto model = load_bpe_model(files);
  const Vocab& v = model->vocab;
  if (f.frame_from_tokenizer_config && files.gguf()) {  // a GGUF's vocabulary: its tokenizer.json and special tokens written out
    const GgufFile file(files.vocab);
    const GgufSpecials s = gguf_specials(file.header(), files.vocab);
    const auto token = [](const std::string& t) { return t.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(t); };
    nlohmann::ordered_json options = {{"add_bos_token", !s.begin.empty()},
                                      {"bos_token", token(s.begin)},
                                      {"eos_token", token(s.end)},
                                      {"pad_token", token(s.pad)},
                                      {"tokenizer_class", "PreTrainedTokenizerFast"}};
    return {{{ModelFolder::kTokenizerJson, model->to_tokenizer_json()}, {ModelFolder::kTokenizerConfig, options.dump(2) + "\n"}},
            int64_t(v.size())};
  }
  if (f.frame_from_tokenizer_config) {  // the Llama lineage: its tokenizer.json as it is (its regex, NFC, ignore_merges)
    if (!files.merges.empty())
      throw Error(path, std::string("is vocab.json + merges.txt, and a ") + f.display + " model's tokenizer is its tokenizer.json",
                  "give --vocab the model's tokenizer.json or its folder (data/tokenizers/llama3)");
    TokenizerOut out{{{ModelFolder::kTokenizerJson, read_file_bytes(files.vocab, 2 * kMaxVocabBytes, "the tokenizer", "check the file")}},
                     int64_t(v.size())};
    // Its begin and pad tokens are the tokenizer_config.json's beside it (SPEC §7): that goes with
    // a tokenizer.json given as a file (a folder's is added below).
    const std::string beside = (std::filesystem::path(files.vocab).parent_path() / ModelFolder::kTokenizerConfig).string();
    if (path_kind(path, path) != PathKind::Folder && path_kind(beside, beside) == PathKind::File)
      out.files.emplace_back(ModelFolder::kTokenizerConfig,
                             read_file_bytes(beside, kMaxJsonBytes, "the tokenizer options", "check the tokenizer's folder"));
    return out;
  }
  std::vector<std::string> tokens;
  for (const char* special : f.bpe_specials_first)
    if (v.id(special) < 0) tokens.emplace_back(special);
  for (int32_t id = 0; id < v.size(); ++id) tokens.emplace_back(v.token(id));
  for (const char* special : f.bpe_specials_last)
    if (v.id(special) < 0) tokens.emplace_back(special);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (j.contains(tokens[i])) throw Error(path, "the token '" + tokens[i] + "' is there twice", "give the tokenizer files unchanged");
    j[tokens[i]] = i;
  }
  // Every token the family's samples need is there now, or the files are not the family's.
  SampleFrame::resolve(f.frame, Vocab::from_tokens(tokens), true, f.display);
  std::vector<std::pair<int32_t, uint64_t>> ranked;  // (rank, left << 32 | right)
  for (const auto& [pair, merged] : model->merges) ranked.emplace_back(merged.first, pair);
  std::sort(ranked.begin(), ranked.end());
  std::string merges = "#version: 0.2\n";
  for (const auto& [rank, pair] : ranked)
    ((merges += v.token(int32_t(pair >> 32))) += ' ') += std::string(v.token(int32_t(pair & 0xffffffffu))) + "\n";
  return {{{ModelFolder::kVocabJson, j.dump() + "\n"}, {ModelFolder::kMerges, merges}}, int64_t(tokens.size())};
}

TokenizerOut tokenizer_files_for(const FamilySpec& f, const std::string& path) {
  const TokenizerFiles files = find_tokenizer_files(path);
  const bool bpe = files.kind == TokenizerKind::ByteLevelBpe;
  if (bpe != f.byte_level_bpe)
    throw Error(path,
                std::string("is ") + (bpe ? "a byte-level BPE tokenizer" : "a WordPiece vocabulary") + ", but a " + f.display +
                    " model's tokenizer is " + (f.byte_level_bpe ? "byte-level BPE" : "WordPiece"),
                "give --vocab a vocab.txt for BERT and DistilBERT (data/vocab/bert-base-uncased.txt), a folder with vocab.json and "
                "merges.txt (data/vocab/gpt2) or a tokenizer.json for GPT-2 and RoBERTa");
  TokenizerOut out = bpe ? bpe_files(f, path, files) : wordpiece_files(files);
  // A model folder's tokenizer options (do_lower_case, …) go with its vocabulary.
  const std::string options = ModelFolder(path).tokenizer_config();
  if (path_kind(path, path) == PathKind::Folder && path_kind(options, options) == PathKind::File)
    out.files.emplace_back(ModelFolder::kTokenizerConfig,
                           read_file_bytes(options, kMaxJsonBytes, "the tokenizer options", "check the model folder"));
  return out;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// Box–Muller on SplitMix64 doubles in (0, 1]: portable, so files match across machines.
void fill_normal(float* out, int64_t n, double stddev, uint64_t seed) {
  SplitMix64 rng(seed);
  const auto uniform = [&] { return (double((rng.next() >> 11)) + 1.0) * (1.0 / 9007199254740992.0); };
  for (int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), phi = 2.0 * M_PI * uniform();
    out[i] = static_cast<float>(stddev * r * std::cos(phi));
    if (i + 1 < n) out[i + 1] = static_cast<float>(stddev * r * std::sin(phi));
  }
}

}  // namespace

namespace {

// Whether `name` ("encoder.layer.0.attention.output.LayerNorm.weight", "layers.0.input_layernorm.weight")
// is the weight of a norm the family's row names (its module is one, or ends in one).
bool is_norm_weight(const FamilySpec& f, const std::string& name) {
  const std::string suffix = ".weight";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  const std::string module = name.substr(0, name.size() - suffix.size());
  for (const char* norm : {f.embed_norm, f.attn_norm, f.ffn_norm, f.final_norm, f.q_norm, f.k_norm, f.lm_head.transform_norm}) {
    if (!norm) continue;
    const std::string n = norm;
    if (module == n || (module.size() > n.size() && module.compare(module.size() - n.size(), n.size(), n) == 0 &&
                        module[module.size() - n.size() - 1] == '.'))
      return true;
  }
  return false;
}

}  // namespace

TensorData initial_tensor(const FamilySpec& family, const std::string& name, const std::vector<int64_t>& shape, uint64_t seed,
                          double stddev) {
  TensorData t;
  t.dtype = DType::F32;
  t.shape = shape;
  int64_t n = 1;
  for (auto d : shape) n *= d;
  t.bytes.assign(static_cast<size_t>(n) * 4, 0);
  auto* f = reinterpret_cast<float*>(t.bytes.data());
  const bool is_bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  if (is_norm_weight(family, name)) {
    for (int64_t i = 0; i < n; ++i) f[i] = 1.0f;
  } else if (!is_bias) {
    fill_normal(f, n, stddev, seed ^ fnv1a(name));
  }
  return t;
}

namespace {

// The encoder's tensors (no pooler) by their bare-model names. GPT-2's _init_weights: the
// projections into the residual stream (c_proj) get 0.02 / sqrt(2 layers).
std::map<std::string, TensorData> encoder_weights(const ModelConfig& config, uint64_t seed) {
  const FamilySpec& f = family_spec(config.family);
  std::map<std::string, TensorData> out;
  for (const auto& [name, shape] : encoder_tensor_shapes(config)) {
    const bool residual = f.conv1d && name.size() > 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0;
    out.emplace(name, initial_tensor(f, name, shape, seed, residual ? 0.02 / std::sqrt(2.0 * double(config.num_layers)) : 0.02));
  }
  return out;
}

}  // namespace

std::map<std::string, TensorData> random_checkpoint_weights(const ModelConfig& config, uint64_t seed) {
  if (family_spec(config.family).init_writes_mlm) return random_lm_weights(config, seed);
  std::map<std::string, TensorData> out = encoder_weights(config, seed);
  for (const auto& [name, shape] : pooler_shapes(config)) out.emplace(name, initial_tensor(family_spec(config.family), name, shape, seed));
  return out;
}

std::map<std::string, TensorData> random_lm_weights(const ModelConfig& config, uint64_t seed) {
  const FamilySpec& f = family_spec(config.family);
  CTXSIM_CHECK(f.lm_head.objective != LmObjective::None, "random_lm_weights: a family without a language-model head");
  std::map<std::string, TensorData> out;
  for (auto& [name, t] : encoder_weights(config, seed)) out.emplace(f.model_prefix + name, std::move(t));
  for (const auto& [name, shape] : lm_head_shapes(config)) out.emplace(name, initial_tensor(f, name, shape, seed));
  return out;
}

std::vector<std::pair<std::string, std::string>> model_tokenizer_files(Family family, const std::string& vocab_path, int64_t* size) {
  TokenizerOut out = tokenizer_files_for(family_spec(family), vocab_path);
  *size = out.size;
  return std::move(out.files);
}

std::map<std::string, TensorData> in_dtype(std::map<std::string, TensorData> tensors, DType dtype) {
  CTXSIM_CHECK(dtype == DType::F32 || dtype == DType::BF16, "in_dtype: F32 or BF16");
  if (dtype == DType::F32) return tensors;
  for (auto& [name, t] : tensors) {
    CTXSIM_CHECK(t.dtype == DType::F32, "in_dtype: from F32");
    const size_t n = t.bytes.size() / 4;
    std::vector<uint8_t> out(n * 2);
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, t.bytes.data() + 4 * i, 4);
      const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);  // nearest, ties to even (values are finite)
      const uint16_t b = uint16_t(rounded >> 16);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
    t.bytes = std::move(out);
    t.dtype = DType::BF16;
  }
  return tensors;
}

void write_random_checkpoint(ModelConfig config, uint64_t seed, const std::string& vocab_path, const std::string& out_dir, DType dtype) {
  namespace fs = std::filesystem;
  const FamilySpec& f = family_spec(config.family);
  const TokenizerOut tokenizer = tokenizer_files_for(f, vocab_path);
  config.vocab_size = tokenizer.size;
  make_folder(out_dir, "--out");
  const ModelFolder out(out_dir);
  write_safetensors(out.weights(), in_dtype(random_checkpoint_weights(config, seed), dtype),
                    {{"format", "pt"}, {"ctxsim_init_seed", std::to_string(seed)}});
  atomic_write(out.config(), config.to_json(f.init_writes_mlm ? f.mlm_class : f.model_class));
  for (const auto& [name, bytes] : tokenizer.files) atomic_write((fs::path(out_dir) / name).string(), bytes);
}

}  // namespace ctxsim
