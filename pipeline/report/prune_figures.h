// The figures of a pruning store (`ctxsim prune`, SPEC §8): accuracy and loss as heads are removed
// in each order (the random orders as a band of their mean +- one standard deviation), and the
// per-head measures side by side as [layer x head] maps: importance (normalised per layer),
// ablation loss, attention entropy and the ctxsim score when the store has one.
#pragma once
#include <string>
#include <vector>

#include "pipeline/report/figure_entry.h"
#include "pipeline/store/prune_store.h"

namespace ctxsim::report {

std::vector<Entry> prune_figures(const PruneStoreData& d, const std::string& run);

// Several pruning stores (trained vs init): a panel per order, each run's accuracy curve in its
// colour. Throws naming a store that is not a pruning store.
struct PruneRun {
  std::string label, path;
  PruneStoreData data;
};
std::vector<PruneRun> load_prune_runs(const std::vector<std::string>& paths, const std::vector<std::string>& labels);
std::vector<Entry> prune_compare_figures(const std::vector<PruneRun>& runs, const std::string& title);

}  // namespace ctxsim::report
