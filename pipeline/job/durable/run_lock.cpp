#include "pipeline/job/durable/run_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>
#include <vector>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string this_job() {
  std::string job = env("SLURM_JOB_ID");
  if (!job.empty() && !env("SLURM_ARRAY_TASK_ID").empty()) job = env("SLURM_ARRAY_JOB_ID") + "_" + env("SLURM_ARRAY_TASK_ID");
  return job;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A process's state and start time from /proc/<pid>/stat ("" when there is no such process):
// the start time tells a live holder from a new process that reuses its pid.
std::pair<char, std::string> proc_stat(long pid) {
  std::string text;
  try {
    text = read_file_bytes("/proc/" + std::to_string(pid) + "/stat", 1 << 12);
  } catch (const Error&) { return {0, ""}; }
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return {0, ""};
  std::vector<std::string> fields;
  size_t pos = close + 2;
  while (pos < text.size()) {
    const size_t end = std::min(text.find(' ', pos), text.size());
    fields.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  if (fields.size() < 20 || fields[0].empty()) return {0, ""};
  return {fields[0][0], fields[19]};  // fields 3 (state) and 22 (starttime) of proc(5)
}

// Whether the holder (on this host) still runs: not gone, not a zombie, not a reused pid.
bool holder_alive(long pid, const std::string& started_ticks) {
  if (pid <= 0) return false;
  const auto [state, ticks] = proc_stat(pid);
  if (state == 0) return ::kill(pid_t(pid), 0) == 0 || errno != ESRCH;  // no /proc: ask the kernel
  if (state == 'Z' || state == 'X') return false;
  return started_ticks.empty() || ticks == started_ticks;
}

// Seconds since the file was last modified (its heartbeat), or -1 when it cannot be read.
double age_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  const double mtime = double(st.st_mtim.tv_sec) + 1e-9 * double(st.st_mtim.tv_nsec);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return std::max(0.0, now - mtime);
}

// O_EXCL creation with our content; false when the lock exists.
bool try_create(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    const int e = errno;
    throw Error(path, std::string("cannot create the run lock: ") + std::strerror(e), "output.dir must be a folder you may write to");
  }
  const bool ok = ::write(fd, content.data(), content.size()) == ssize_t(content.size());
  const int e = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(path.c_str());
    throw Error(path, std::string("cannot write the run lock: ") + std::strerror(ok ? errno : e), "free space on that file system");
  }
  return true;
}

// Takes a stale lock over: only one of several contenders wins the rename; one that renamed a
// lock other than the stale one it judged puts it back.
bool take_over(const std::string& path, const std::string& stale_text, const std::string& content) {
  const std::string aside = path + ".stale." + std::to_string(::getpid());
  if (std::rename(path.c_str(), aside.c_str()) != 0) return false;  // another contender won
  std::string moved;
  try {
    moved = read_file_bytes(aside, 1 << 16);
  } catch (const Error&) {}
  if (moved != stale_text) {                        // a fresh lock came in between: give it back
    if (::link(aside.c_str(), path.c_str()) != 0) { /* someone holds it already: theirs stands */
    }
    ::unlink(aside.c_str());
    return false;
  }
  ::unlink(aside.c_str());
  return try_create(path, content);
}

}  // namespace

std::string LockHolder::describe() const {
  std::string s = "host " + host + ", pid " + std::to_string(pid);
  if (!job.empty()) s += ", SLURM job " + job;
  if (!started.empty()) s += ", since " + started;
  s += ", last heartbeat " + std::to_string(int64_t(heartbeat_age)) + " s ago";
  return s;
}

std::string lock_content() {
  return "host=" + this_host() + "\npid=" + std::to_string(::getpid()) + "\nticks=" + proc_stat(::getpid()).second + "\njob=" + this_job() +
         "\nstarted=" + now_text() + "\n";
}

LockHolder parse_lock(const std::string& text) {
  LockHolder h;
  for (const auto& line : split_lines(text)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "host")
      h.host = value;
    else if (key == "job")
      h.job = value;
    else if (key == "started")
      h.started = value;
    else if (key == "ticks")
      h.ticks = value;
    else if (key == "pid")
      h.pid = std::strtol(value.c_str(), nullptr, 10);
  }
  return h;
}

bool lock_is_stale(const LockHolder& h) {
  if (!h.job.empty() && h.job == this_job()) return true;  // this job, before a requeue
  if (h.host == this_host() && !holder_alive(h.pid, h.ticks)) return true;
  return h.heartbeat_age > RunLock::kStaleSeconds;
}

RunLock::RunLock(const std::string& dir, const std::string& where) : dir_(dir), path_((fs::path(dir) / "run.lock").string()) {
  // The folders this run makes (dir and missing parents), to remove again if they stay empty.
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec) && p != p.parent_path(); p = p.parent_path())
    created_.push_back(p.string());
  make_folder(dir, where);
  content_ = lock_content();
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (try_create(path_, content_)) {
      beat_ = std::thread([this] { heartbeat(); });
      return;
    }
    std::string text;
    try {
      text = read_file_bytes(path_, 1 << 16);
    } catch (const Error&) {
      continue;  // released in between: try again
    }
    LockHolder holder = parse_lock(text);
    holder.heartbeat_age = age_of(path_);
    if (!lock_is_stale(holder))
      throw Error(where, "'" + dir + "' is in use by another run (" + holder.describe() + ")",
                  "wait for that run to end, or choose another output.dir; if that run is dead, delete " + path_);
    if (take_over(path_, text, content_)) {
      beat_ = std::thread([this] { heartbeat(); });
      return;
    }
  }
  throw Error(where, "'" + dir + "': other runs keep taking its lock", "run one job per output.dir");
}

void RunLock::heartbeat() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::duration<double>(kHeartbeatSeconds), [this] { return stop_; }))
    ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);  // advice to others: a failure only ages the lock
}

RunLock::~RunLock() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (beat_.joinable()) beat_.join();
  // Only our own lock goes (never one a stale-lock takeover gave to someone else).
  try {
    if (read_file_bytes(path_, 1 << 16) == content_) ::unlink(path_.c_str());
  } catch (const Error&) {}
  std::error_code ec;
  for (const auto& p : created_)  // innermost first
    if (!fs::is_empty(p, ec) || !fs::remove(p, ec)) break;
}

}  // namespace ctxsim
