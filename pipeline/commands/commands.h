// The ctxsim subcommands as plain functions (main.cpp only parses the command line).
// Each returns the process exit code and throws ctxsim::Error on bad input.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "pipeline/commands/summary.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/report/compare.h"
#include "stages/text/samples.h"

namespace ctxsim {

std::string version_string();  // "ctxsim 0.1.0 (git abc123)"
// What --version prints: version_string(), then the LibTorch and what it computes on, then NCCL.
std::string version_report();

// A sample as text: "[CLS] | s0: the jury said … | s1: … | [SEP]" with word pieces joined.
std::string describe_sample(const SampleSet& set, int64_t n, const Tokenizer& tokenizer);

int cmd_validate(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out);
int cmd_samples(const std::string& config, const std::vector<std::string>& overrides, int64_t show, std::ostream& out);
// stdin lines → ids (or token strings) with the tokenizer of `vocab` (a vocab.txt, a
// tokenizer.json, a folder with vocab.json + merges.txt) or of the model folder `model`; no
// special tokens, no prefix space.
int cmd_tokenize(const std::string& vocab, const std::string& model, bool cased, bool tokens, std::istream& in, std::ostream& out);
// Runs the config; a sweep config runs point sweep_index, or every point in turn when it is -1.
int cmd_run(const std::string& config, const std::vector<std::string>& overrides, int64_t sweep_index, std::ostream& out);
// Masked-LM pretraining across the MPI ranks (commands/pretrain.cpp): a Hugging Face model
// folder, its step-0 weights, loss curves; resumable from its checkpoint.
int cmd_pretrain(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out);
// `ctxsim segment`: Choi's benchmark across the MPI ranks (commands/segment.cpp), its store and
// method table; with a text file, that file segmented (commands/segment_text.cpp).
int cmd_segment(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out);
// Head importance, ablation and pruning curves of a masked-LM (SPEC §8), an MPI job.
int cmd_prune(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out);
int cmd_segment_text(const std::string& config, const std::vector<std::string>& overrides, const std::string& text_path, int64_t segments,
                     std::ostream& out);
// One run across the MPI ranks (commands/run.cpp): the store, the report and the summary.
int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out);

// The sbatch options `ctxsim submit` passes on as given, a row each (--account, --qos, …).
struct SbatchOption {
  const char* flag;
  const char* help;
};
const std::vector<SbatchOption>& sbatch_passthrough();

struct SubmitArgs {
  bool dry_run = false;
  bool pretrain = false;                      // `ctxsim pretrain CONFIG` (a config with a pretrain: section is one anyway)
  int64_t ranks = 0, cpus_per_task = 0;       // 0 = the job script's #SBATCH lines
  std::string time, mem;                      // given: passed as --time and --mem instead of plan's estimates
  double margin = 1.5;                        // plan's time and memory are multiplied by it
  int64_t plan_batches = 2;                   // calibration batches per configuration
  int64_t array_throttle = 0;                 // a sweep's tasks running at once (--array=0-N%K); 0 = no limit
  std::string job_name;                       // default: ctxsim-<sweep name or config name>
  std::string then;                           // collect | compare: a job after this one ends well
  std::map<std::string, std::string> sbatch;  // sbatch_passthrough()'s flags given (empty = not given)
  bool overcommit = false;                    // more tasks than cores (small test clusters)
  std::string jobs_dir;                       // ctxsim.sbatch and sweep.sbatch; default ./jobs, else the installed ones
  std::string logs_dir;                       // default: output.dir/<sweep name> (or output.dir/jobs)
};
// Fills the job script (an array job for a sweep) and calls sbatch; --dry-run prints it.
int cmd_submit(const std::string& config, const std::vector<std::string>& overrides, const SubmitArgs& args, std::ostream& out);

// What a job asks SLURM for: memory per rank (bytes) and wall time (seconds, with plan's margin).
struct ResourceEstimate {
  double memory_per_rank = 0, seconds = 0;
};
// The plan of a config, printed to `out`: its job's row's planner (job_shell.h), or an error
// naming the job when it has none.
ResourceEstimate plan_config(const std::string& config_path, const Config& config, int64_t ranks, int64_t batches, std::ostream& out);
// The planners of the run's and the segmentation job's configs (the job table's rows).
ResourceEstimate plan_run_job(const std::string& config_path, const Config& config, int64_t ranks, int64_t batches, std::ostream& out);
ResourceEstimate plan_segment_job(const std::string& config_path, const Config& config, int64_t ranks, int64_t documents,
                                  std::ostream& out);
// Samples, units, memory per rank, store size and a calibrated time estimate for `ranks` ranks.
int cmd_plan(const std::string& config, const std::vector<std::string>& overrides, int64_t ranks, int64_t batches, std::ostream& out);

// Figures (PNG + SVG) and a self-contained report.html with an example explorer, next to the
// store or in out_dir. Refuses incomplete or damaged stores.
struct ReportArgs {
  std::string out_dir;             // default: the store's folder
  int64_t max_bytes = 25 << 20;    // report.html budget
  std::string rule;                // the store's rule the figures use (default: the first)
  std::vector<std::string> heads;  // "LAYER:HEAD" drawn per example (default: 0, L/2, L-1 at head 0)
  bool list_figures = false;       // print the figures' stems, one per line, and write nothing
  bool overwrite = false;          // replace a report of another store in --out
};
int cmd_report(const std::string& store, const ReportArgs& args, std::ostream& out);

// `inputs`: store.h5 files, or folders searched for complete ones (sorted): several finished
// runs drawn together (pipeline/report/compare.h).
int cmd_compare(const std::vector<std::string>& inputs, const CompareArgs& args, std::ostream& out);

// One CSV row per (point, rule, layer, head) from every complete store under a sweep folder.
int cmd_collect(const std::string& sweep_dir, const std::string& out_csv, std::ostream& out);
// Lists a sweep's points: index, overrides, output folder, and the folded rule axes.
int cmd_sweep(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out);
// Where a run stands: complete, or units done according to its resume state.
int cmd_status(const std::string& store, std::ostream& out);
// Tokenizing the config's corpus, with the config's tokenizer and each of `others` (paths as
// tokenize --vocab takes them).
int cmd_bench_tokenizer(const std::string& config, const std::vector<std::string>& overrides, int repeat,
                        const std::vector<std::string>& others, std::ostream& out);

}  // namespace ctxsim

namespace ctxsim {

struct InitModelArgs {
  std::string family = "bert";  // bert | distilbert: the checkpoint's layout and config.json keys
  std::string preset = "bert-base";
  std::string like;  // a model folder whose config.json gives family and shape instead ("" = the preset's)
  int64_t layers = 0, hidden = 0, heads = 0, ffn = 0, positions = 0;  // 0 = the preset's
  uint64_t seed = 0;
  std::string vocab, out;         // vocab "" = --like's own tokenizer
  bool mlm = false;               // BERT: BertForMaskedLM with its masked-LM head (what `ctxsim prune` evaluates)
  std::string dtype = "float32";  // float32 | bfloat16: the weights' file dtype
  bool overwrite = false;         // replace another model in --out
};
int cmd_init_model(const InitModelArgs& args, std::ostream& out);

// `ctxsim inspect`: one text through a model, every layer and head (pipeline/commands/inspect.cpp).
struct InspectArgs {
  std::string text, file;                              // the text itself, or a file of it (exactly one)
  std::string model = "data/models/all-MiniLM-L6-v2";  // scripts/setup.sh fetches it
  std::string out = "runs/inspect";                    // input.txt, inspect.yaml, store.h5, report.html, heads.h5
  double top_fraction = 0.05;                          // the selection rule (SPEC §3) of the report's overlays
  bool overwrite = false;                              // replace the inspection of another text in --out
};
int cmd_inspect(const InspectArgs& args, std::ostream& out);
struct ModelInfoArgs {
  std::string dir;
  std::string dtype = "float32";
  std::string dump;              // --dump-heads: a folder for the .npy dump ("" = none)
  std::vector<std::string> ids;  // --ids, one comma-separated sample each
};
int cmd_model_info(const ModelInfoArgs& args, std::ostream& out);

struct BenchModelArgs {
  std::string preset = "bert-base";
  std::string family = "bert";  // the preset's family (its layer: post- or pre-LN, causal or not)
  std::string model;            // a Hugging Face folder instead of the preset's random weights
  int64_t rules = 3;            // selection rules of (c): 1, 3 or 7
  std::vector<int64_t> batches = {1, 8, 32};
  std::vector<std::string> dtypes = {"float32", "bfloat16"};
  int64_t seq_len = 128;
  int64_t threads = 0;
  double seconds = 3;          // per measurement
  std::string device = "cpu";  // cpu | cuda | auto
  std::string profile;         // a Chrome trace of the plain forward's operators goes here (scripts/profile_forward.sh)
};
int cmd_bench_model(const BenchModelArgs& args, std::ostream& out);

}  // namespace ctxsim
