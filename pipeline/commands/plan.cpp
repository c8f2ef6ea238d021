// `ctxsim plan CONFIG [--ranks N]`: what a run will take before it is submitted — samples and
// units, memory per rank, store size, and a time estimate from a short measured calibration
// (a few real batches through the whole pipeline on this machine).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/segment_inputs.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/work_units.h"
#include "pipeline/store/segment_store.h"
#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/stopwatch.h"
#include "stages/model/family.h"
#include "stages/model/model.h"
#include "stages/model/transformer_layer.h"  // attention_tile_size
#include "stages/segment/document.h"
#include "stages/stats/analysis.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

double dtype_bytes(Precision p) { return p == Precision::Float64 ? 8 : p == Precision::BFloat16 ? 2 : 4; }

// The encoder's parameters (every tensor of encoder_tensor_shapes).
double parameter_count(const ModelConfig& mc) {
  double params = 0;
  for (const auto& [name, shape] : encoder_tensor_shapes(mc)) {
    double n = 1;
    for (auto d : shape) n *= double(d);
    params += n;
  }
  return params;
}

std::string bytes_text(double b) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  if (b >= 1e9)
    s << b / 1e9 << " GB";
  else if (b >= 1e6)
    s << b / 1e6 << " MB";
  else
    s << b / 1e3 << " kB";
  return s.str();
}

}  // namespace

// The plan of a segmentation job (a config with a segment: section): the benchmark, the store,
// and a time estimate from the first `calibration` documents through the model and every method.
ResourceEstimate plan_segment_job(const std::string& path, const Config& c, int64_t ranks, int64_t calibration, std::ostream& out) {
  const std::string dir = model_dir(c);
  if (dir.empty()) throw Error(c.where("model.path"), "planning needs the model", "set model.path or model.name");
  require_native_dtype(c.model.dtype, c.where("model.dtype"), true);
  JobTokenizer tokenizer = make_tokenizer(c);
  const TokenizedInputs text = read_and_tokenize(c, tokenizer);
  const TransformerEncoder model = TransformerEncoder::load(dir, torch_dtype(c.model.dtype));
  const int32_t window = segment_window(c, model.config());
  check_vocab_fits(c, tokenizer.vocab(), model.config().vocab_size);
  const Benchmark bench = make_benchmark(c, text.corpus);
  const int threads = configure_threads(c.runtime.threads, 1);
  SegmentLayout layout;
  layout.documents = int64_t(bench.documents.size());
  for (const auto& d : bench.documents) layout.max_gaps = std::max<int64_t>(layout.max_gaps, d.total_sentences - 1);
  layout.layers = model.config().num_layers, layout.heads = model.config().num_heads;
  layout.methods = segment::method_names(layout.layers);
  layout.example_sentences = bench.documents.empty() ? 0 : bench.documents[0].total_sentences;
  const segment::MethodOptions options = segment_method_options(c, tokenizer);
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(calibration, layout.documents));
  const Stopwatch clock;
  for (int64_t d = 0; d < n; ++d) benchmark_document(c, bench, text.corpus, size_t(d), model, tokenizer.frame, options, window);
  const double per_document = clock.seconds() / double(n);
  const double eta = double(layout.documents) * per_document / double(ranks) * 1.15 + 60;
  // Weights, one window's attention maps and activations (a document at a time), the benchmark.
  const ModelConfig& mc = model.config();
  const double params = parameter_count(mc);
  const double T = double(window), H = double(mc.num_heads);
  const double memory =
      params * dtype_bytes(c.model.dtype) + double(mc.num_layers) * 8.0 * H * T * T * 8 + 6.0 * T * mc.intermediate_size * 4 + 400e6;
  out << "plan for " << path << " (a segmentation job: ctxsim segment) on " << ranks << " rank(s) x " << threads << " thread(s)\n"
      << "  benchmark:      " << layout.documents << " test documents (" << join(bench.subsets) << "), " << layout.methods.size()
      << " methods; one document per unit, " << (layout.documents + ranks - 1) / ranks << " rounds\n"
      << "  model:          " << layout.layers << " layers x " << layout.heads << " heads, window T=" << window << ", "
      << name_of(c.model.dtype) << "\n"
      << "  memory / rank:  ~" << bytes_text(memory) << "\n"
      << "  store:          ~" << bytes_text(segment_store_bytes(layout)) << " in " << (fs::path(c.output.dir) / "store.h5").string()
      << "\n"
      << "  calibration:    " << n << " document(s) in " << std::fixed << std::setprecision(2) << clock.seconds() << " s on this machine\n"
      << "  time estimate:  ~" << format_duration(eta) << " (with 15% and 1 min of margin; ask SLURM for more: --time)\n";
  return {memory, eta};
}

ResourceEstimate plan_config(const std::string& path, const Config& c, int64_t ranks, int64_t batches, std::ostream& out) {
  check_paths(c);
  const JobRow& job = job_row(job_kind_of(c));
  if (!job.plan) {
    std::vector<std::string> planned;
    for (const JobRow& r : job_rows())
      if (r.plan) planned.push_back(std::string(r.name) + " configs");
    throw Error(path, "plan estimates " + join(planned, " and ") + ", and this is a '" + job.name + "' config",
                "time a short job instead (pretrain.steps or samples.num_samples lowered), and give submit --time and --mem");
  }
  return job.plan(path, c, ranks, batches, out);
}

// The largest memory of one layer of a batch: its activations (hidden states, the fused
// projections, the feed-forward's inner layer), the attention (the scores and probabilities of the
// whole [B, H, T, T] maps with a causal family's [B, 1, T, T] mask, or of one [H, rows, T] tile),
// and the statistics (per thread one head's T x T similarity and selection mask; the vectors). A
// batch holding a stored example hands its whole maps and similarity to the example hook, and a
// GPU rank takes whole maps: then those are the peak.
struct LayerMemory {
  int64_t tile_rows = 0;      // 0: whole maps
  bool example_maps = false;  // whole maps because a batch holds a stored example
  double hidden = 0, attention = 0, similarity = 0;
  double total() const { return hidden + attention + similarity; }
};

LayerMemory layer_memory(const Config& c, const ModelConfig& mc, int64_t B, int64_t T, int64_t threads) {
  const double bytes = dtype_bytes(c.model.dtype), sim_bytes = c.model.dtype == Precision::Float64 ? 8 : 4;
  const double H = double(mc.num_heads), t = double(T);
  LayerMemory m;
  m.example_maps = !c.statistics.examples.empty();
  const int64_t rows = m.example_maps || c.runtime.device == Device::Cuda ? 0 : attention_tile_rows(c.runtime.attention_rows, T);
  m.tile_rows = rows > 0 ? attention_tile_size(rows, T) : 0;  // as the forward makes them
  m.hidden = double(B) * t * (10.0 * double(mc.hidden_size) + 4.0 * double(mc.intermediate_size)) * bytes;
  const bool causal = family_spec(mc.family).causal;
  m.attention = m.tile_rows > 0 ? 3.0 * H * double(m.tile_rows) * t * bytes : double(B) * (2.0 * H + (causal ? 1.0 : 0.0)) * t * t * bytes;
  if (m.example_maps) m.attention += double(B) * H * t * t * sim_bytes;  // the hook's [B, H, T, T] similarity
  m.similarity = double(threads) * t * (t + 16) * (sim_bytes + 1) + 4.0 * double(B) * H * t * double(mc.head_dim()) * sim_bytes;
  return m;
}

// The plan of a run: samples and units, memory, the store, and a time estimate from a few batches.
ResourceEstimate plan_run_job(const std::string& path, const Config& c, int64_t ranks, int64_t batches, std::ostream& out) {
  const std::string dir = model_dir(c);
  if (dir.empty()) throw Error(c.where("model.path"), "planning needs the model", "set model.path or model.name");
  JobTokenizer tokenizer = make_tokenizer(c);
  const PreparedSamples prepared = prepare_samples(c, tokenizer);
  const SampleSet& s = prepared.samples;
  require_native_dtype(c.model.dtype, c.where("model.dtype"));
  const TransformerEncoder model = TransformerEncoder::load(dir, torch_dtype(c.model.dtype));
  const ModelConfig& mc = model.config();
  const int threads = configure_threads(c.runtime.threads, 1);
  if (const std::string note = thread_cap_note(c.runtime.threads, threads, "runtime.threads"); !note.empty())
    std::cerr << "ctxsim: " << note << "\n";
  const int64_t N = s.size(), T = s.seq_len, R = int64_t(c.selection.size());
  const int64_t B = std::max<int64_t>(1, std::min({c.runtime.batch_size, c.runtime.unit_size, N}));  // a batch stays in its unit
  const int64_t L = mc.num_layers, H = mc.num_heads, V = mc.vocab_size, E = int64_t(c.statistics.examples.size());
  const auto units = make_units(N, c.runtime.unit_size);
  const double dsize = dtype_bytes(c.model.dtype);
  const double params = parameter_count(mc);
  const double acc_bytes = 8.0 * double(R * L * H * (V + T + 12) + T + 8 + 2 * L * H);
  const LayerMemory layer = layer_memory(c, mc, B, T, threads);
  const double activations = layer.total();
  const double memory = params * dsize + activations + 2 * acc_bytes + double(N * T) * 10 + 400e6 /* corpus, runtime */;
  const double store = double(N * T) * 8 + double(N) * 24 + double(R * N * L * H) * 12 + acc_bytes + double(E * L * H * T * T) * (4 + R);

  // Calibration: the first batches of real samples through forward + statistics.
  const Analysis analysis(model, statistics_options(c, tokenizer), c.model.vector == HeadVector::Projected, c.runtime.attention_rows);
  Accumulator acc(analysis.shape(T));
  const int64_t runs = batches == 0 ? -1 : std::max<int64_t>(1, std::min<int64_t>(batches, (N + B - 1) / B));  // 0: none
  double secs = 0;
  int64_t done = 0;
  for (int64_t k = 0; k <= runs; ++k) {  // k = 0 warms up
    const int64_t b0 = (k * B) % std::max<int64_t>(1, N - B + 1), n = std::min(B, N - b0);
    const Stopwatch clock;
    analysis.run_batch(BatchSamples::of(s, b0, n), acc);
    if (k > 0) {
      secs += clock.seconds();
      done += n;
    }
  }
  const double rate = done > 0 ? double(done) / secs : 0;  // samples/s of one rank with `threads` threads
  const double eta = done > 0 ? double(N) / (rate * double(ranks)) * 1.15 + 60 : 0;
  out << "plan for " << path << " on " << ranks << " rank(s) x " << threads << " thread(s)\n"
      << "  samples:        " << N << " (T=" << T << "), " << units.size() << " units of " << c.runtime.unit_size << ", "
      << (units.size() + size_t(ranks) - 1) / size_t(ranks) << " rounds\n"
      << "  model:          " << L << " layers x " << H << " heads, " << std::fixed << std::setprecision(1) << params / 1e6
      << " M parameters, " << name_of(c.model.dtype) << "\n"
      << "  memory / rank:  ~" << bytes_text(memory) << " (weights " << bytes_text(params * dsize) << ", accumulators "
      << bytes_text(2 * acc_bytes) << ", batch of " << B << " " << bytes_text(activations) << ": attention "
      << (layer.tile_rows > 0   ? "in tiles of " + std::to_string(layer.tile_rows) + " rows "
          : !layer.example_maps ? "maps "
                                : "maps (a batch with a stored example) ")
      << bytes_text(layer.attention) << ", similarity " << bytes_text(layer.similarity) << ")\n"
      << "  store:          ~" << bytes_text(store) << " in " << (fs::path(c.output.dir) / "store.h5").string() << "\n"
      << "  calibration:    ";
  if (done == 0)
    out << "none (--batches 0): no time estimate\n";
  else
    out << done << " samples in " << std::setprecision(2) << secs << " s: " << rate << " samples/s per rank on this machine\n"
        << "  time estimate:  ~" << format_duration(eta) << " (with 15% and 1 min of margin; ask SLURM for more: --time)\n";
  if (const std::string idle = idle_ranks_warning(N, c.runtime.unit_size, ranks); !idle.empty())
    out << "  warning:        " << idle << "\n";
  return {memory, eta};
}

int cmd_plan(const std::string& path, const std::vector<std::string>& overrides, int64_t ranks, int64_t batches, std::ostream& out) {
  (void)plan_config(path, load_config(path, overrides), ranks, batches, out);
  return 0;
}

}  // namespace ctxsim
