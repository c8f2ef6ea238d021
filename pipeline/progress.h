// Progress of a long run: samples done, rate and ETA — a live line on a terminal, a plain line
// every `interval` seconds in logs.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ctxsim {

class Progress {
 public:
  Progress(int64_t total, double interval_seconds, bool enabled = true);
  void update(int64_t done);  // cheap when nothing is due
  void finish();
  double elapsed() const;

 private:
  void print(bool final);
  int64_t total_, done_ = 0;
  double interval_;
  bool tty_, enabled_;
  std::chrono::steady_clock::time_point start_, last_;
};

std::string format_duration(double seconds);

}  // namespace ctxsim
