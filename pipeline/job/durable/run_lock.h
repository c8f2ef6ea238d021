// The run lock: a run owns its output folder while it runs, so that two runs cannot write one
// store and both report success. Rank 0 holds it for the whole job (the other ranks are part of
// the same run). It is a file, <dir>/run.lock, made with O_EXCL (atomic on local disks, NFSv3+,
// Lustre and GPFS), naming its holder; a heartbeat thread refreshes its modification time.
//
// A lock left by a run that died (SIGKILL, a lost node) is stale and taken over when its holder
// is on this host and no longer alive (gone, a zombie, or its pid reused), when it belongs to this very SLURM job (a requeued job
// resuming its own run), or when its heartbeat is older than kStaleSeconds.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ctxsim {

// What a lock file says about its holder.
struct LockHolder {
  std::string host, job;  // job: SLURM_JOB_ID (plus _ARRAY_TASK_ID), empty outside SLURM
  long pid = 0;
  std::string ticks;  // the holder's start time in clock ticks since boot (proc(5)), to tell pid reuse
  std::string started;
  double heartbeat_age = 0;  // seconds since the holder last refreshed the lock
  std::string describe() const;
};

class RunLock {
 public:
  static constexpr double kHeartbeatSeconds = 15;
  static constexpr double kStaleSeconds = 600;

  // Creates `dir` if needed and takes its lock, or throws ctxsim::Error naming the holder
  // (`where` names the config key, e.g. "config.yaml:12:8: output.dir").
  RunLock(const std::string& dir, const std::string& where);
  ~RunLock();  // releases the lock; removes the folders it created again when they are empty
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  void heartbeat();
  std::string dir_, path_, content_;
  std::vector<std::string> created_;  // innermost first
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread beat_;
};

// The identity this process writes into a lock: "host=…\npid=…\nticks=…\njob=…\nstarted=…\n".
std::string lock_content();
// Parses a lock file's text (heartbeat_age is left 0).
LockHolder parse_lock(const std::string& text);
// Whether a lock with this holder may be taken over from here (see the file comment).
bool lock_is_stale(const LockHolder& holder);

}  // namespace ctxsim
