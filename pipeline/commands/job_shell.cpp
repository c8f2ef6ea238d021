#include "pipeline/commands/job_shell.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "ctxsim_revision.h"
#include "pipeline/commands/commands.h"
#include "pipeline/commands/summary.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"
#include "stages/base/model_folder.h"

#include "pipeline/job/config/inputs.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/provenance.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace fs = std::filesystem;

namespace ctxsim {

namespace {

// Rank 0, under the lock: what to do with what output.dir holds.
StoreMode decide(JobPlan& t) {
  const Config& c = t.config;
  const JobKind kind = t.kind;
  std::optional<Checkpoint>& checkpoint = t.checkpoint;
  if (c.output.overwrite) return StoreMode::Create;
  const StoreInfo existing = inspect_store(t.store_path);
  if (!existing.exists()) return StoreMode::Create;
  if (existing.kind == StoreInfo::Kind::NotAStore)
    throw Error(c.where("output.dir"), t.store_path + " exists and is not a ctxsim store: " + existing.what,
                "move it away, choose another output.dir, or set output.overwrite=true to replace it");
  // A store of the other job in this folder is not this job's to resume, finish or answer for.
  const std::string job = kind.name();
  if (existing.job != job)
    throw Error(c.where("output.dir"), t.store_path + " holds the store of 'ctxsim " + existing.job + "', and this is 'ctxsim " + job + "'",
                "choose another output.dir, or set output.overwrite=true to replace it");
  const std::vector<std::string> differences = identity_differences(existing.config_yaml, c, kind);
  if (!differences.empty())
    throw Error(c.where("output.dir"), t.store_path + " holds a run with a different config: " + join(differences, "; "),
                "choose another output.dir, or set output.overwrite=true to replace it");
  // The same config over other inputs (new weights under the same model.path, an edited corpus)
  // is another run: resuming would mix the two, and a complete store would answer for the old.
  InputDigests now = input_digests(c);
  now.scores = t.scores_sha256;
  const std::vector<std::string> changed = changed_inputs({existing.model_sha256, existing.model_config_sha256, existing.vocab_sha256,
                                                           existing.corpus_sha256, existing.scores_sha256, existing.tokenizer_sha256},
                                                          now, c);
  if (!changed.empty())
    throw Error(c.where("output.dir"), t.store_path + " was made from other inputs: " + join(changed, "; ") + " changed since",
                "set output.overwrite=true to start over with the inputs as they are now, or choose another output.dir");
  if (existing.complete) return StoreMode::AlreadyDone;
  // An interrupted store of an older schema lacks datasets this ctxsim writes (schema 6's
  // statistics, the pruning store's score axis): resuming would write past them.
  if (existing.schema_version < store_schema_version()) {
    log_info(t.store_path + " was started by an older ctxsim (store schema " + std::to_string(existing.schema_version) +
             ", this one writes " + std::to_string(store_schema_version()) + "): starting it over");
    return StoreMode::Create;
  }
  checkpoint = read_checkpoint(t.progress_path);  // an unreadable or damaged one stops the job here
  if (!checkpoint) {
    log_info(t.store_path + " stopped before its first durable point (no resume state beside it): starting it over");
    return StoreMode::Create;
  }
  if (checkpoint->identity != t.identity_hash) {
    log_info(t.progress_path + " is the resume state of another config (an older ctxsim?): starting the run over");
    checkpoint.reset();
    return StoreMode::Create;
  }
  return StoreMode::Resume;
}

}  // namespace

StoreMode check_output_before_queueing(JobKind kind, const std::string& config_path, const Config& c) {
  const JobRow& row = job_row(kind);
  if (!row.writes_store) return StoreMode::Create;
  JobPlan p;
  p.kind = kind;
  p.config_path = config_path;
  p.config = c;
  p.identity = identity_yaml(c, kind);
  p.identity_hash = sha256_bytes(reinterpret_cast<const uint8_t*>(p.identity.data()), p.identity.size());
  p.store_path = (fs::path(c.output.dir) / "store.h5").string();
  p.progress_path = checkpoint_path(p.store_path);
  return decide(p);
}

namespace {

// Collective: the config and its checks, then rank 0 takes the lock and decides; every rank
// gets the mode.
JobPlan plan_job(MpiComm& world, JobKind kind, const std::string& config_path, const std::vector<std::string>& overrides, Job& job) {
  const JobRow& row = job_row(kind);
  JobPlan p;
  p.kind = kind;
  p.config_path = config_path;
  on_every_rank(world, [&] {
    Config& c = p.config;
    c = load_config(config_path, overrides);
    check_paths(c);
    if (row.needs_model) {
      p.model_dir = model_dir(c);
      if (p.model_dir.empty()) throw Error(c.where("model.path"), std::string("'ctxsim ") + row.name + "' needs a model", row.model_fix);
    }
    p.identity = identity_yaml(c, kind);
    p.identity_hash = sha256_bytes(reinterpret_cast<const uint8_t*>(p.identity.data()), p.identity.size());
    if (row.writes_store) {
      p.store_path = (fs::path(c.output.dir) / "store.h5").string();
      p.progress_path = checkpoint_path(p.store_path);
    }
    job.check(p, world);  // the plan so far (identity, paths) is the job's to read
    p.scores_sha256 = job.scores_sha256();
  });
  p.provenance = session_provenance(world);
  int64_t mode = int64_t(StoreMode::Create);
  on_every_rank(world, [&] {
    if (world.rank() != 0) return;
    p.lock = std::make_unique<RunLock>(p.config.output.dir, p.config.where("output.dir"));
    if (row.writes_store) mode = int64_t(decide(p));
  });
  world.broadcast(&mode, sizeof mode, 0);
  p.mode = StoreMode(mode);
  return p;
}

// config.yaml beside a complete store: the effective config, every key (defaults filled in), so
// that the store says in plain text what made it and `ctxsim run DIR/config.yaml` from the same
// working folder finds it complete. A config.yaml ctxsim did not write (a user's own) stays.
constexpr const char* kConfigBesideMarker = "# The effective config of store.h5 beside it, written by ctxsim";

void write_config_beside(const JobPlan& plan) {
  const std::string path = (fs::path(plan.config.output.dir) / "config.yaml").string();
  std::error_code ec;
  if (fs::exists(path, ec)) {
    const std::string head = read_file_bytes(path, kMaxConfigBytes).substr(0, std::string(kConfigBesideMarker).size());
    if (head != kConfigBesideMarker) {
      log_info("note: " + path + " is not ctxsim's; it stays as it is (the store's config is its `config` attribute)");
      return;
    }
  }
  Config c = plan.config;
  c.output.overwrite = false;  // a rerun of it finds the store complete, whatever this run was told
  // A sweep point says which, and its swept values (its folder's name need not carry them).
  std::string point;
  const auto attribute = [&](const char* name) {
    for (const auto& [k, v] : plan.provenance)
      if (k == name) return v;
    return std::string();
  };
  if (!attribute("sweep").empty()) {
    std::string values = attribute("sweep_point");
    std::replace(values.begin(), values.end(), '\n', ' ');
    point = "# sweep " + attribute("sweep") + ", point " + attribute("sweep_index") + ": " + values + "\n";
  }
  atomic_write(path, std::string(kConfigBesideMarker) + " (from " + plan.config_path + "; ctxsim " + std::string(job_row(plan.kind).name) +
                         " " + path + " reruns it)\n" + point + to_yaml(c, false));
}

// Rank 0, a store's job done: its config.yaml, its report when output.report asks for one, then
// its summary.
int end_of_store_job(const JobPlan& plan, bool already_done, std::ostream& out) {
  const Config& c = plan.config;
  write_config_beside(plan);
  const bool report = c.output.report && (!already_done || !fs::exists(fs::path(c.output.dir) / "report.html"));
  if (already_done)
    // A job killed while it wrote its report left the store complete and no page: make it now.
    log_info(plan.store_path + " is already complete for this config" +
             (report ? ", but its report is missing: writing it" : "; its summary:"));
  if (report) {
    malloc_trim(0);  // what the job freed (its model, its samples) goes back before the report
    write_job_report(c, plan.store_path);
  }
  return print_summary(plan.store_path, SummaryOptions{}, out);
}

}  // namespace

int run_in_shell(JobKind kind, const std::string& config_path, const std::vector<std::string>& overrides, Job& job, std::ostream& out) {
  const Stopwatch clock;
  MpiSession::ensure();
  MpiComm world(MPI_COMM_WORLD);
  set_log_rank(world.rank(), world.size());
  const StopSignals stop;
  JobPlan plan = plan_job(world, kind, config_path, overrides, job);
  const h5::FileScope scope(plan.store_path);  // HDF5's errors from here on name the store
  if (plan.mode == StoreMode::AlreadyDone) return world.rank() == 0 ? end_of_store_job(plan, true, out) : kExitOk;
  const int rc = job.execute(world, plan, stop, clock, out);
  if (rc != kExitOk || world.rank() != 0 || !job_row(kind).writes_store) return rc;
  return end_of_store_job(plan, false, out);
}

void write_job_report(const Config& c, const std::string& store_path) {
  std::ostringstream report_line;
  ReportArgs args;
  args.max_bytes = c.output.report_max_bytes;
  args.overwrite = c.output.overwrite;  // the user asked for this folder's outputs to be replaced
  try {
    cmd_report(store_path, args, report_line);
  } catch (const Error& e) {
    // The job's results are safe: say so, and how to get the report without rerunning.
    throw Error(e.where(), "the job finished and its store is complete, but the report failed: " + e.problem(),
                (e.fix().empty() ? std::string() : e.fix() + "; then ") + "ctxsim report " + store_path + " makes it without rerunning");
  }
  log_info(report_line.str().substr(0, report_line.str().find('\n')));
}

StoreAttributes job_attributes(MpiComm& world, const JobPlan& plan, const JobFacts& f) {
  CTXSIM_CHECK(job_row(plan.kind).writes_store, "a store is a run's or a segmentation's");
  const Config& c = plan.config;
  StoreAttributes a;
  a.kind = job_row(plan.kind).name;
  // Rank 0's, as the weights' digest: attributes are written collectively, with one value.
  std::string config_digest;
  on_every_rank(world, [&] {
    if (world.rank() == 0 && !plan.model_dir.empty()) config_digest = model_config_sha256(plan.model_dir);
  });
  a.model_config_sha256 = broadcast_string(world, config_digest);
  a.model_sha256 = broadcast_string(world, f.model_sha256);
  a.config_yaml = plan.identity;
  a.config_path = plan.config_path;
  a.model_path = plan.model_dir;
  a.vocab_path = f.vocab_path;
  a.vocab_sha256 = sha256_bytes(reinterpret_cast<const uint8_t*>(f.vocab_text.data()), f.vocab_text.size());
  a.tokenizer_sha256 = tokenizer_sha256(c);
  a.corpus_sha256 = f.corpus_sha256;
  a.corpus = name_of(c.corpus.format) + ":" + c.corpus.path + " (" + std::to_string(f.corpus_documents) + " documents)";
  a.version = version_string();
  a.git_revision = CTXSIM_GIT_REVISION;
  a.started = utc_now();
  a.dtype = name_of(c.model.dtype);
  a.ranks = world.size();
  a.threads = f.threads;
  a.isa = configure_compute_libraries().describe() + " (rank 0)";
  a.session = plan.provenance;
  a.scores_sha256 = plan.scores_sha256;
  return a;
}

void check_one_cpu_configuration(const Config& c, const std::string& job) {
  require_native_dtype(c.model.dtype, c.where("model.dtype"), true);
  if (!c.sweep.empty())
    throw Error(c.where("sweep"), job + " runs one configuration; a sweep: section is for 'ctxsim run' and 'ctxsim submit'",
                "remove the sweep: section and run each point with its overrides ('ctxsim sweep CONFIG' lists them)");
  if (c.runtime.device == Device::Cuda)
    throw Error(c.where("runtime.device"), job + " runs its model on the CPU (GPU ranks are for 'ctxsim run')",
                "set runtime.device=cpu (or auto)");
}

StoreAttributes cpu_job_attributes(MpiComm& world, const JobPlan& p, const JobTokenizer& tokenizer, const std::string& corpus_sha256,
                                   int64_t corpus_documents, int threads) {
  std::string model_sha256;
  on_every_rank(world, [&] {
    if (world.rank() == 0) model_sha256 = ModelFolder(p.model_dir).weights_sha256();
  });
  StoreAttributes a =
      job_attributes(world, p, {model_sha256, vocab_path(p.config), vocab_text(p.config), corpus_sha256, corpus_documents, threads});
  a.vector_kind = "context";
  a.family = tokenizer.family->model_type;
  a.causal = tokenizer.family->causal;
  a.devices = std::to_string(world.size()) + " x cpu";
  return a;
}

StoreStart start_store(MpiComm& world, const JobPlan& plan, size_t units, double bytes, const std::string& what) {
  StoreStart start;
  start.done.assign(units, 0);
  if (plan.mode == StoreMode::Resume) {
    start.resumed = true;
    if (world.rank() == 0) {
      CTXSIM_CHECK(plan.checkpoint && plan.checkpoint->done.size() == units, "resume state does not match the job's units");
      start.done = plan.checkpoint->done;
      start.generation = plan.checkpoint->generation;
    }
    world.broadcast(start.done.data(), start.done.size(), 0);
    log_info("resuming " + plan.store_path + ": " + std::to_string(std::count(start.done.begin(), start.done.end(), uint8_t(1))) + " of " +
             std::to_string(units) + " " + what + " done");
    return start;
  }
  on_every_rank(world, [&] {
    if (world.rank() != 0) return;
    check_free_space(plan.config.output.dir, bytes, plan.config.where("output.dir"));
    fs::remove(plan.progress_path);
  });
  return start;
}

void finish_store(MpiComm& world, const JobPlan& plan, StoreFile& store, double seconds, const std::string& what,
                  const std::function<std::string()>& details) {
  store.finish(utc_now(), seconds, plan.provenance);
  if (world.rank() != 0) return;
  fs::remove(plan.progress_path);
  std::ostringstream line;
  line.precision(3);
  line << "done: " << what << " in " << seconds << " s on " << world.size() << " rank(s) " << details() << "; wrote " << plan.store_path;
  log_info(line.str());
}

}  // namespace ctxsim
