// The job in one process (issue 5 distributes it): samples → units → batches → forward →
// per-layer similarity and statistics → store.
#include "pipeline/run.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ctxsim_revision.h"
#include "pipeline/commands.h"
#include "pipeline/config.h"
#include "pipeline/model_files.h"
#include "pipeline/progress.h"
#include "pipeline/store.h"
#include "stages/error.h"
#include "stages/model.h"
#include "stages/safetensors.h"
#include "stages/analysis.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

void log_info(const std::string& s) { std::cerr << "ctxsim: " << s << "\n"; }

// MPI for the store's MPI-IO: initialised on first use, finalised at exit (MPI cannot be
// initialised twice in one process, and a process may run several jobs, e.g. in tests).
void ensure_mpi() {
  int ready = 0;
  MPI_Initialized(&ready);
  if (ready) return;
  MPI_Init(nullptr, nullptr);
  std::atexit([] {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  });
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<uint16_t> half_bits(const at::Tensor& t) {
  const at::Tensor h = t.to(at::kHalf).contiguous();
  std::vector<uint16_t> v(static_cast<size_t>(h.numel()));
  std::memcpy(v.data(), h.data_ptr(), v.size() * 2);
  return v;
}

}  // namespace

int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  const auto t_start = std::chrono::steady_clock::now();
  const Config c = load_config(config_path, overrides);
  check_paths(c);
  const std::string dir = model_dir(c);
  if (dir.empty())
    throw Error(c.where("model.path"), "a run needs a model", "set model.path to a Hugging Face BERT folder (scripts/setup.sh makes "
                                                              "data/models/bert-base-seed0) or model.name");
  // Parallel HDF5 needs MPI even to read a store's attributes.
  ensure_mpi();
  // The output: refuse to replace a store made with another config unless asked to (checked
  // before any work, so a refused run writes nothing).
  const std::string effective = identity_yaml(c);
  const std::string store_path = (fs::path(c.output.dir) / "store.h5").string();
  const StoreInfo existing = inspect_store(store_path);
  if (existing.exists && !c.output.overwrite && !existing.config_yaml.empty() && existing.config_yaml != effective)
    throw Error(c.where("output.dir"), store_path + " holds a run with a different config",
                "choose another output.dir, or set output.overwrite=true to replace it");

  const int threads = configure_threads(c.runtime.threads);
  log_info(version_string() + "; config " + config_path + "; " + std::to_string(threads) + " threads");

  BertTokenizer tokenizer = make_tokenizer(c);
  const PreparedSamples prepared = prepare_samples(c, tokenizer);
  const SampleSet& samples = prepared.samples;
  log_info("samples: " + std::to_string(samples.size()) + " of " + std::to_string(samples.num_candidates) + " candidates, T=" +
           std::to_string(samples.seq_len) + " (" + std::to_string(prepared.documents) + " documents, " +
           std::to_string(prepared.sentences) + " sentences)");

  LoadReport report;
  const BertModel model = BertModel::load(dir, parse_dtype(c.model.dtype), &report);
  const BertConfig& mc = model.config();
  if (!report.unexpected.empty()) {
    std::string list;
    for (const auto& u : report.unexpected) list += " " + u;
    log_info("warning: tensors in " + dir + "/model.safetensors that BertModel does not use:" + list);
  }
  log_info("model: " + dir + " (" + std::to_string(mc.num_layers) + " layers, " + std::to_string(mc.num_heads) + " heads, hidden " +
           std::to_string(mc.hidden_size) + ", " + c.model.dtype + "), sha256 " + report.weights_sha256.substr(0, 16) + "…");
  if (c.samples.seq_len > mc.max_position_embeddings)
    throw Error(c.where("samples.seq_len"), std::to_string(c.samples.seq_len) + " exceeds the model's max_position_embeddings (" +
                                                std::to_string(mc.max_position_embeddings) + ")", "lower samples.seq_len");
  if (tokenizer.vocab().size() > mc.vocab_size)
    throw Error(c.where("model.vocab"), "the vocabulary has " + std::to_string(tokenizer.vocab().size()) +
                                            " tokens but the model's vocab_size is " + std::to_string(mc.vocab_size),
                "use the vocab.txt that belongs to the model");

  StatisticsOptions opt;
  opt.rules = c.selection;
  opt.attention_threshold = c.statistics.attention_threshold;
  for (const auto& s : c.statistics.separators) {
    const int32_t id = tokenizer.vocab().id(s);
    if (id < 0)
      throw Error(c.where("statistics.separators"), "'" + s + "' is not a token of the vocabulary",
                  "list separators as they are spelled in vocab.txt, e.g. \".\" \",\" \"[SEP]\"");
    opt.separator_ids.push_back(id);
  }
  for (int32_t id : {tokenizer.vocab().pad_id(), tokenizer.vocab().unk_id(), tokenizer.vocab().cls_id(),
                     tokenizer.vocab().sep_id(), tokenizer.vocab().mask_id()})
    if (id >= 0) opt.special_ids.push_back(id);
  std::vector<int64_t> examples;
  for (int64_t e : c.statistics.examples) {
    if (e >= samples.size())
      throw Error(c.where("statistics.examples"), "sample " + std::to_string(e) + " does not exist (" +
                                                      std::to_string(samples.size()) + " samples)", "list sample ids below the sample count");
    examples.push_back(e);
  }

  const Analysis analysis(model, opt, c.model.vector == "projected");
  const StatsShape shape = analysis.shape(samples.seq_len);
  Accumulator acc(shape);

  StoreLayout layout{samples.size(), samples.seq_len, mc.num_layers, mc.num_heads, mc.vocab_size, c.selection, examples};
  StoreAttributes attrs;
  attrs.config_yaml = effective;
  attrs.config_path = config_path;
  attrs.model_path = dir;
  attrs.model_sha256 = report.weights_sha256;
  const std::string vocab_path = c.model.vocab.empty() ? (fs::path(dir) / "vocab.txt").string() : c.model.vocab;
  const std::string vocab_text = read_bytes(vocab_path);
  attrs.vocab_path = vocab_path;
  attrs.vocab_sha256 = sha256_bytes(reinterpret_cast<const uint8_t*>(vocab_text.data()), vocab_text.size());
  attrs.corpus = c.corpus.format + ":" + c.corpus.path + " (" + std::to_string(prepared.documents) + " documents)";
  attrs.version = version_string();
  attrs.git_revision = CTXSIM_GIT_REVISION;
  attrs.started = utc_now();
  attrs.vector_kind = c.model.vector;
  attrs.dtype = c.model.dtype;
  attrs.threads = threads;
  fs::create_directories(c.output.dir);
  Store store(store_path, MPI_COMM_WORLD, layout, attrs);
  store.write_samples(samples, vocab_text);

  const int64_t N = samples.size(), T = samples.seq_len, U = c.runtime.unit_size, Bmax = c.runtime.batch_size;
  const int64_t R = shape.rules;
  Progress progress(N, c.runtime.progress_seconds);
  double compute_s = 0, store_s = 0;
  // Work units: fixed runs of unit_size samples, each split into batches of batch_size, so the
  // arithmetic a sample sees does not depend on how units are dealt out.
  for (int64_t u0 = 0; u0 < N; u0 += U) {
    const int64_t u1 = std::min(N, u0 + U);
    for (int64_t b0 = u0; b0 < u1; b0 += Bmax) {
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t B = std::min(Bmax, u1 - b0);
      BatchSamples bs{&samples.token_ids[size_t(b0 * T)], &samples.sentence_ids[size_t(b0 * T)], &samples.n_valid[size_t(b0)], B, T};
      std::vector<std::pair<int64_t, int64_t>> in_batch;  // (example index, row in batch)
      for (size_t e = 0; e < examples.size(); ++e)
        if (examples[e] >= b0 && examples[e] < b0 + B) in_batch.emplace_back(int64_t(e), examples[e] - b0);
      std::vector<std::vector<at::Tensor>> ex_att(in_batch.size()), ex_sim(in_batch.size()), ex_sel(in_batch.size());
      LayerHook keep_examples;
      if (!in_batch.empty())
        keep_examples = [&](int64_t, const at::Tensor& sim, const at::Tensor& attention, const BatchStatistics& stats) {
          for (size_t k = 0; k < in_batch.size(); ++k) {
            const int64_t row = in_batch[k].second;
            ex_att[k].push_back(attention[row].to(at::kFloat).clone());
            ex_sim[k].push_back(sim[row].to(at::kFloat).clone());
            std::vector<at::Tensor> per_rule;
            for (int64_t r = 0; r < R; ++r) per_rule.push_back(stats.selection_matrix(r)[row]);
            ex_sel[k].push_back(at::stack(per_rule));  // [R, H, T, T]
          }
        };
      const PerSampleStats ps = analysis.run_batch(bs, acc, keep_examples);
      const auto t1 = std::chrono::steady_clock::now();
      store.write_per_sample(b0, B, ps.anchor_token, ps.anchor_share, ps.high_pairs);
      for (size_t k = 0; k < in_batch.size(); ++k) {
        const at::Tensor sel = at::stack(ex_sel[k], 1).contiguous();  // [R, L, H, T, T]
        std::vector<uint8_t> sel_bytes(size_t(sel.numel()));
        std::memcpy(sel_bytes.data(), sel.data_ptr(), sel_bytes.size());
        store.write_example(in_batch[k].first, half_bits(at::stack(ex_att[k])), half_bits(at::stack(ex_sim[k])), sel_bytes);
      }
      const auto t2 = std::chrono::steady_clock::now();
      compute_s += std::chrono::duration<double>(t1 - t0).count();
      store_s += std::chrono::duration<double>(t2 - t1).count();
      progress.update(b0 + B);
    }
  }
  progress.finish();
  const auto bad = check_invariants(acc);
  if (!bad.empty()) throw std::logic_error("statistics invariant violated: " + bad.front());
  const auto t_store = std::chrono::steady_clock::now();
  store.write_statistics(acc, c.statistics.attention_threshold, c.statistics.separators);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  store.finish(utc_now(), total);
  store_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_store).count();
  std::ostringstream timing;
  timing.precision(3);
  timing << "done: " << N << " samples in " << total << " s (compute " << compute_s << " s, " << (compute_s > 0 ? N / compute_s : 0)
         << " samples/s; store " << store_s << " s); wrote " << store_path;
  log_info(timing.str());
  return print_summary(store_path, SummaryOptions{}, out);
}

}  // namespace ctxsim
