// `ctxsim run`: one job, or every point of a sweep in turn. A job is a straight line of phases
// over the shared job machinery: plan (config, and what to do with the output folder) → inputs
// (samples, model, options) → store (created or resumed) → the rounds over the work units
// (job/rounds.h, with the analysis as their work) → finish (statistics, timings, report, summary).
// A new CPU run's weights start loading before MPI does (the early load), beside its plan.
#include <malloc.h>

#include <filesystem>
#include <future>
#include <optional>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/run_units.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/config/sweep.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/durable/run_lock.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/provenance.h"
#include "pipeline/job/parallel/rounds.h"
#include "pipeline/job/parallel/signals.h"
#include "pipeline/store/store.h"
#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/stopwatch.h"
#include "stages/figures/render.h"
#include "stages/model/model.h"
#include "stages/model/safetensors.h"
#include "stages/stats/analysis.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

// ------------------------------------------------------------------------ plan ------------
// What a run checks in its config beyond the shell's checks, and where this rank computes.
at::Device run_device(const Config& c, MpiComm& world) {
  const at::Device device = compute_device(name_of(c.runtime.device), world.local_rank(), c.where("runtime.device"));
  if (c.output.report && !figures_available())
    throw Error(c.where("output.report"), "this ctxsim was built without figures (-DCTXSIM_FIGURES=OFF), so it cannot write the report",
                "set output.report=false (make the report elsewhere with 'ctxsim report'), or reconfigure with -DCTXSIM_FIGURES=ON");
  // A dtype the CPU would only emulate stops the run here.
  require_native_dtype(c.model.dtype, c.where("model.dtype"), device.is_cpu());
  return device;
}

// --------------------------------------------------------------- the early load ------------
// A new run on the CPU starts loading its weights, and rank 0 hashing them, before MPI starts:
// Open MPI takes 0.15 s to start a process no launcher started (it forks its orted and waits
// for it), and the load is the longest part of the start-up. Whatever goes wrong in the load is
// kept in the future and reported where the load is awaited, as before.
struct LoadedModel {
  TransformerEncoder model;
  LoadReport report;
};

std::future<LoadedModel> load_weights(const std::string& model_dir, Precision dtype, at::Device device) {
  return std::async(std::launch::async, [=] {
    LoadReport report;
    TransformerEncoder model = TransformerEncoder::load(model_dir, torch_dtype(dtype), &report, device);
    return LoadedModel{std::move(model), std::move(report)};
  });
}

struct EarlyLoad {
  std::string model_dir;
  std::future<LoadedModel> model;
  std::future<std::string> weights_sha256;
};

std::future<std::string> hash_weights(const std::string& model_dir) {
  return std::async(std::launch::async, [folder = ModelFolder(model_dir)] { return folder.weights_sha256(); });
}

// Only where nothing the load does can depend on MPI or on the plan: a CPU run whose config is
// valid so far and whose output folder holds no store yet (a resume, a finished run and a refusal
// all have one). Anything else loads after the plan, as before.
EarlyLoad start_early_load(const Config& c) {
  EarlyLoad e;
  const std::string device = name_of(c.runtime.device);
  if (!c.sweep.empty() || !(device == "cpu" || (device == "auto" && !at::hasCUDA()))) return e;
  try {
    check_paths(c);
    require_native_dtype(c.model.dtype, "model.dtype");
    e.model_dir = model_dir(c);
  } catch (const std::exception&) {
    return EarlyLoad{};  // the plan says what is wrong, once, across ranks
  }
  std::error_code ec;
  if (e.model_dir.empty() || fs::exists(fs::path(c.output.dir) / "store.h5", ec) || ec) return EarlyLoad{};
  e.model = load_weights(e.model_dir, c.model.dtype, at::kCPU);
  if (launcher_rank() == 0) e.weights_sha256 = hash_weights(e.model_dir);
  return e;
}

// ---------------------------------------------------------------------- inputs ------------
struct RunInputs {
  int threads = 0;
  at::Device device = at::kCPU;  // where this rank computes (runtime.device)
  PreparedSamples prepared;
  std::optional<JobTokenizer> tokenizer;
  std::optional<TransformerEncoder> model;
  LoadReport report;
  std::future<std::string> weights_sha256;  // rank 0 of a new store
  StatisticsOptions options;
  std::vector<int64_t> examples;
};

void check_inputs(const Config& c, RunInputs& in) {
  const ModelConfig& mc = in.model->config();
  check_positions(c, mc.max_tokens());
  check_vocab_fits(c, in.tokenizer->vocab(), mc.vocab_size);
  for (int64_t e : c.statistics.examples) {
    if (e >= in.prepared.samples.size())
      throw Error(c.where("statistics.examples"),
                  "sample " + std::to_string(e) + " does not exist (" + std::to_string(in.prepared.samples.size()) + " samples)",
                  "list sample ids below the sample count");
    in.examples.push_back(e);
  }
}

RunInputs load_inputs(MpiComm& world, const JobPlan& p, at::Device device, EarlyLoad early) {
  RunInputs in;
  in.device = device;
  const Config& c = p.config;
  on_every_rank(world, [&] {
    if (fault_here("setup", world.rank()))
      throw Error(c.where("corpus.path"), "injected fault: the corpus is unreadable on this rank", "test hook");
    in.threads = configure_threads(c.runtime.threads, world.local_size());
    if (const std::string note = thread_cap_note(c.runtime.threads, in.threads, "runtime.threads"); !note.empty()) log_info(note);
    log_info(version_string() + "; config " + p.config_path + "; " + std::to_string(world.size()) + " rank(s) x " +
             std::to_string(in.threads) + " thread(s)" + busy_cores_note() + ", " + device_name(device) + "; " +
             configure_compute_libraries().describe() + "; idle threads: " + openmp_wait_policy());
    // The weights load (and, for a new store, are hashed) while the corpus is read and the
    // samples drawn: the three are independent, and together they are most of the start-up.
    // They may have started before MPI (the early load).
    const bool early_model = early.model.valid() && device.is_cpu() && early.model_dir == p.model_dir;
    std::future<LoadedModel> loading = early_model ? std::move(early.model) : load_weights(p.model_dir, c.model.dtype, device);
    if (p.mode == StoreMode::Create && world.rank() == 0)
      in.weights_sha256 = early_model && early.weights_sha256.valid() ? std::move(early.weights_sha256) : hash_weights(p.model_dir);
    in.tokenizer.emplace(make_tokenizer(c));
    in.prepared = prepare_samples(c, *in.tokenizer);
    LoadedModel loaded = loading.get();
    in.model.emplace(std::move(loaded.model));
    in.report = std::move(loaded.report);
    check_inputs(c, in);
    in.options = statistics_options(c, *in.tokenizer);
  });
  // What the set-up freed (the corpus text and its tokenization, load buffers) goes back to the
  // system before the long part: glibc keeps freed memory under our trim threshold (main.cpp).
  malloc_trim(0);
  if (!in.report.unexpected.empty())
    log_info("warning: tensors in " + p.model_dir + "/model.safetensors that the encoder does not use: " + join(in.report.unexpected, " "));
  const SampleSet& s = in.prepared.samples;
  const ModelConfig& mc = in.model->config();
  log_info("samples: " + std::to_string(s.size()) + " of " + std::to_string(s.num_candidates) +
           " candidates, T=" + std::to_string(s.seq_len) + "; model " + p.model_dir + " (" + family_spec(mc.family).model_type + ", " +
           std::to_string(mc.num_layers) + " layers, " + std::to_string(mc.num_heads) + " heads, " + name_of(c.model.dtype) + ")");
  return in;
}

// ----------------------------------------------------------------------- store ------------
// The accumulator, the units and which are done, and the store: created, or opened to resume.
struct RunState {
  Accumulator acc;  // rank 0: every unit so far; other ranks: theirs since the last flush
  std::vector<WorkUnit> units;
  std::vector<uint8_t> done;
  std::optional<Store> store;
  int64_t generation = 0;  // of the resume state last written
};

StoreAttributes store_attributes(MpiComm& world, const JobPlan& p, RunInputs& in, const std::string& vocab_path,
                                 const std::string& vocab_text, const Communicator& reducer) {
  std::string model_sha256;  // rank 0 hashed the weights while the inputs loaded
  on_every_rank(world, [&] {
    if (world.rank() == 0) model_sha256 = in.weights_sha256.get();
  });
  StoreAttributes a =
      job_attributes(world, p, {model_sha256, vocab_path, vocab_text, in.prepared.corpus_sha256, in.prepared.documents, in.threads});
  a.vector_kind = name_of(p.config.model.vector);
  const FamilySpec& family = family_spec(in.model->config().family);
  a.family = family.model_type;
  a.causal = family.causal;
  a.devices = std::to_string(world.size()) + " x " + (in.device.is_cpu() ? "cpu" : "cuda") + ", reductions over " + reducer.name();
  return a;
}

RunState open_store(MpiComm& world, const JobPlan& p, RunInputs& in, const Analysis& analysis, const Communicator& reducer) {
  const Config& c = p.config;
  const SampleSet& samples = in.prepared.samples;
  const ModelConfig& mc = in.model->config();
  RunState st;
  st.acc = Accumulator(analysis.shape(samples.seq_len));
  st.units = make_units(samples.size(), c.runtime.unit_size);
  st.done.assign(st.units.size(), 0);
  if (const std::string idle = idle_ranks_warning(samples.size(), c.runtime.unit_size, world.size()); !idle.empty())
    log_info("warning: " + idle);
  const StoreLayout layout{samples.size(), samples.seq_len, mc.num_layers,           mc.num_heads, mc.vocab_size, c.selection,
                           in.examples,    st.acc.fields(), int64_t(st.units.size())};
  const StoreStart start = start_store(world, p, st.units.size(), store_bytes(layout), "units");
  st.done = start.done, st.generation = start.generation;
  if (start.resumed) {
    if (world.rank() == 0) {
      CTXSIM_CHECK(p.checkpoint->acc.size() == st.acc.buffer().size(), "resume state does not match the plan");
      st.acc.buffer() = p.checkpoint->acc;
    }
    st.store.emplace(Store::open(p.store_path, world.mpi(), world.rank(), layout));
    return st;
  }
  const std::string vocab_path = ctxsim::vocab_path(c);
  const std::string vocab_text = ctxsim::vocab_text(c);
  const StoreAttributes attrs = store_attributes(world, p, in, vocab_path, vocab_text, reducer);
  st.store.emplace(Store::create(p.store_path, world.mpi(), world.rank(), layout, attrs, samples, vocab_text));
  return st;
}

// ---------------------------------------------------------------------- finish ------------
// Invariants, the aggregates, timings and the complete flag; the resume state goes.
void finish_run_store(MpiComm& world, const JobPlan& p, const RunInputs& in, RunState& st, const RoundTimes& rounds,
                      const AnalysisUnits& work, const Stopwatch& clock, int64_t n_samples) {
  std::string bad;
  if (world.rank() == 0) {
    const auto v = check_invariants(st.acc);
    if (!v.empty()) bad = v.front();
  }
  bad = broadcast_string(world, bad);
  if (!bad.empty()) {
    if (world.rank() == 0) log_error("statistics invariant violated: " + bad + " (a bug: please report it)");
    throw JobExit(kExitInternal);
  }
  const Stopwatch writing;
  std::vector<std::string> separator_tokens;
  for (int64_t id : ctxsim::separator_tokens(in.options)) separator_tokens.emplace_back(in.tokenizer->vocab().token(int32_t(id)));
  st.store->write_statistics(st.acc, p.config.statistics.attention_threshold, p.config.statistics.separators, separator_tokens);
  // Per-rank compute seconds, the same string on every rank (attributes are collective).
  std::vector<int64_t> ms(size_t(world.size()), 0);
  ms[size_t(world.rank())] = int64_t(rounds.compute * 1000);
  world.allreduce(ms.data(), ms.size(), ReduceOp::Sum);
  st.store->set_attribute("per_rank_seconds", join_each(
                                                  ms, [](int64_t v) { return std::to_string(double(v) / 1000.0); }, " "));
  // Rank 0's accumulator is what /stats holds: its digest lets every reader tell a changed bit.
  st.store->set_attribute("stats_sha256", broadcast_string(world, world.rank() == 0 ? st.acc.digest() : std::string()));
  const double total = clock.seconds();
  finish_store(world, p, *st.store, total, std::to_string(n_samples) + " samples", [&] {
    std::ostringstream details;
    details.precision(3);
    details << "(compute " << rounds.compute << " s on rank 0; store writes " << rounds.write + writing.seconds() << " s, progress flushes "
            << rounds.durable << " s)";
    return details.str();
  });
  st.store.reset();
  log_info(work.batch_times().describe() + " (rank 0)");
}

// ------------------------------------------------------------------------- job ------------
class RunJob : public Job {
 public:
  explicit RunJob(EarlyLoad early) : early_(std::move(early)) {}
  void check(const JobPlan& plan, MpiComm& world) override { device_ = run_device(plan.config, world); }
  int execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) override;

 private:
  EarlyLoad early_;
  at::Device device_ = at::kCPU;
};

int RunJob::execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream&) {
  // GPU float32 matmuls: full precision unless model.tf32 (TF32 rounds inputs to a 10-bit mantissa).
  at::globalContext().setAllowTF32CuBLAS(plan.config.model.tf32);
  at::globalContext().setAllowTF32CuDNN(plan.config.model.tf32);
  RunInputs in = load_inputs(world, plan, device_, std::move(early_));
  // The large reductions: NCCL on GPU ranks of a build with it (CTXSIM_CUDA), else MPI.
  std::unique_ptr<Communicator> nccl;
  on_every_rank(world, [&] { nccl = make_reduction_comm(world, device_.is_cuda()); });
  Communicator& reducer = nccl ? *nccl : static_cast<Communicator&>(world);

  const Analysis analysis(*in.model, in.options, plan.config.model.vector == HeadVector::Projected, plan.config.runtime.attention_rows);
  RunState st = open_store(world, plan, in, analysis, reducer);
  const SampleSet& samples = in.prepared.samples;
  AnalysisUnits work(analysis, samples, plan.config.runtime.batch_size, in.examples, *st.store, st.acc, world, reducer,
                     ResumeTarget{plan.progress_path, plan.identity_hash, st.generation});
  Progress progress(samples.size(), plan.config.runtime.progress_seconds, world.rank() == 0);
  const RoundOptions options{plan.config.runtime.flush_units, plan.config.runtime.flush_seconds};
  const RoundTimes times = run_rounds(world, st.units, st.done, options, work, stop, progress);
  finish_run_store(world, plan, in, st, times, work, clock, samples.size());
  return kExitOk;  // the shell makes the report once the model and samples are freed
}

int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out, EarlyLoad early) {
  RunJob job(std::move(early));
  return run_in_shell(job_kind_named("run"), config_path, overrides, job, out);
}

}  // namespace

int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out) {
  return run_job(config_path, overrides, out, EarlyLoad{});
}

int cmd_run(const std::string& path, const std::vector<std::string>& overrides, int64_t sweep_index, std::ostream& out) {
  std::optional<Config> config;
  try {
    config = load_config(path, overrides);
  } catch (const Error&) {}
  EarlyLoad early = config && sweep_index < 0 ? start_early_load(*config) : EarlyLoad{};
  MpiSession::ensure();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  set_log_rank(rank, size);
  if (!config) return run_job(path, overrides, out);  // reports the error once, across ranks
  const Config& c = *config;
  if (c.sweep.empty()) {
    if (sweep_index >= 0) throw Error("--sweep-index", path + " has no sweep: section", "drop --sweep-index, or add a sweep: section");
    return run_job(path, overrides, out, std::move(early));
  }
  const SweepPlan plan = expand_sweep(c);
  const auto run_point = [&](const SweepPoint& p) {
    std::vector<std::string> all = overrides;
    all.insert(all.end(), p.overrides.begin(), p.overrides.end());
    log_info("sweep " + plan.name + ": point " + std::to_string(p.index) + " of " + std::to_string(plan.points.size()) + ": " + p.name);
    record_sweep_point(plan.name, p.index, p.values);
    return run_job(path, all, out);
  };
  if (sweep_index >= 0) {
    if (sweep_index >= int64_t(plan.points.size()))
      throw Error("--sweep-index " + std::to_string(sweep_index), "the sweep has " + std::to_string(plan.points.size()) + " points",
                  "use an index from 0 to " + std::to_string(plan.points.size() - 1) + " ('ctxsim sweep CONFIG' lists them)");
    return run_point(plan.points[size_t(sweep_index)]);
  }
  for (const auto& p : plan.points) {
    const int rc = run_point(p);
    if (rc != 0) return rc;
  }
  return 0;
}

}  // namespace ctxsim
