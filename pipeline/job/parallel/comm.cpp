#include "pipeline/job/parallel/comm.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error("MPI", std::string(call) + " failed: " + std::string(text, size_t(len)), "check the MPI launch (mpirun/srun --mpi=pmix)");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
  }
  return MPI_SUM;
}

// The session folder of this process's isolated singleton (MpiSession::ensure), if it made one.
std::string& session_folder() {
  static std::string folder;
  return folder;
}

// Session folders are <tmpdir>/ctxsim-mpi.<host>.<pid>.XXXXXX. A process killed outright could not
// remove its own: those of this host whose process is gone, and that belong to this user, go
// when the next command starts.
std::string session_folder_prefix() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string("ctxsim-mpi.") + (host[0] ? host : "host") + ".";
}

void remove_stale_session_folders(const std::string& tmp, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* stop = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &stop, 10);
    struct stat st {};
    if (pid <= 0 || *stop != '.' || ::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask about
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
  }
}

// MPI counts are int: large buffers go in pieces.
constexpr size_t kChunk = size_t(1) << 28;

}  // namespace

bool started_by_launcher() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"); }

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return 0;
}

namespace {

// The environment before prepare_environment changed it (NAME=VALUE entries), for unset_arguments.
std::vector<std::string>& user_environment() {
  static std::vector<std::string> entries;
  return entries;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> entries;
  for (char** e = environ; e && *e; ++e) entries.emplace_back(*e);
  return entries;
}

void set_default(const char* name, const std::string& value) {
  if (std::getenv(name)) return;  // the user's setting wins
  ::setenv(name, value.c_str(), 1);
}

}  // namespace

void MpiSession::prepare_environment() {
  static bool done = false;
  if (done) return;
  done = true;
  user_environment() = current_environment();
  // A process no launcher started (no mpirun, no srun --mpi=pmix) is a world of one: it needs
  // no network, and Open MPI's probe for one (UCX) costs a quarter of a second at every start.
  // A user's own choice of transport wins.
  const bool launched = started_by_launcher();
  if (!launched) set_default("OMPI_MCA_pml", "ob1");
  // Nor does it need Open MPI's orted, whose fork and handshake took 0.15 s of every command and
  // its teardown 0.05 s more: it runs as an isolated singleton. Every isolated singleton names
  // its session folder the same (<tmpdir>/ompi.<host>.<uid>/jf.0/…), so two commands started side
  // by side raced on it (one died in MPI_Init): each gets a tmpdir of its own, removed after
  // MPI_Finalize (or, if it was killed, by a later command). A user's own setting of either wins,
  // and without a tmpdir orted starts as before.
  if (!launched && !std::getenv("OMPI_MCA_ess_singleton_isolated") && !std::getenv("OMPI_MCA_orte_tmpdir_base")) {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string tmp = tmpdir && *tmpdir ? tmpdir : "/tmp", prefix = session_folder_prefix();
    remove_stale_session_folders(tmp, prefix);
    std::string folder = tmp + "/" + prefix + std::to_string(::getpid()) + ".XXXXXX";
    if (::mkdtemp(folder.data())) {
      session_folder() = folder;
      set_default("OMPI_MCA_orte_tmpdir_base", folder);
      set_default("OMPI_MCA_ess_singleton_isolated", "1");
    }
  }
  // Open MPI 4.1's shared-file-pointer component `lockedfile` overflows a buffer (SIGABRT under
  // _FORTIFY_SOURCE) in MPI_File_open of a path over about 230 characters, as deep cluster
  // scratch folders are. ctxsim never uses shared file pointers: leave that component out.
  set_default("OMPI_MCA_sharedfp", "^lockedfile");
}

std::vector<std::string> MpiSession::unset_arguments() {
  if (user_environment().empty()) return {};  // nothing changed it
  const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::map<std::string, std::string> before;
  for (const auto& entry : user_environment()) before.emplace(name_of(entry), entry);
  std::vector<std::string> args;
  for (const auto& entry : current_environment()) {
    const auto it = before.find(name_of(entry));
    if (it == before.end())
      args.insert(args.end(), {"-u", name_of(entry)});
    else if (it->second != entry)
      args.push_back(it->second);  // NAME=VALUE as the user had it
  }
  return args;
}

void MpiSession::ensure() {
  int ready = 0;
  check_mpi(MPI_Initialized(&ready), "MPI_Initialized");
  if (ready) return;
  prepare_environment();  // a no-op when main has (tests that link this library call ensure alone)
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as return codes and become exceptions (MpiComm), not silent aborts.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiSession::~MpiSession() {
  int ready = 0, done = 0;
  MPI_Initialized(&ready);
  MPI_Finalized(&done);
  if (ready && !done) MPI_Finalize();  // nothing to report to at exit: a failure is left to the launcher
  if (!session_folder().empty()) {
    std::error_code ec;
    std::filesystem::remove_all(session_folder(), ec);  // best effort: a leftover is a few empty folders
    session_folder().clear();
  }
}

MpiComm::MpiComm(MPI_Comm parent) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  check_mpi(MPI_Comm_size(local, &local_size_), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(local, &local_rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_free(&local), "MPI_Comm_free");
}

MpiComm::~MpiComm() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiComm::allreduce(int64_t* data, size_t n, ReduceOp op) {
  for (size_t off = 0; off < n; off += kChunk)
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + off, int(std::min(kChunk, n - off)), MPI_INT64_T, mpi_op(op), comm_), "MPI_Allreduce");
}

namespace {

// Sums `data` into rank 0 in place, chunk by chunk; with `broadcast`, each summed chunk then goes
// back to every rank (the same bits everywhere, unlike an all-reduce of floating-point values).
template <class T>
void sum_at_root(MPI_Comm comm, int rank, T* data, size_t n, MPI_Datatype type, bool broadcast) {
  for (size_t off = 0; off < n; off += kChunk) {
    const int count = int(std::min(kChunk, n - off));
    if (rank == 0)
      check_mpi(MPI_Reduce(MPI_IN_PLACE, data + off, count, type, MPI_SUM, 0, comm), "MPI_Reduce");
    else
      check_mpi(MPI_Reduce(data + off, nullptr, count, type, MPI_SUM, 0, comm), "MPI_Reduce");
    if (broadcast) check_mpi(MPI_Bcast(data + off, count, type, 0, comm), "MPI_Bcast");
  }
}

}  // namespace

void MpiComm::reduce_sum_to_root(int64_t* data, size_t n) { sum_at_root(comm_, rank_, data, n, MPI_INT64_T, false); }

void MpiComm::broadcast(void* data, size_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  for (size_t off = 0; off < bytes; off += kChunk)
    check_mpi(MPI_Bcast(p + off, int(std::min(kChunk, bytes - off)), MPI_BYTE, root, comm_), "MPI_Bcast");
}

void MpiComm::sum_to_all(float* data, size_t n) { sum_at_root(comm_, rank_, data, n, MPI_FLOAT, true); }
void MpiComm::sum_to_all(double* data, size_t n) { sum_at_root(comm_, rank_, data, n, MPI_DOUBLE, true); }

void MpiComm::barrier() { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

}  // namespace ctxsim
