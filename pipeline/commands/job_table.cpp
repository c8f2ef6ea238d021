// The job table (job_shell.h): a row per job, what the shell, the command line, plan, submit and
// the store commands do for it. Each job's own code is its files (run.cpp, segment.cpp, prune.cpp,
// pretrain.cpp); its config section and keys are its row of job_kinds() (config_schema.cpp).
#include <string>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/store_kinds.h"
#include "pipeline/commands/summary.h"
#include "stages/base/error.h"

namespace ctxsim {

// The job table: a row and a Job (run.cpp, segment.cpp, prune.cpp, pretrain.cpp) per job.
const std::vector<JobRow>& job_rows() {
  // clang-format off
  static const std::vector<JobRow> rows = [] {
    JobRow run;
    run.name      = "run";
    run.model_fix = "set model.path to a Hugging Face model folder (scripts/setup.sh fetches data/models/all-MiniLM-L6-v2), or model.name";
    run.help      = "run the job a config describes (every point of a sweep, or one)";
    run.example   = "ctxsim run configs/default.yaml model.path=data/models/all-MiniLM-L6-v2-random";
    run.command   = [](const std::string& config, const std::vector<std::string>& overrides, std::ostream& out) {
      return cmd_run(config, overrides, -1, out);
    };
    run.plan      = plan_run_job;
    run.sweeps    = true;
    run.store     = {"", "run", verify_run, print_run_summary, run_report, run_compare, nullptr};

    JobRow segment;
    segment.name      = "segment";
    segment.model_fix = "set model.path to a Hugging Face model folder, or model.name";
    segment.help      = "topic segmentation on Choi's benchmark from the corpus (every method, an MPI job), or of one --text file";
    segment.example   = "ctxsim segment configs/segment/choi.yaml --text my_text.txt --segments 3";
    segment.command   = cmd_segment;
    segment.plan      = plan_segment_job;
    segment.store     = {"", "segmentation", verify_segment, segment_summary, segment_report, segment_compare,
                         "draw segmentations together with 'ctxsim compare STORE STORE … --out DIR'"};

    JobRow prune;
    prune.name      = "prune";
    prune.model_fix = "set model.path to a folder of a language-model class (models/brown-bert, or what 'ctxsim init-model --mlm' "
                      "writes), or model.name";
    prune.help      = "head importance, per-head ablation and accuracy as heads are removed, on a language model's held-out samples "
                      "(masked-LM or next-token; an MPI job)";
    prune.example   = "ctxsim prune configs/prune/brown.yaml";
    prune.command   = cmd_prune;
    prune.store     = {"", "pruning", verify_prune, print_prune_summary, prune_report, prune_compare,
                       "draw pruning runs together with 'ctxsim compare STORE STORE … --out DIR'"};

    JobRow pretrain;
    pretrain.name         = "pretrain";
    pretrain.writes_store = false;
    pretrain.needs_model  = false;
    pretrain.help         = "train a language model on the config's corpus (pretrain.family: masked-LM or next-token; MPI data-parallel, resumable), "
                            "saved in HF's layout";
    pretrain.example      = "ctxsim pretrain configs/pretrain/brown.yaml pretrain.steps=100 output.dir=runs/pretrain/short";
    pretrain.command      = cmd_pretrain;
    pretrain.logs         = "pretrain-jobs";
    return std::vector<JobRow>{run, segment, prune, pretrain};
  }();
  // clang-format on
  return rows;
}

const JobRow& job_row(JobKind kind) {
  for (const JobRow& r : job_rows())
    if (std::string(r.name) == kind.name()) return r;
  CTXSIM_CHECK(false, std::string("a job without a row in the job table: ") + kind.name());
  return job_rows()[0];
}

}  // namespace ctxsim
