#include "pipeline/job/parallel/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ctxsim {

std::string format_duration(double s) {
  if (s < 0 || s != s) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t % 3600 / 60));
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

double seconds_since_process_start() {
  // /proc/self/stat field 22 is the start time in clock ticks since boot; /proc/uptime is now.
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string text;
  double up = 0;
  if (!std::getline(stat, text) || !(uptime >> up)) return 0;
  std::istringstream rest(text.substr(text.rfind(')') + 2));  // the command name may hold spaces
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {}
  return std::max(0.0, up - std::stod(field) / double(sysconf(_SC_CLK_TCK)));
}

void BatchTimes::add(double seconds, double started_after) {
  if (first_ < 0) {
    first_ = seconds;
    first_at_ = started_after;
  } else {
    later_.push_back(seconds);
  }
}

std::string BatchTimes::describe() const {
  if (first_ < 0) return "no batch computed";
  char buf[160];
  std::snprintf(buf, sizeof buf, "first batch began %.2f s after the process started and took %.3f s", first_at_, first_);
  std::string s = buf;
  if (!later_.empty()) {
    std::vector<double> v = later_;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    std::snprintf(buf, sizeof buf, "; later batches %.3f s median (%zu)", v[v.size() / 2], v.size());
    s += buf;
  }
  return s;
}

Progress::Progress(int64_t total, double interval, bool enabled, std::string what)
    : total_(total), interval_(interval), tty_(isatty(STDERR_FILENO) == 1), enabled_(enabled), what_(std::move(what)),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

double Progress::elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

void Progress::resume_from(int64_t done) { resumed_ = done_ = done; }

void Progress::update(int64_t done) {
  done_ = done;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (since < (tty_ ? 0.25 : interval_)) return;
  last_ = now;
  print(false);
}

void Progress::finish() {
  if (enabled_) print(true);
}

void Progress::print(bool final) {
  const double e = elapsed();
  const double rate = e > 0 ? double(done_ - resumed_) / e : 0;
  const double eta = rate > 0 ? double(total_ - done_) / rate : -1;
  const double pct = total_ > 0 ? 100.0 * double(done_) / double(total_) : 100.0;
  char resumed[48] = "";
  if (resumed_ > 0) std::snprintf(resumed, sizeof resumed, ", %lld resumed", static_cast<long long>(resumed_));
  // The last line of a job stopped early (a signal, a failure) says so, not "ETA 0s".
  const std::string tail = !final ? "ETA " + format_duration(eta) : done_ >= total_ ? "ETA 0s" : "stopped";
  char line[256];
  char speed[32];  // a slow job's rate in three figures, not "0.02"
  std::snprintf(speed, sizeof speed, rate >= 1 || rate == 0 ? "%.2f" : "%.3g", rate);
  std::snprintf(line, sizeof line, "%s %lld/%lld (%.1f%%%s)  %s %s/s  elapsed %s  %s", what_.c_str(), static_cast<long long>(done_),
                static_cast<long long>(total_), pct, resumed, speed, what_.c_str(), format_duration(e).c_str(), tail.c_str());
  if (tty_) {
    const int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * done_ / total_) : width;
    std::fprintf(stderr, "\r[%.*s%*s] %s", filled, "##############################", width - filled, "", line);
    if (final) std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "ctxsim: progress: %s\n", line);
  }
  std::fflush(stderr);
}

}  // namespace ctxsim
