// The readable tables of a store: per layer, every statistic next to its chance baseline, and
// the top anchors of chosen heads. Shared by `ctxsim summary`, the end of `ctxsim run` and the
// report's summary section.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace ctxsim {

// `ctxsim summary`: per-layer tables of a store's statistics vs chance.
struct SummaryOptions {
  std::vector<std::pair<int64_t, int64_t>> heads;  // (layer, head) whose top anchors are listed; empty = one per layer
  int64_t top = 5;                                 // anchors listed per head
};
// A segmentation store (`ctxsim segment`) gets its method table instead.
int print_summary(const std::string& store_path, const SummaryOptions& options, std::ostream& out);

}  // namespace ctxsim
