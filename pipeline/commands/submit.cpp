// `ctxsim submit CONFIG`: fills jobs/ctxsim.sbatch (one run) or jobs/sweep.sbatch (an array job,
// one task per sweep point) with absolute paths and the overrides, and hands it to sbatch.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/sweep.h"
#include "pipeline/job/dist/comm.h"
#include "pipeline/job/dist/work_units.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string self_path() {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), size_t(n)) : std::string("ctxsim");
}

}  // namespace

int cmd_submit(const std::string& config_path, const std::vector<std::string>& overrides, const SubmitArgs& a, std::ostream& out) {
  const Config c = load_config(config_path, overrides);
  const SweepPlan plan = expand_sweep(c);
  const bool sweep = !c.sweep.empty();
  if (sweep && a.pretrain)
    throw Error(config_path, "--pretrain trains one model; this config has a sweep: section", "drop the sweep: section or --pretrain");
  // A config with a segment: section is a segmentation job's (configs/segment/).
  const bool segment = !a.pretrain && is_segment_config(c);
  if (segment && sweep)
    throw Error(c.where("sweep"), "segment runs one configuration; a sweep: section is for runs",
                "remove the sweep: section and submit each point with its overrides");
  const std::string command = a.pretrain ? "pretrain" : segment ? "segment" : "run";
  // The samples a run draws are at most samples.num_samples (fewer when the corpus has fewer).
  if (command == "run" && a.ranks > 0)
    if (const std::string idle = idle_ranks_warning(c.samples.num_samples, c.runtime.unit_size, a.ranks); !idle.empty())
      std::cerr << "ctxsim: warning: " << idle << "\n";
  const std::string template_path = (fs::path(a.jobs_dir) / (sweep ? "sweep.sbatch" : "ctxsim.sbatch")).string();
  std::string script =
      read_file_bytes(template_path, kMaxConfigBytes, "the job script template", "run from the ctxsim folder or give --jobs-dir");
  const std::string marker = "# @CTXSIM_SUBMIT@";
  const size_t at = script.find(marker);
  if (at == std::string::npos) throw Error(template_path, "has no '" + marker + "' line", "restore the template from jobs/");
  const size_t eol = script.find('\n', at);
  std::ostringstream fill;
  fill << "# filled by ctxsim submit\n"
       << "cd " << quote(fs::current_path().string()) << "\n"
       << "CTXSIM=" << quote(self_path()) << "\n"
       << "CONFIG=" << quote(fs::absolute(config_path).string()) << "\n"
       << "COMMAND=" << command << "\n"
       << "OVERRIDES=(";
  for (const auto& o : overrides) fill << " " << quote(o);
  fill << " )";
  script.replace(at, eol - at, fill.str());

  const std::string logs = !a.logs_dir.empty() ? a.logs_dir
                                               : (fs::path(c.output.dir) / (sweep        ? plan.name
                                                                            : a.pretrain ? "pretrain-jobs"
                                                                                         : "jobs"))
                                                     .string();
  std::vector<std::string> args = {"sbatch", "--parsable"};
  if (sweep) args.push_back("--array=0-" + std::to_string(plan.points.size() - 1));
  // sbatch expands %j, %A, … in --output: a % in the folder's own name is written %%.
  std::string log_folder;
  for (char ch : (fs::absolute(logs) / "").string()) log_folder += ch == '%' ? std::string("%%") : std::string(1, ch);
  args.push_back("--output=" + log_folder + (sweep ? "ctxsim-%A_%a.log" : "ctxsim-%j.log"));
  if (a.ranks > 0) args.push_back("--ntasks=" + std::to_string(a.ranks));
  if (a.cpus_per_task > 0) args.push_back("--cpus-per-task=" + std::to_string(a.cpus_per_task));
  if (!a.time.empty()) args.push_back("--time=" + a.time);
  if (!a.partition.empty()) args.push_back("--partition=" + a.partition);
  if (a.overcommit) args.push_back("--overcommit");
  const std::string script_path = (fs::absolute(logs) / (sweep ? "sweep.sbatch" : "ctxsim.sbatch")).string();
  args.push_back(script_path);
  const std::string sbatch = join_each(args, quote, " ");
  // sbatch passes its environment to the job: what ctxsim set for its own MPI start stays here.
  std::vector<std::string> unset = MpiSession::unset_arguments();
  if (!unset.empty()) unset.insert(unset.begin(), "env");
  const std::string launch = unset.empty() ? sbatch : join_each(unset, quote, " ") + " " + sbatch;

  if (a.dry_run) {
    out << "# "
        << (sweep ? std::to_string(plan.points.size()) + " array tasks, one per point of sweep " + plan.name : "one '" + command + "' job")
        << "\n# would write " << script_path << " and run:\n# " << sbatch << "\n"
        << script;
    return 0;
  }
  make_folder(logs, "--logs");
  atomic_write(script_path, script);
  FILE* p = ::popen((launch + " 2>&1").c_str(), "r");
  if (!p) throw Error("sbatch", "cannot start sbatch", "install slurm-wlm, or submit from a cluster login node");
  std::string reply;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), int(buf.size()), p)) reply += buf.data();
  const int status = ::pclose(p);
  if (status != 0) throw Error("sbatch", "failed: " + reply, "check the #SBATCH lines of " + template_path + " and your cluster's limits");
  while (!reply.empty() && (reply.back() == '\n' || reply.back() == '\r')) reply.pop_back();
  out << "submitted job " << reply << (sweep ? " (" + std::to_string(plan.points.size()) + " array tasks)" : std::string()) << "; logs in "
      << logs << "\n";
  return 0;
}

}  // namespace ctxsim
