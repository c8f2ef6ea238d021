// The readable tables of a store: per layer, every statistic next to its chance baseline, and
// the top anchors of chosen heads. Shared by `ctxsim summary`, the end of `ctxsim run` and the
// report's summary section.
#pragma once
#include <hdf5.h>

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
// The store at store_path, whatever its kind (store_kinds.h): a run store's tables, a segmentation
// store's method table, a pruning store's curves.
int print_summary(const std::string& store_path, const SummaryOptions& options, std::ostream& out);

// The summaries of each kind, on a complete store opened by the caller.
void print_run_summary(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out);
void print_prune_summary(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out);

}  // namespace ctxsim
