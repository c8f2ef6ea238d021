// Progress of a long run: samples done, rate and ETA — a live line on a terminal, a plain line
// every `interval` seconds in logs.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

class Progress {
 public:
  // what: the unit counted ("samples", "documents").
  Progress(int64_t total, double interval_seconds, bool enabled = true, std::string what = "samples");
  // The count a resumed job had done before this process: the rate and ETA count only what this
  // process computes (a job resumed at 230 of 500 is not 230 samples in its first minute).
  void resume_from(int64_t done);
  void update(int64_t done);  // cheap when nothing is due
  void finish();
  double elapsed() const;
  const std::string& what() const { return what_; }  // "samples", "documents"

 private:
  void print(bool final);
  int64_t total_, done_ = 0, resumed_ = 0;
  double interval_;
  bool tty_, enabled_;
  std::string what_;
  std::chrono::steady_clock::time_point start_, last_;
};

std::string format_duration(double seconds);

// Seconds since this process started (from the kernel's start time, so the dynamic loading and
// static initialisation before main count too); 10 ms resolution.
double seconds_since_process_start();

// Durations of the batches a rank computed: the first one (cold caches, first allocations)
// apart from the rest, for the run's closing line.
class BatchTimes {
 public:
  void add(double seconds, double started_after);  // started_after: seconds_since_process_start()
  bool started() const { return first_ >= 0; }
  std::string describe() const;  // "first batch at 1.2 s took 0.66 s; later 0.61 s median (31)"
 private:
  double first_ = -1, first_at_ = 0;
  std::vector<double> later_;
};

}  // namespace ctxsim
