// `ctxsim submit CONFIG`: checks the job on the login node (the config, the model's weights, the
// corpus and the samples, the output folder: what would stop the job after its queue wait stops
// it here), asks SLURM for plan's memory and time with a margin, fills jobs/ctxsim.sbatch (one
// job) or jobs/sweep.sbatch (an array job, one task per sweep point) with absolute paths and the
// overrides, and hands it to sbatch; `--then collect|compare` queues a job that runs after it.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/sweep.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/work_units.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace fs = std::filesystem;

namespace ctxsim {

const std::vector<SbatchOption>& sbatch_passthrough() {
  static const std::vector<SbatchOption> rows = {
      {"--account", "charge the job to this account"},
      {"--qos", "quality of service"},
      {"--partition", "SLURM partition"},
      {"--constraint", "node features, e.g. 'avx512' or 'a100'"},
      {"--gpus-per-task", "GPUs per rank (GPU ranks: set runtime.device=cuda or auto)"},
      {"--nodes", "nodes (the job scripts ask for 1)"},
      {"--ntasks-per-node", "ranks per node"},
      {"--reservation", "run in this reservation"},
  };
  return rows;
}

namespace {

std::string self_path() {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), size_t(n)) : std::string("ctxsim");
}

// The job scripts: --jobs-dir, else ./jobs, else those installed beside the binary
// (<prefix>/share/ctxsim/jobs for <prefix>/bin/ctxsim).
std::string jobs_folder(const std::string& given) {
  if (!given.empty()) return given;
  if (fs::exists("jobs/ctxsim.sbatch")) return "jobs";
  const fs::path installed = fs::path(self_path()).parent_path().parent_path() / "share" / "ctxsim" / "jobs";
  return fs::exists(installed / "ctxsim.sbatch") ? installed.string() : std::string("jobs");
}

// sbatch's --time: D-HH:MM:SS, whole minutes rounded up.
std::string slurm_time(double seconds) {
  int64_t minutes = int64_t(std::ceil(seconds / 60.0));
  std::ostringstream s;
  s << std::setfill('0');
  if (minutes >= 24 * 60) s << minutes / (24 * 60) << "-";
  minutes %= 24 * 60;
  s << std::setw(2) << minutes / 60 << ":" << std::setw(2) << minutes % 60 << ":00";
  return s.str();
}

// The folder a job would write: it, or its nearest existing parent, must be writable here (the
// login node shares the file system the job writes to).
void check_output_folder(const Config& c) {
  fs::path p = fs::absolute(c.output.dir);
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  if (fs::exists(p, ec) && !fs::is_directory(p, ec))
    throw Error(c.where("output.dir"), "'" + c.output.dir + "' cannot be made: " + p.string() + " is a file", "choose another output.dir");
  if (::access(p.c_str(), W_OK | X_OK) != 0)
    throw Error(c.where("output.dir"), "'" + c.output.dir + "' cannot be written: " + p.string() + " is not writable by you",
                "choose an output.dir you can write (on a file system the compute nodes share)");
}

// One configuration the job runs (the config, or one sweep point): checked and, for the jobs plan
// estimates, planned. `plan_text` gets plan's report.
struct Checked {
  ResourceEstimate estimate;
  bool estimated = false, complete = false;
};

Checked check_one(const std::string& path, const Config& c, JobKind kind, const SubmitArgs& a, std::ostream& plan_text) {
  Checked r;
  check_paths(c);
  check_output_folder(c);
  r.complete = check_output_before_queueing(kind, path, c) == StoreMode::AlreadyDone;
  if (job_row(kind).plan) {
    r.estimate = plan_config(path, c, a.ranks > 0 ? a.ranks : 2, a.plan_batches, plan_text);
    r.estimated = true;
  }
  return r;
}

// Runs `command` (sbatch …) and returns the job id it printed (--parsable: "id" or "id;cluster").
std::string call_sbatch(const std::string& command, const std::string& template_path) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) throw Error("sbatch", "cannot start sbatch", "install slurm-wlm, or submit from a cluster login node");
  std::string reply;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), int(buf.size()), p)) reply += buf.data();
  const int status = ::pclose(p);
  while (!reply.empty() && (reply.back() == '\n' || reply.back() == '\r')) reply.pop_back();
  if (status != 0) throw Error("sbatch", "failed: " + reply, "check the #SBATCH lines of " + template_path + " and your cluster's limits");
  const size_t nl = reply.rfind('\n');
  std::string id = nl == std::string::npos ? reply : reply.substr(nl + 1);  // warnings come first
  return id.substr(0, id.find(';'));
}

// What a submission is: the config, its sweep, the job it runs and where its logs go.
struct Submission {
  Config config;
  SweepPlan plan;
  bool sweep = false;
  JobKind kind;
  std::string command;  // the job's name: run | segment | pretrain | prune
  std::string logs, log_folder, name, target;
};

// The option combinations submit refuses before it checks anything else.
void check_options(const Submission& s, const SubmitArgs& a) {
  const Config& c = s.config;
  if (s.sweep && !job_row(s.kind).sweeps)
    throw Error(c.where("sweep"), "'ctxsim " + s.command + "' runs one configuration; a sweep: section is for runs",
                "remove the sweep: section and submit each point with its overrides");
  if (!a.then.empty() && a.then != "collect" && a.then != "compare")
    throw UsageError("--then", "expected collect or compare, got '" + a.then + "'", "see 'ctxsim submit --help'");
  if (!a.then.empty() && !job_row(s.kind).sweeps)
    throw UsageError("--then", "collect and compare gather run stores; this is a '" + s.command + "' job",
                     "submit without --then, and run 'ctxsim compare' on the stores once they are complete");
  if (a.then == "compare" && s.plan.points.size() < 2)
    throw UsageError("--then compare", "draws several stores together, and this config makes one",
                     "use --then collect, or add a sweep: section");
  if (!(a.margin >= 1.0 && a.margin <= 100.0))
    throw UsageError("--margin", "expected a factor from 1 to 100, got " + std::to_string(a.margin), "e.g. --margin 1.5");
}

// Every point checked as the job would check it after its queue wait; the largest estimate.
struct Needs {
  ResourceEstimate estimate;
  bool estimated = true;
  int64_t complete = 0;  // points whose store is complete already
};

Needs check_points(const Submission& s, const std::string& config_path, const std::vector<std::string>& overrides, const SubmitArgs& a,
                   std::ostream& plan_text) {
  Needs n;
  if (!s.sweep) {
    const Checked r = check_one(config_path, s.config, s.kind, a, plan_text);
    return {r.estimate, r.estimated, int64_t(r.complete)};
  }
  for (const auto& p : s.plan.points) {
    std::vector<std::string> all = overrides;
    all.insert(all.end(), p.overrides.begin(), p.overrides.end());
    plan_text << "# point " << p.index << ": " << p.name << "\n";
    const Checked r = check_one(config_path, load_config(config_path, all), s.kind, a, plan_text);
    n.estimate.memory_per_rank = std::max(n.estimate.memory_per_rank, r.estimate.memory_per_rank);
    n.estimate.seconds = std::max(n.estimate.seconds, r.estimate.seconds);
    n.estimated = n.estimated && r.estimated;
    n.complete += r.complete;
  }
  return n;
}

// The job script: the template with its marker line replaced by the job's paths and overrides.
std::string job_script(const Submission& s, const std::string& template_path, const std::string& config_path,
                       const std::vector<std::string>& overrides) {
  std::string script =
      read_file_bytes(template_path, kMaxConfigBytes, "the job script template", "run from the ctxsim folder or give --jobs-dir");
  const std::string marker = "# @CTXSIM_SUBMIT@";
  const size_t at = script.find(marker);
  if (at == std::string::npos) throw Error(template_path, "has no '" + marker + "' line", "restore the template from jobs/");
  const size_t eol = script.find('\n', at);
  std::ostringstream fill;
  fill << "# filled by ctxsim submit\n"
       << "cd " << shell_quote(fs::current_path().string()) << "\n"
       << "CTXSIM=" << shell_quote(self_path()) << "\n"
       << "CONFIG=" << shell_quote(fs::absolute(config_path).string()) << "\n"
       << "COMMAND=" << s.command << "\n"
       << "LAUNCHER=" << s.config.runtime.launcher << "\n"
       << "OVERRIDES=(";
  for (const auto& o : overrides) fill << " " << shell_quote(o);
  fill << " )";
  script.replace(at, eol - at, fill.str());
  return script;
}

// Resources: what the user gave, else plan's estimate times the margin. The time also covers the
// two minutes between SIGTERM and the limit (--signal=B:TERM@120), and is at least 5 min. What was
// asked for and why goes to `resources`.
void add_resources(const Submission& s, const Needs& need, const SubmitArgs& a, std::vector<std::string>& args,
                   std::ostringstream& resources) {
  if (!a.time.empty()) {
    args.push_back("--time=" + a.time);
  } else if (need.estimated) {
    const std::string t = slurm_time(std::max(300.0, need.estimate.seconds * a.margin + 120));
    args.push_back("--time=" + t);
    resources << "--time=" << t << " (plan: " << format_duration(need.estimate.seconds) << " x margin " << a.margin
              << " + 2 min for SIGTERM)";
  }
  if (!a.mem.empty()) {
    args.push_back("--mem=" + a.mem);
  } else if (need.estimated) {
    const int64_t cpus = std::max<int64_t>(1, a.cpus_per_task);
    const int64_t mb =
        std::max<int64_t>(256, int64_t(std::ceil(need.estimate.memory_per_rank * a.margin / double(cpus) / double(1 << 20))));
    args.push_back("--mem-per-cpu=" + std::to_string(mb) + "M");
    resources << (resources.tellp() > 0 ? ", " : "") << "--mem-per-cpu=" << mb << "M (plan: " << std::setprecision(3)
              << need.estimate.memory_per_rank / 1e9 << " GB a rank x margin " << a.margin << ")";
  }
  if (!need.estimated && (a.time.empty() || a.mem.empty()))
    resources << (resources.tellp() > 0 ? "; " : "") << "plan does not estimate '" << s.command
              << "' jobs: the job script's #SBATCH lines apply" << (a.time.empty() ? " (give --time" : " (give")
              << (a.mem.empty() ? " --mem" : "") << " to ask for more)";
}

// sbatch's arguments for the job, its script last.
std::vector<std::string> sbatch_arguments(const Submission& s, const Needs& need, const SubmitArgs& a, const std::string& script_path,
                                          std::ostringstream& resources) {
  std::vector<std::string> args = {"sbatch", "--parsable", "--job-name=" + s.name};
  if (s.sweep)
    args.push_back("--array=0-" + std::to_string(s.plan.points.size() - 1) +
                   (a.array_throttle > 0 ? "%" + std::to_string(a.array_throttle) : std::string()));
  args.push_back("--output=" + s.log_folder + (s.sweep ? "ctxsim-%A_%a.log" : "ctxsim-%j.log"));
  if (a.ranks > 0) args.push_back("--ntasks=" + std::to_string(a.ranks));
  if (a.cpus_per_task > 0) args.push_back("--cpus-per-task=" + std::to_string(a.cpus_per_task));
  add_resources(s, need, a, args, resources);
  for (const auto& row : sbatch_passthrough())
    if (const auto it = a.sbatch.find(row.flag); it != a.sbatch.end() && !it->second.empty())
      args.push_back(std::string(row.flag) + "=" + it->second);
  if (a.overcommit) args.push_back("--overcommit");
  args.push_back(script_path);
  return args;
}

// The job after it: collect (a CSV of every store) or compare (a page of them), once every task
// ended well (afterok; a requeued task is waited for). Empty without --then; @ID@ is the first's.
std::vector<std::string> then_arguments(const Submission& s, const SubmitArgs& a) {
  if (a.then.empty()) return {};
  std::string work = "cd " + shell_quote(fs::current_path().string()) + " && exec " + shell_quote(self_path()) + " " + a.then + " " +
                     shell_quote(fs::absolute(s.target).string());
  if (a.then == "compare") work += " --out " + shell_quote((fs::absolute(s.target) / "compare").string());
  std::vector<std::string> args = {"sbatch",
                                   "--parsable",
                                   "--job-name=" + s.name + "-" + a.then,
                                   "--dependency=afterok:@ID@",
                                   "--kill-on-invalid-dep=yes",
                                   "--ntasks=1",
                                   "--time=00:30:00",
                                   "--output=" + s.log_folder + "ctxsim-" + a.then + "-%j.log"};
  for (const char* flag : {"--account", "--qos", "--partition", "--reservation"})
    if (const auto it = a.sbatch.find(flag); it != a.sbatch.end() && !it->second.empty())
      args.push_back(std::string(flag) + "=" + it->second);
  args.push_back("--wrap=" + work);
  return args;
}

Submission describe_submission(const std::string& config_path, const std::vector<std::string>& overrides, const SubmitArgs& a) {
  Submission s;
  s.config = load_config(config_path, overrides);
  const Config& c = s.config;
  s.plan = expand_sweep(c);
  s.sweep = !c.sweep.empty();
  s.kind = a.pretrain ? job_kind_named("pretrain") : job_kind_of(c);
  s.command = s.kind.name();
  const std::string sweep_dir = (fs::path(c.output.dir) / s.plan.name).string();
  s.logs = !a.logs_dir.empty() ? a.logs_dir : s.sweep ? sweep_dir : (fs::path(c.output.dir) / job_row(s.kind).logs).string();
  // sbatch expands %j, %A, … in --output: a % in the folder's own name is written %%.
  for (char ch : (fs::absolute(s.logs) / "").string()) s.log_folder += ch == '%' ? std::string("%%") : std::string(1, ch);
  s.name = a.job_name.empty() ? "ctxsim-" + (s.sweep ? s.plan.name : safe_folder_name(fs::path(config_path).stem().string())) : a.job_name;
  s.target = s.sweep ? sweep_dir : c.output.dir;
  return s;
}

}  // namespace

int cmd_submit(const std::string& config_path, const std::vector<std::string>& overrides, const SubmitArgs& a, std::ostream& out) {
  const Submission s = describe_submission(config_path, overrides, a);
  check_options(s, a);
  // Everything the job would refuse after its queue wait, refused now: each point in turn.
  MpiSession::ensure();  // reading an existing store (parallel HDF5)
  std::ostringstream plan_text;
  const Needs need = check_points(s, config_path, overrides, a, plan_text);
  if (!s.sweep && need.complete == 1 && !a.dry_run) {
    out << "nothing to submit: " << (fs::path(s.config.output.dir) / "store.h5").string()
        << " is complete (ctxsim summary shows it; output.overwrite=true runs it again)\n";
    return 0;
  }
  if (s.sweep && need.complete > 0)
    std::cerr << "ctxsim: note: " << need.complete << " of " << s.plan.points.size()
              << " points are complete already; their array tasks end at once\n";
  if (s.kind == job_kind_named("run") && a.ranks > 0)
    if (const std::string idle = idle_ranks_warning(s.config.samples.num_samples, s.config.runtime.unit_size, a.ranks); !idle.empty())
      std::cerr << "ctxsim: warning: " << idle << "\n";

  const std::string template_path = (fs::path(jobs_folder(a.jobs_dir)) / (s.sweep ? "sweep.sbatch" : "ctxsim.sbatch")).string();
  const std::string script = job_script(s, template_path, config_path, overrides);
  const std::string script_path = (fs::absolute(s.logs) / (s.sweep ? "sweep.sbatch" : "ctxsim.sbatch")).string();
  std::ostringstream resources;
  const std::string sbatch = join_each(sbatch_arguments(s, need, a, script_path, resources), shell_quote, " ");
  std::vector<std::string> then_args = then_arguments(s, a);
  // sbatch passes its environment to the job: what ctxsim set for its own MPI start stays here.
  std::vector<std::string> unset = MpiSession::unset_arguments();
  if (!unset.empty()) unset.insert(unset.begin(), "env");
  const std::string prefix = unset.empty() ? std::string() : join_each(unset, shell_quote, " ") + " ";

  const std::string what = s.sweep ? std::to_string(s.plan.points.size()) + " array tasks, one per point of sweep " + s.plan.name +
                                         (a.array_throttle > 0 ? " (at most " + std::to_string(a.array_throttle) + " at once)" : "")
                                   : "one '" + s.command + "' job";
  if (a.dry_run) {
    out << "# checked: the config, " << (s.sweep ? std::to_string(s.plan.points.size()) + " points' " : std::string("its "))
        << "inputs and output folder\n";
    std::istringstream lines(plan_text.str());
    for (std::string line; std::getline(lines, line);) out << "# " << (line.rfind("# ", 0) == 0 ? line.substr(2) : line) << "\n";
    if (resources.tellp() > 0) out << "# resources: " << resources.str() << "\n";
    out << "# " << what << "; would write " << script_path << " and run:\n# " << sbatch << "\n";
    if (!then_args.empty()) out << "# then, after it: " << join_each(then_args, shell_quote, " ") << "\n";
    out << script;
    return 0;
  }
  make_folder(s.logs, "--logs");
  atomic_write(script_path, script);
  const std::string id = call_sbatch(prefix + sbatch, template_path);
  out << "submitted job " << id << " (" << what << ")";
  if (resources.tellp() > 0) out << "; " << resources.str();
  out << "; logs in " << s.logs << "\n";
  if (!then_args.empty()) {
    for (auto& x : then_args)
      if (const size_t p = x.find("@ID@"); p != std::string::npos) x.replace(p, 4, id);
    const std::string then_id = call_sbatch(prefix + join_each(then_args, shell_quote, " "), template_path);
    out << "submitted job " << then_id << " (ctxsim " << a.then << " " << s.target << ", after job " << id << " ends well)\n";
  }
  return 0;
}

}  // namespace ctxsim
