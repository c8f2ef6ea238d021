// The one shell around every job (run, segment, pretrain, prune): MPI and the log's rank,
// the stop signals, the config and its checks, the lock on output.dir, the decision between new
// output, a resume and nothing to do, HDF5's errors naming the store, and the end of a store's
// job (its report and summary). A job is what differs: its checks, its units and its output,
// written as a `Job`, and a row of the job table.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "pipeline/job/config/config.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/durable/run_lock.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/signals.h"
#include "pipeline/store/store_file.h"
#include "stages/base/stopwatch.h"
#include "stages/model/model_config.h"

namespace ctxsim {

struct ResourceEstimate;  // commands.h
struct SummaryOptions;    // summary.h
struct ReportArgs;        // commands.h
struct CompareArgs;       // report/compare.h
namespace report {
struct PageSource;  // report/report_figures.h
}

// What summary, report, compare, status (and validate) and collect do with the store of a job
// (store_kinds.h: a command opens the store, asks store_kind() for its row and calls the row; no
// command tests a store's kind itself).
struct StoreKind {
  const char* job = "";   // the store's `kind` attribute: the job's name (store_kinds() fills it in)
  const char* noun = "";  // in messages: "a <noun> store"
  // status: reads what every reader reads with all their checks; returns what it holds, in a few words.
  std::string (*verify)(hid_t file, const std::string& path) = nullptr;
  void (*summary)(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out) = nullptr;
  int (*report)(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out) = nullptr;
  // The comparison page of stores of this kind (checked to be of one kind already).
  int (*compare)(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source,
                 std::ostream& out) = nullptr;
  const char* collect_refusal = nullptr;  // nullptr: collect gathers its rows (a sweep's); else the fix: what to do with it instead
};

// A job as a row of the job table (job_table.cpp): what the shell, the command line, plan, submit
// and the store commands do for it. A row's name is its row of job_kinds() (config.h: its config
// section and keys). A new job is its two rows, its section in Config, and its own files.
struct JobRow {
  const char* name = "";       // the subcommand, and the store's `kind` attribute when it writes one
  bool writes_store = true;    // output.dir/store.h5 with resume state beside it; else the job keeps its own (pretrain)
  bool needs_model = true;     // model.path or model.name must name a checkpoint
  const char* model_fix = "";  // the fix when it names none
  const char* help = "";       // the subcommand's --help line and its example
  const char* example = "";
  // `ctxsim NAME CONFIG [overrides]` (the command line may give a job options of its own, cli.cpp).
  int (*command)(const std::string& config, const std::vector<std::string>& overrides, std::ostream& out) = nullptr;
  // `ctxsim plan`'s estimate of a config of this job (every input loaded and checked, then a few
  // calibration batches), which submit asks SLURM for; nullptr: plan refuses its configs, and
  // submit takes the job script's resources or --time and --mem.
  ResourceEstimate (*plan)(const std::string& config_path, const Config& config, int64_t ranks, int64_t batches,
                           std::ostream& out) = nullptr;
  bool sweeps = false;        // takes a sweep: section (and submit's --then over the sweep's stores)
  const char* logs = "jobs";  // submit's logs folder in output.dir (a sweep's: its own folder)
  StoreKind store;            // a job that writes a store: what the store commands do with it
};
const std::vector<JobRow>& job_rows();
const JobRow& job_row(JobKind kind);

enum class StoreMode : int64_t { Create = 0, Resume = 1, AlreadyDone = 2 };

// What the shell decided, the same on every rank (the lock and the resume state on rank 0).
struct JobPlan {
  JobKind kind;
  Config config;
  std::string config_path, model_dir, identity, identity_hash;
  std::string store_path, progress_path;  // jobs that write a store
  StoreMode mode = StoreMode::Create;
  std::optional<Checkpoint> checkpoint;  // rank 0, resuming a store
  std::unique_ptr<RunLock> lock;         // rank 0: the job owns output.dir until it ends
  TextAttributes provenance;             // this session's command line, hosts and SLURM ids
  std::string scores_sha256;             // prune: what it takes from prune.scores_from (Job::scores_sha256)
};

// What a job brings to the shell.
class Job {
 public:
  virtual ~Job() = default;
  // On every rank once the config has loaded (inside on_every_rank: an Error stops every rank
  // with one message): what this job refuses, naming the key, and what it derives from the config.
  virtual void check(const JobPlan& plan, MpiComm& world) {
    (void)plan;
    (void)world;
  }
  // After check: the SHA-256 of what the job reads from another store (prune: the scores it takes
  // from prune.scores_from), part of what a store must match to be resumed or answer; "" for none.
  virtual std::string scores_sha256() const { return {}; }
  // The job, when it is not already done: its inputs, output and rounds (run_rounds with `stop`).
  // Returns the exit code. A job that writes a store leaves it complete, and the shell then makes
  // the report (output.report) and prints the summary on rank 0, once this call's memory is freed.
  virtual int execute(MpiComm& world, JobPlan& plan, const StopSignals& stop, const Stopwatch& clock, std::ostream& out) = 0;
};

// On the login node, before a job is queued (no MPI job, no lock): what the job would decide about
// output.dir, throwing the Error it would stop with (another job's store, another config's, other
// inputs under the same paths).
StoreMode check_output_before_queueing(JobKind kind, const std::string& config_path, const Config& config);

// The whole command: MPI, plan, then nothing to do (a complete store: its missing report made,
// its summary printed), or the job.
int run_in_shell(JobKind kind, const std::string& config_path, const std::vector<std::string>& overrides, Job& job, std::ostream& out);

// The report of a finished job's store (output.report), into the store's folder. Its failure is
// an Error that says the store is complete and how to make the report without rerunning.
void write_job_report(const Config& c, const std::string& store_path);

// What a job knows when it creates its store, for the root attributes every store has.
struct JobFacts {
  std::string model_sha256;  // rank 0's (hashed there while the inputs load); other ranks pass ""
  std::string vocab_path, vocab_text, corpus_sha256;
  int64_t corpus_documents = 0;
  int threads = 1;
};
// Collective (attributes are written collectively): the root attributes shared by run and
// segment stores, rank 0's weights digest on every rank; the caller adds vector and devices.
StoreAttributes job_attributes(MpiComm& world, const JobPlan& plan, const JobFacts& facts);

// How a store-writing job's store begins, the same on every rank.
struct StoreStart {
  bool resumed = false;
  std::vector<uint8_t> done;  // a flag per unit (rank 0's resume state when resumed)
  int64_t generation = 0;     // the resume state's
};
// Collective, before the job opens or creates its store (plan.mode says which). Resuming: rank
// 0's resume state checked against `units` flags, broadcast, and logged ("resuming STORE: n of N
// <what> done"). Creating: the file system checked for the store's `bytes` (an Error on every
// rank, nothing written) and a stale resume state removed.
StoreStart start_store(MpiComm& world, const JobPlan& plan, size_t units, double bytes, const std::string& what);
// Collective, the job's work done: the store finished (StoreFile::finish with this session's
// provenance) and closed; rank 0 removes the resume state and logs "done: <what> in S s on N
// rank(s) <details()>; wrote STORE" (details is called on rank 0, after the store is closed).
void finish_store(MpiComm& world, const JobPlan& plan, StoreFile& store, double seconds, const std::string& what,
                  const std::function<std::string()>& details);

// The jobs that run one configuration on the CPU (segment, prune): what they refuse, on every rank
// (a sweep: section, runtime.device=cuda, a dtype this CPU does not compute), naming the key.
void check_one_cpu_configuration(const Config& config, const std::string& job);
// Collective: the root attributes of such a job's store: job_attributes with the weights hashed by
// rank 0 now, context vectors, the tokenizer's family, and its ranks as CPU devices.
StoreAttributes cpu_job_attributes(MpiComm& world, const JobPlan& plan, const JobTokenizer& tokenizer, const std::string& corpus_sha256,
                                   int64_t corpus_documents, int threads);

}  // namespace ctxsim
