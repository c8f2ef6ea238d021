// `ctxsim init-model` (seeded random Hugging Face checkpoints of either family) and `model-info` (a
// checkpoint loaded and described; with --dump-heads, a developer's float64 dump of its per-head
// context vectors and attention maps for given token ids, which tests/model_reference.py checks).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>

#include "pipeline/commands/commands.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/stopwatch.h"
#include "stages/model/mlm.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/model/safetensors.h"

namespace ctxsim {
namespace {

namespace fs = std::filesystem;

// Moves the files init-model made in `staging` into `out`. A model folder is someone's work: a
// file there that differs from ours is replaced only with --overwrite (the same seed and shape
// again gives the same bytes, which is no change).
void publish_model(const fs::path& staging, const std::string& out, bool overwrite) {
  std::vector<std::string> differ;
  for (const auto& e : fs::directory_iterator(staging)) {
    const fs::path target = fs::path(out) / e.path().filename();
    std::error_code ec;
    if (fs::exists(target, ec) && sha256_file(target.string()) != sha256_file(e.path().string()))
      differ.push_back(e.path().filename().string());
  }
  std::sort(differ.begin(), differ.end());
  if (!differ.empty() && !overwrite)
    throw Error("--out " + out, "already holds a different model (its " + join(differ, ", ") + " would change)",
                "choose another --out, or add --overwrite to replace it");
  make_folder(out, "--out");
  for (const auto& e : fs::directory_iterator(staging)) fs::rename(e.path(), fs::path(out) / e.path().filename());
}

}  // namespace

int cmd_init_model(const InitModelArgs& a, std::ostream& out) {
  // --like: the random control of a real model, its family and config.json's shape (and its own
  // tokenizer unless --vocab names another).
  if (a.like.empty() && a.vocab.empty())
    throw UsageError("--vocab", "is required", "give the tokenizer (--vocab), or --like a model folder whose tokenizer it then takes");
  const std::string like_config = ModelFolder(a.like).config();
  if (!a.like.empty() && !ModelFolder(a.like).is_gguf() && path_kind(like_config, like_config) != PathKind::File)
    throw Error("--like " + a.like, "has no config.json",
                "give a Hugging Face model folder (config.json, model.safetensors, tokenizer) or a GGUF file");
  ModelConfig c = a.like.empty() ? ModelConfig::preset(a.preset, parse_family(a.family, "--family")) : model_config_of(a.like);
  const std::string vocab = a.vocab.empty() ? a.like : a.vocab;
  const std::string shape = a.like.empty() ? a.preset + " shape" : "the shape of " + a.like;
  if (a.layers > 0) c.num_layers = a.layers;
  if (a.hidden > 0) c.hidden_size = a.hidden;
  if (a.heads > 0) c.num_heads = a.heads;
  if (a.ffn > 0) c.intermediate_size = a.ffn;
  if (a.positions > 0) c.max_position_embeddings = a.positions;
  c.check("init-model: ", "pick sizes within those limits (a head count that divides the hidden size)");
  const FamilySpec& f = family_spec(c.family);
  try {  // a config.json can say it (a GGUF's rope factors that are not llama3's cannot), before anything is written
    (void)c.to_json(f.model_class);
  } catch (const Error& e) { throw Error("--like " + a.like + ": " + e.where(), e.problem(), e.fix()); }
  if (a.mlm && f.lm_head.objective == LmObjective::None)
    throw Error("--mlm", std::string("writes the family's language-model class, and ") + f.display + " has none in ctxsim",
                "use --family with one of " + lm_model_types());
  // Made in a staging folder beside --out, then moved in: a refused or failed init-model leaves
  // --out as it was.
  const fs::path parent = fs::path(a.out).lexically_normal().parent_path();
  make_folder(parent.empty() ? "." : parent.string(), "--out");
  std::string staging_name = ((parent.empty() ? fs::path(".") : parent) / ".init-model.XXXXXX").string();
  if (::mkdtemp(staging_name.data()) == nullptr)
    throw Error("--out " + a.out, std::string("cannot write there: ") + std::strerror(errno), "give --out a folder you may write to");
  const fs::path staging = staging_name;
  try {
    const DType dtype = a.dtype == "bfloat16" ? DType::BF16 : DType::F32;
    write_random_checkpoint(c, a.seed, vocab, staging.string(), dtype);
    if (a.mlm) {  // the family's language-model class: the same encoder under its prefix, with the head
      const ModelFolder staged(staging.string());
      const ModelConfig written = ModelConfig::load(staged.config());
      write_safetensors(staged.weights(), in_dtype(random_lm_weights(written, a.seed), dtype),
                        {{"format", "pt"}, {"ctxsim_init_seed", std::to_string(a.seed)}});
      atomic_write(staged.config(), written.to_json(f.mlm_class));
    }
    publish_model(staging, a.out, a.overwrite);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  fs::remove_all(staging);
  out << "wrote " << a.out << ": " << shape << " (" << c.num_layers << " layers, hidden " << c.hidden_size << ", " << c.num_heads
      << " heads, ffn " << c.intermediate_size << "), seed " << a.seed;
  out << ", " << f.display << " layout (" << (f.init_writes_mlm || a.mlm ? f.mlm_class : f.model_class) << ")";
  out << "\n";
  return 0;
}

namespace {

// One .npy file (NumPy's format 1.0: magic, a header dict padded to 64 bytes, C-order data):
// float64 or int64 little-endian, which numpy.load reads without ctxsim.
void write_npy(const std::string& path, const at::Tensor& t) {
  const at::Tensor c = t.contiguous().cpu();
  CTXSIM_CHECK(c.scalar_type() == at::kDouble || c.scalar_type() == at::kLong, "write_npy: float64 or int64");
  std::string shape;
  for (int64_t d : c.sizes()) shape += std::to_string(d) + ", ";
  std::string header = std::string("{'descr': '") + (c.scalar_type() == at::kDouble ? "<f8" : "<i8") +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  atomic_write(path, bytes);
}

// "101,2023,102" → ids, each below the vocabulary size.
std::vector<int64_t> parse_ids(const std::string& text, int64_t vocab_size) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0 || v >= vocab_size)
      throw Error("--ids " + text, "'" + item + "' is not a token id of this model (0 to " + std::to_string(vocab_size - 1) + ")",
                  "give comma-separated token ids, e.g. --ids 101,7592,102");
    ids.push_back(v);
    at = comma + 1;
  }
  return ids;
}

// The developer dump behind `model-info --dump-heads`: the samples (padded with id 0 to the
// longest, the padding masked) through the encoder, every layer's per-head context vectors and
// attention maps in float64. Files: ids.npy [B, T] int64, n_valid.npy [B] int64, context.npy
// [B, L, H, T, d] and attention.npy [B, L, H, T, T] float64 (tests/model_reference.py reads them);
// where the folder holds the family's language-model head, logits.npy [B, T, V] float64 too (0 on
// padding; tests/hf_reference.py compares it with the head class's).
void dump_heads(const Encoder& m, const std::string& model_dir, const std::vector<std::string>& samples, const std::string& dir,
                std::ostream& out) {
  const ModelConfig& c = m.config();
  std::vector<std::vector<int64_t>> rows;
  int64_t T = 0;
  for (const auto& s : samples) {
    rows.push_back(parse_ids(s, c.vocab_size));
    T = std::max(T, int64_t(rows.back().size()));
  }
  if (const std::string problem = c.positions_problem(T); !problem.empty()) throw Error("--ids", problem, "give shorter samples");
  const int64_t B = int64_t(rows.size());
  at::Tensor ids = at::zeros({B, T}, at::kLong), n_valid = at::zeros({B}, at::kLong);
  for (int64_t b = 0; b < B; ++b) {
    n_valid[b] = int64_t(rows[size_t(b)].size());
    for (size_t t = 0; t < rows[size_t(b)].size(); ++t) ids[b][int64_t(t)] = rows[size_t(b)][t];
  }
  const at::Tensor valid = at::arange(T, at::kLong).view({1, T}) < n_valid.view({B, 1});
  std::vector<at::Tensor> context, attention;  // per layer: [B, H, T, d], [B, H, T, T]
  LayerRequest request;
  request.final_hidden = false;
  m.forward(ids.to(m.device()), valid.to(m.device()), request, [&](const LayerOutputs& o) {
    context.push_back(o.context.to(at::kCPU, at::kDouble));
    attention.push_back(o.attention.to(at::kCPU, at::kDouble));
  });
  make_folder(dir, "--dump-heads");
  namespace fs = std::filesystem;
  write_npy((fs::path(dir) / "ids.npy").string(), ids);
  write_npy((fs::path(dir) / "n_valid.npy").string(), n_valid);
  write_npy((fs::path(dir) / "context.npy").string(), at::stack(context, 1));      // [B, L, H, T, d]
  write_npy((fs::path(dir) / "attention.npy").string(), at::stack(attention, 1));  // [B, L, H, T, T]
  out << "heads:       " << B << " sample(s) of up to " << T << " tokens: context [B, L, H, T, d] and attention [B, L, H, T, T] "
      << "as float64 in " << dir << " (ids.npy, n_valid.npy, context.npy, attention.npy)\n";
  if (family_spec(c.family).lm_head.objective == LmObjective::None) return;
  std::optional<MlmModel> lm;
  try {
    lm.emplace(MlmModel::load(model_dir, at::kDouble));
  } catch (const Error& e) {
    out << "logits:      none (" << e.problem() << ")\n";
    return;
  }
  std::vector<int32_t> input(size_t(B * T)), labels(size_t(B * T), -1);
  std::vector<int16_t> lengths(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    lengths[size_t(b)] = int16_t(n_valid[b].item<int64_t>());
    for (int64_t t = 0; t < T; ++t) {
      input[size_t(b * T + t)] = int32_t(ids[b][t].item<int64_t>());
      if (t < lengths[size_t(b)]) labels[size_t(b * T + t)] = 0;  // every valid position predicted
    }
  }
  const MlmBatch batch = make_mlm_batch(input.data(), labels.data(), lengths.data(), B, T, std::vector<uint64_t>(size_t(B), 0));
  at::Tensor logits = at::zeros({B * T, c.vocab_size}, at::kDouble);
  logits.index_copy_(0, batch.positions, lm->logits(batch).to(at::kDouble));
  write_npy((fs::path(dir) / "logits.npy").string(), logits.view({B, T, c.vocab_size}));
  out << "logits:      [B, T, V] of the " << family_spec(c.family).mlm_class << " head as float64 in " << dir << " (logits.npy)\n";
}

}  // namespace

int cmd_model_info(const ModelInfoArgs& a, std::ostream& out) {
  if (a.dump.empty() != a.ids.empty())
    throw Error(a.dump.empty() ? "--ids" : "--dump-heads", "--dump-heads and --ids go together", "give both, or neither");
  LoadReport r;
  const TransformerEncoder m = TransformerEncoder::load(a.dir, parse_dtype(a.dtype, "--dtype"), &r);
  const ModelConfig& c = m.config();
  const FamilySpec& f = m.family();
  out << "model:       " << a.dir << "\n"
      << "family:      " << f.model_type << " (" << f.display << ")\n"
      << "shape:       " << c.num_layers << " layers, hidden " << c.hidden_size << ", " << c.num_heads << " heads (d=" << c.head_dim()
      << "), ffn " << c.intermediate_size << ", vocab " << c.vocab_size << ", positions " << c.max_position_embeddings << "\n"
      << "tensors:     " << r.tensors_in_file << " in the file: " << r.encoder_tensors << " " << f.display
      << (f.pooler ? " (encoder + pooler), " : " (encoder), ") << r.ignored.size() << " ignored (heads, buffers), " << r.unexpected.size()
      << " unexpected\n"
      << "sha256:      " << ModelFolder(a.dir).weights_sha256() << "\n";
  if (!r.unexpected.empty()) {
    std::cerr << "ctxsim: warning: unexpected tensors ignored:";
    for (const auto& u : r.unexpected) std::cerr << " " << u;
    std::cerr << "\n";
  }
  if (!a.dump.empty()) dump_heads(m, a.dir, a.ids, a.dump, out);
  return 0;
}

}  // namespace ctxsim
