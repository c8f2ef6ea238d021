// The shape of a run's store: its extents, rules, examples and statistics fields, from which every
// dataset is allocated at creation (store.h) and every axis named (scales.h). No HDF5 here.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/stats/accumulator.h"
#include "stages/stats/selection.h"

namespace ctxsim {

struct StoreLayout {
  int64_t samples = 0, seq_len = 0, layers = 0, heads = 0, vocab = 0;
  std::vector<SelectionRule> rules;
  std::vector<int64_t> examples;  // sample ids with full matrices
  std::vector<StatField> fields;  // the accumulator's fields: their datasets exist from creation
  int64_t units = 0;              // work units: /units keeps each one's partial sums (0: no /units)
};

// About how many bytes a store of this layout takes on disk (its datasets are allocated at
// creation).
double store_bytes(const StoreLayout& layout);

}  // namespace ctxsim
