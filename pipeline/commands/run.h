// `ctxsim run`: the whole job — samples, model, per-layer similarity and statistics, the store,
// progress — and `ctxsim summary`: readable tables from any store.
#pragma once
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace ctxsim {


// Thrown on every rank when the job stops for a reason all ranks agreed on (an error already
// reported by one rank, SIGTERM): main exits with code() and prints nothing more.
class JobExit : public std::runtime_error {
 public:
  explicit JobExit(int code);
  int code() const { return code_; }

 private:
  int code_;
};

int run_job(const std::string& config_path, const std::vector<std::string>& overrides, std::ostream& out);

struct SummaryOptions {
  std::vector<std::pair<int64_t, int64_t>> heads;  // (layer, head) whose top anchors are listed; empty = one per layer
  int64_t top = 5;                                 // anchors listed per head
};
int print_summary(const std::string& store_path, const SummaryOptions& options, std::ostream& out);

}  // namespace ctxsim
