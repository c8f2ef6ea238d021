// What the statistics of a run measure (SPEC §3-4), as plain values: the selection rules, the
// attention threshold, the separator and special token ids. No LibTorch here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "stages/stats/selection.h"

namespace ctxsim {

struct StatisticsOptions {
  std::vector<SelectionRule> rules;
  double attention_threshold = 0.1;                      // beta (SPEC §4.6), for rules without their own
  std::vector<int64_t> separator_ids;                    // token ids of separators (SPEC §4.7), for rules without their own
  std::vector<std::vector<int64_t>> rule_separator_ids;  // per rule; empty (or missing) = separator_ids
  std::vector<int64_t> special_ids;                      // [PAD] [UNK] [CLS] [SEP] [MASK]: never a repetition
  bool dense_only = false;                               // tests: always take the dense path (same results, slower)
};

// Every separator token of a run, each once: separator_ids, then the rules' own tokens, in order.
// The attention on each is measured (Stat::SeparatorMassByToken); a set's mass is the sum of its tokens'.
inline std::vector<int64_t> separator_tokens(const StatisticsOptions& o) {
  std::vector<int64_t> out;
  const auto add = [&](const std::vector<int64_t>& ids) {
    for (int64_t id : ids)
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  add(o.separator_ids);
  for (const auto& own : o.rule_separator_ids) add(own);
  return out;
}

}  // namespace ctxsim
