#include "pipeline/progress.h"

#include <unistd.h>

#include <cstdio>

namespace ctxsim {

std::string format_duration(double s) {
  if (s < 0 || s != s) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t % 3600 / 60));
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

Progress::Progress(int64_t total, double interval, bool enabled)
    : total_(total), interval_(interval), tty_(isatty(STDERR_FILENO) == 1), enabled_(enabled),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

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
  const double rate = e > 0 ? double(done_) / e : 0;
  const double eta = rate > 0 ? double(total_ - done_) / rate : -1;
  const double pct = total_ > 0 ? 100.0 * double(done_) / double(total_) : 100.0;
  char line[256];
  std::snprintf(line, sizeof line, "samples %lld/%lld (%.1f%%)  %.2f samples/s  elapsed %s  ETA %s",
                static_cast<long long>(done_), static_cast<long long>(total_), pct, rate, format_duration(e).c_str(),
                final ? "0s" : format_duration(eta).c_str());
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
