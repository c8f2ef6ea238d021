// What the statistics of a run measure (SPEC §3-4), as plain values: the selection rules, the
// attention threshold, the separator and special token ids. No LibTorch here.
#pragma once
#include <cstdint>
#include <vector>

#include "stages/selection.h"

namespace ctxsim {

struct StatisticsOptions {
  std::vector<SelectionRule> rules;
  double attention_threshold = 0.1;     // beta (SPEC §4.6), for rules without their own
  std::vector<int64_t> separator_ids;   // token ids of separators (SPEC §4.7), for rules without their own
  std::vector<std::vector<int64_t>> rule_separator_ids;  // per rule; empty (or missing) = separator_ids
  std::vector<int64_t> special_ids;     // [PAD] [UNK] [CLS] [SEP] [MASK]: never a repetition
  bool dense_only = false;              // tests: always take the dense path (same results, slower)
};

}  // namespace ctxsim
