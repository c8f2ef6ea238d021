#include "pipeline/job/parallel/provenance.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>

#include "pipeline/job/parallel/agree.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

// A row per SLURM variable a store records: the attribute and the variable.
struct SlurmRow {
  const char* attribute;
  const char* variable;
};
constexpr SlurmRow kSlurmRows[] = {
    {"slurm_job_id", "SLURM_JOB_ID"},                // this job (an array task has its own)
    {"slurm_array_job_id", "SLURM_ARRAY_JOB_ID"},    // the array (a sweep) it is a task of
    {"slurm_array_task_id", "SLURM_ARRAY_TASK_ID"},  // … and which task: the sweep point
    {"slurm_restart_count", "SLURM_RESTART_COUNT"},  // requeues before this session (0 when never)
    {"slurm_job_name", "SLURM_JOB_NAME"},
    {"slurm_cluster", "SLURM_CLUSTER_NAME"},
    {"slurm_partition", "SLURM_JOB_PARTITION"},
};

std::string& command_line_text() {
  static std::string text;
  return text;
}

struct SweepPointRecord {
  std::string sweep, index, values;
};
SweepPointRecord& sweep_point_record() {
  static SweepPointRecord record;
  return record;
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::string("-_./=:,+@%").find(ch) != std::string::npos;
  });
  return plain ? s : shell_quote(s);
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

void record_command_line(int argc, const char* const* argv) {
  std::string& text = command_line_text();
  text.clear();
  for (int i = 0; i < argc; ++i) text += (i ? " " : "") + shell_word(argv[i]);
}

const std::string& recorded_command_line() { return command_line_text(); }

void record_sweep_point(const std::string& sweep, int64_t index, const std::vector<std::string>& values) {
  SweepPointRecord& r = sweep_point_record();
  r.sweep = sweep;
  r.index = std::to_string(index);
  r.values.clear();
  for (const auto& v : values) r.values += (r.values.empty() ? "" : "\n") + v;
}

std::vector<std::string> provenance_attribute_names() {
  std::vector<std::string> names = {"command_line", "hosts"};
  for (const SlurmRow& r : kSlurmRows) names.emplace_back(r.attribute);
  for (const char* n : {"sweep", "sweep_index", "sweep_point"}) names.emplace_back(n);
  return names;
}

AttributeList session_provenance(Communicator& world) {
  // Every rank's host name, fixed-size, gathered everywhere (attributes are written collectively).
  constexpr int kHost = 256;
  std::array<char, kHost> mine{};
  if (::gethostname(mine.data(), kHost - 1) != 0) mine[0] = '\0';
  std::vector<char> all(size_t(kHost) * size_t(world.size()), '\0');
  if (world.size() > 1) {
    CTXSIM_CHECK(MPI_Allgather(mine.data(), kHost, MPI_CHAR, all.data(), kHost, MPI_CHAR, world.mpi()) == MPI_SUCCESS,
                 "MPI_Allgather of host names failed");
  } else {
    std::copy(mine.begin(), mine.end(), all.begin());
  }
  std::set<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) {
    const char* h = all.data() + size_t(r) * kHost;
    hosts.insert(h[0] ? std::string(h, strnlen(h, kHost)) : std::string("unknown"));
  }
  std::string host_list;
  for (const auto& h : hosts) host_list += (host_list.empty() ? "" : " ") + h;

  // Rank 0's command line and environment: one value per attribute on every rank.
  AttributeList a = {{"command_line", recorded_command_line()}, {"hosts", host_list}};
  const bool slurm = !env_or_empty("SLURM_JOB_ID").empty();
  for (const SlurmRow& r : kSlurmRows) {
    std::string v = env_or_empty(r.variable);
    if (slurm && v.empty() && std::string(r.attribute) == "slurm_restart_count") v = "0";
    a.emplace_back(r.attribute, v);
  }
  const SweepPointRecord& point = sweep_point_record();
  a.emplace_back("sweep", point.sweep);
  a.emplace_back("sweep_index", point.index);
  a.emplace_back("sweep_point", point.values);
  for (auto& entry : a) entry.second = broadcast_string(world, entry.second);
  return a;
}

}  // namespace ctxsim
