#include "pipeline/commands/job_plan.h"

#include <sstream>

#include "ctxsim_revision.h"
#include "pipeline/commands/commands.h"
#include "stages/base/cpu_features.h"
#include "stages/base/digest.h"

#include "pipeline/job/config/inputs.h"
#include "pipeline/job/dist/agree.h"
#include "pipeline/job/dist/log.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

StoreMode decide(const Config& c, JobKind kind, const StoreTarget& t, std::optional<Checkpoint>& checkpoint) {
  if (c.output.overwrite) return StoreMode::Create;
  const StoreInfo existing = inspect_store(t.store_path);
  if (!existing.exists()) return StoreMode::Create;
  if (existing.kind == StoreInfo::Kind::NotAStore)
    throw Error(c.where("output.dir"), t.store_path + " exists and is not a ctxsim store: " + existing.what,
                "move it away, choose another output.dir, or set output.overwrite=true to replace it");
  // A store of the other job in this folder is not this job's to resume, finish or answer for.
  const std::string job = kind == JobKind::Segment ? "segment" : "run";
  if (existing.job != job)
    throw Error(c.where("output.dir"),
                t.store_path + " holds a " +
                    (existing.job == "segment" ? "segmentation store ('ctxsim segment')" : "run's store ('ctxsim run')") +
                    ", and this is '" + "ctxsim " + job + "'",
                "choose another output.dir, or set output.overwrite=true to replace it");
  const std::vector<std::string> differences = identity_differences(existing.config_yaml, c, kind);
  if (!differences.empty())
    throw Error(c.where("output.dir"), t.store_path + " holds a run with a different config: " + join(differences, "; "),
                "choose another output.dir, or set output.overwrite=true to replace it");
  // The same config over other inputs (new weights under the same model.path, an edited corpus)
  // is another run: resuming would mix the two, and a complete store would answer for the old.
  const std::vector<std::string> changed = changed_inputs(
      {existing.model_sha256, existing.model_config_sha256, existing.vocab_sha256, existing.corpus_sha256}, input_digests(c), c);
  if (!changed.empty())
    throw Error(c.where("output.dir"), t.store_path + " was made from other inputs: " + join(changed, "; ") + " changed since",
                "set output.overwrite=true to start over with the inputs as they are now, or choose another output.dir");
  if (existing.complete) return StoreMode::AlreadyDone;
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

StoreMode agree_store_mode(MpiComm& world, const Config& c, JobKind kind, const StoreTarget& target, std::unique_ptr<RunLock>& lock,
                           std::optional<Checkpoint>& checkpoint) {
  int64_t mode = int64_t(StoreMode::Create);
  on_every_rank(world, [&] {
    if (world.rank() != 0) return;
    lock = std::make_unique<RunLock>(c.output.dir, c.where("output.dir"));
    mode = int64_t(decide(c, kind, target, checkpoint));
  });
  world.broadcast(&mode, sizeof mode, 0);
  return StoreMode(mode);
}

void write_job_report(const Config& c, const std::string& store_path) {
  std::ostringstream report_line;
  ReportArgs args;
  args.max_bytes = c.output.report_max_bytes;
  try {
    cmd_report(store_path, args, report_line);
  } catch (const Error& e) {
    // The job's results are safe: say so, and how to get the report without rerunning.
    throw Error(e.where(), "the job finished and its store is complete, but the report failed: " + e.problem(),
                (e.fix().empty() ? std::string() : e.fix() + "; then ") + "ctxsim report " + store_path + " makes it without rerunning");
  }
  log_info(report_line.str().substr(0, report_line.str().find('\n')));
}

StoreAttributes job_attributes(MpiComm& world, const Config& c, JobKind kind, const JobFacts& f) {
  CTXSIM_CHECK(kind == JobKind::Run || kind == JobKind::Segment, "a store is a run's or a segmentation's");
  StoreAttributes a;
  a.kind = kind == JobKind::Segment ? "segment" : "run";
  // Rank 0's, as the weights' digest: attributes are written collectively, with one value.
  std::string config_digest;
  on_every_rank(world, [&] {
    if (world.rank() == 0 && !f.model_dir.empty()) config_digest = model_config_sha256(f.model_dir);
  });
  a.model_config_sha256 = broadcast_string(world, config_digest);
  a.model_sha256 = broadcast_string(world, f.model_sha256);
  a.config_yaml = f.identity;
  a.config_path = f.config_path;
  a.model_path = f.model_dir;
  a.vocab_path = f.vocab_path;
  a.vocab_sha256 = sha256_bytes(reinterpret_cast<const uint8_t*>(f.vocab_text.data()), f.vocab_text.size());
  a.corpus_sha256 = f.corpus_sha256;
  a.corpus = name_of(c.corpus.format) + ":" + c.corpus.path + " (" + std::to_string(f.corpus_documents) + " documents)";
  a.version = version_string();
  a.git_revision = CTXSIM_GIT_REVISION;
  a.started = utc_now();
  a.dtype = name_of(c.model.dtype);
  a.ranks = world.size();
  a.threads = f.threads;
  a.isa = configure_compute_libraries().describe() + " (rank 0)";
  return a;
}

}  // namespace ctxsim
