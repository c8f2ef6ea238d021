// `ctxsim inspect --text "…" | --file F [--model DIR] [--out DIR]`: one text, every layer and
// head, in one command (bertviz's and TransformerLens's first use). The text becomes a
// one-document corpus in --out (input.txt) and one sample as long as the text, which `ctxsim run`
// measures like any corpus (the store, its report with the explorer: attention, context
// similarity, selected pairs, rollout); heads.h5 beside it holds the per-head context vectors,
// attention maps and similarity matrices with the tokens as coordinates (xarray opens it).
#include <ATen/core/grad_mode.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/scales.h"
#include "pipeline/store/store_file.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/base/model_folder.h"
#include "stages/model/model.h"
#include "stages/model/model_config.h"
#include "stages/text/utf8.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

constexpr size_t kMaxInspectBytes = size_t(1) << 20;  // a text to look at, not a corpus

// The text as one document: blank lines (which would start a new document) dropped, each line's
// end kept (a sentence boundary, as the text corpus format reads it).
std::string one_document(const std::string& text) {
  std::string out;
  for (const std::string& line : split_lines(text))
    if (line.find_first_not_of(" \t\r\f\v") != std::string::npos) out += line + "\n";
  return out;
}

// The run of one text: its corpus is --out/input.txt, one sample of T tokens, its one example
// stored whole, a selection wide enough to show pairs in a short text.
std::string inspect_yaml(const InspectArgs& a, const std::string& corpus, int64_t T) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "corpus" << YAML::Value << YAML::BeginMap << YAML::Key << "format" << YAML::Value << "text" << YAML::Key << "path"
    << YAML::Value << corpus << YAML::EndMap;
  e << YAML::Key << "samples" << YAML::Value << YAML::BeginMap << YAML::Key << "seq_len" << YAML::Value << T << YAML::Key << "windows"
    << YAML::Value << "documents" << YAML::Key << "num_samples" << YAML::Value << 1 << YAML::EndMap;
  e << YAML::Key << "model" << YAML::Value << YAML::BeginMap << YAML::Key << "path" << YAML::Value << a.model << YAML::Key << "dtype"
    << YAML::Value << "float32" << YAML::EndMap;
  e << YAML::Key << "selection" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "top_fraction" << YAML::Value
    << a.top_fraction << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "statistics" << YAML::Value << YAML::BeginMap << YAML::Key << "examples" << YAML::Value << YAML::Flow << YAML::BeginSeq
    << 0 << YAML::EndSeq << YAML::EndMap;
  e << YAML::Key << "output" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << a.out << YAML::Key << "overwrite"
    << YAML::Value << a.overwrite << YAML::EndMap;
  e << YAML::Key << "runtime" << YAML::Value << YAML::BeginMap << YAML::Key << "batch_size" << YAML::Value << 1 << YAML::Key << "unit_size"
    << YAML::Value << 1 << YAML::EndMap;
  e << YAML::EndMap;
  return "# written by ctxsim inspect: the run of the text in input.txt (rerun: ctxsim run THIS_FILE)\n" + std::string(e.c_str()) + "\n";
}

// heads.h5: [layer, head, …] arrays of the one sample's n tokens, every axis a dimension scale
// (docs/STORE.md "With xarray"), the token strings as the coordinates of the token axes.
void write_heads(const std::string& path, const Encoder& model, const std::vector<int32_t>& ids, const std::vector<std::string>& tokens,
                 bool causal) {
  const int64_t n = int64_t(ids.size());
  const at::Tensor input = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).view({1, n});
  const at::Tensor valid = at::ones({1, n}, at::kBool);
  std::vector<at::Tensor> context, attention;
  LayerRequest request;
  request.final_hidden = false;
  at::NoGradGuard no_grad;
  model.forward(input, valid, request, [&](const LayerOutputs& o) {
    context.push_back(o.context[0].to(at::kCPU, at::kFloat).contiguous());      // [H, n, d]
    attention.push_back(o.attention[0].to(at::kCPU, at::kFloat).contiguous());  // [H, n, n]
  });
  const at::Tensor ctx = at::stack(context).contiguous();   // [L, H, n, d]
  at::Tensor sim = at::matmul(ctx, ctx.transpose(-1, -2));  // C_ij = o_i · o_j
  sim = (sim * (1 - at::eye(n, at::kFloat))).contiguous();  // C_ii = 0 (SPEC §2)
  const at::Tensor att = at::stack(attention).contiguous();
  const hsize_t L = hsize_t(ctx.size(0)), H = hsize_t(ctx.size(1)), N = hsize_t(n), d = hsize_t(ctx.size(3));

  const std::string partial = path + ".partial";
  {
    const h5::Id file = h5::open_parallel(partial, MPI_COMM_SELF, true);
    h5::set_attr(file, "description",
                 std::string("ctxsim inspect: per-head context vectors, attention maps and context similarity of one text (SPEC §2)"));
    h5::set_attr(file, "causal", int64_t{causal});
    Scales scales(H5P_DEFAULT, true);
    scales.numbers(file, "layer", L, "layer index");
    scales.numbers(file, "head", H, "head index");
    scales.numbers(file, "position", N, "token position in the sample");
    scales.numbers(file, "component", d, "component of a head's context vector");
    size_t width = 1;
    for (const auto& t : tokens) width = std::max(width, t.size());
    for (const char* axis : {"query", "key", "i", "j"})
      scales.strings(file, axis, N, width, std::string("token at each position (") + axis + ")", tokens);
    const auto data = [&](const char* name, const at::Tensor& t, std::vector<hsize_t> dims, const std::vector<std::string>& axes,
                          const std::string& description) {
      const h5::Id ds = h5::create_dataset<float>(file, name, dims, description);
      h5::write_all(ds, h5::Element<float>::memory(), t.data_ptr<float>());
      scales.attach(file, name, axes);
    };
    data("context", ctx, {L, H, N, d}, {"layer", "head", "position", "component"}, "o_i = sum_j A_ij v_j per head, before W_O");
    data("attention", att, {L, H, N, N}, {"layer", "head", "query", "key"},
         causal ? "A_ij (causal: 0 for keys after the query)" : "A_ij, each query row sums to 1");
    data("similarity", sim, {L, H, N, N}, {"layer", "head", "i", "j"}, "C_ij = o_i . o_j, diagonal 0");
    const h5::Id id_ds = h5::create_dataset<int32_t>(file, "token_id", {N}, "the token ids");
    h5::write_all(id_ds, h5::Element<int32_t>::memory(), ids.data());
    scales.attach(file, "token_id", {"position"});
    write_cf_attributes(file);
  }
  fs::rename(partial, path);
}

}  // namespace

int cmd_inspect(const InspectArgs& a, std::ostream& out) {
  if (a.text.empty() == a.file.empty())
    throw UsageError("ctxsim inspect", "give the text with --text \"…\" or --file FILE (one of the two)",
                     "e.g. ctxsim inspect --text \"The cat sat on the mat. It purred.\"");
  const std::string source = a.file.empty() ? "--text" : a.file;
  const std::string text = one_document(a.file.empty() ? a.text
                                                       : read_file_bytes(a.file, kMaxInspectBytes, "the text file",
                                                                         "give --file a readable UTF-8 text file of 1 MiB at most"));
  if (text.empty()) throw Error(source, "has no text", "give a sentence or more");
  // Checked here, so that the message names what the user gave rather than the run's input.txt.
  if (const size_t bad = utf8::find_invalid(text); bad != utf8::npos)
    throw Error(source, "is not UTF-8 text (invalid UTF-8 at " + utf8::describe_offset(text, bad) + ")",
                "convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE)");
  MpiSession::ensure();
  const fs::path dir = a.out;
  const std::string store = (dir / "store.h5").string(), marker = (dir / "inspect.json").string();
  // What this inspection is of: the text and the model (by its weights).
  const ModelFolder folder(a.model);
  const std::string model_weights = folder.weights();
  if (!fs::is_regular_file(model_weights) && !folder.sharded())
    throw Error("--model " + a.model, "has no model.safetensors (nor a model.safetensors.index.json of shards)",
                "give a Hugging Face model folder (config.json, model.safetensors and its vocabulary), e.g. models/brown-bert; "
                "scripts/setup.sh fetches the default, data/models/all-MiniLM-L6-v2");
  const nlohmann::json what = {{"text_sha256", sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())},
                               {"model", a.model},
                               {"model_sha256", folder.weights_sha256()}};
  std::error_code ec;
  if (!a.overwrite && fs::exists(marker, ec)) {  // an inspection's folder: of this text and model, or refused
    const auto before = nlohmann::json::parse(read_file_bytes(marker, kMaxJsonBytes), nullptr, false);
    if (!before.is_object() || before.value("text_sha256", "") != what["text_sha256"] ||
        before.value("model_sha256", "") != what["model_sha256"])
      throw Error("--out " + a.out,
                  "holds the inspection of another text or model" +
                      (before.is_object() && before.contains("model") ? " (model " + before.value("model", "?") + ")" : std::string()),
                  "choose another --out, or add --overwrite to replace it");
  } else if (!a.overwrite) {  // files of the names inspect writes, in a folder no inspection made, are a user's
    if (const StoreInfo info = inspect_store(store); info.kind == StoreInfo::Kind::Store)
      throw Error("--out " + a.out, "holds the store of 'ctxsim " + info.job + "' (" + store + "), not an inspection",
                  "choose another --out for the inspection");
    std::vector<std::string> theirs;
    for (const char* name : {"input.txt", "inspect.yaml", "heads.h5", "store.h5", "report.html", "config.yaml", "figures"})
      if (fs::exists(dir / name, ec)) theirs.emplace_back(name);
    if (!theirs.empty())
      throw Error("--out " + a.out, "holds " + join(theirs, ", ") + ", which ctxsim inspect did not write (it has no inspect.json)",
                  "choose another --out, or add --overwrite to replace them");
  }
  make_folder(dir.string(), "--out");
  // The marker first: a folder with it is an inspection's, also when this one is stopped midway.
  atomic_write(marker, what.dump(2) + "\n");
  const std::string corpus = (dir / "input.txt").string(), config = (dir / "inspect.yaml").string();
  // The sample is as long as the text (up to the model's positions): the tokens are counted by
  // drawing it once at the longest.
  const ModelConfig mc = model_config_of(folder.dir());
  const int64_t longest = std::min<int64_t>(mc.max_tokens(), kSeqLen.hi);
  atomic_write(corpus, text);
  Config probe = parse_config(inspect_yaml(a, corpus, longest), "ctxsim inspect");
  JobTokenizer tokenizer = make_tokenizer(probe);
  const PreparedSamples drawn = prepare_samples(probe, tokenizer);
  const int64_t n = drawn.samples.n_valid.at(0);
  const int64_t T = std::max<int64_t>(kSeqLen.lo, n);
  atomic_write(config, inspect_yaml(a, corpus, T));
  if (n == longest)
    log_info("inspect: the text is longer than the model's " + std::to_string(longest) + " positions; the rest is left out");

  std::ostringstream run_out;
  cmd_run(config, {}, -1, run_out);
  std::vector<int32_t> ids(drawn.samples.token_ids.begin(), drawn.samples.token_ids.begin() + n);
  std::vector<std::string> tokens;
  for (int32_t id : ids) tokens.emplace_back(tokenizer.vocab().token(id));
  const TransformerEncoder model = TransformerEncoder::load(a.model, at::kFloat);
  const std::string heads = (dir / "heads.h5").string();
  write_heads(heads, model, ids, tokens, tokenizer.family->causal);
  out << "inspect: " << n << " tokens of " << source << " through " << a.model << " (" << mc.num_layers << " layers x " << mc.num_heads
      << " heads)\n"
      << "  explorer:  " << (dir / "report.html").string() << " (every layer and head: attention, context similarity, selected pairs, "
      << "rollout)\n"
      << "  arrays:    " << heads << " (context [layer, head, position, component], attention [layer, head, query, key], "
      << "similarity [layer, head, i, j]; tokens as coordinates: xarray.open_dataset(path, engine=\"h5netcdf\"))\n"
      << "  store:     " << store << " (ctxsim summary, report, compare take it)\n";
  return 0;
}

}  // namespace ctxsim
