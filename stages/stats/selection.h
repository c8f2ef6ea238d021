// Selection rules of SPEC §3: which pairs of one (sample, layer, head) count as high-similarity.
#pragma once
#include <cmath>
#include <string>
#include <vector>

namespace ctxsim {

struct SelectionRule {
  enum class Kind { TopFraction, RelativeToMax, Absolute };
  Kind kind = Kind::TopFraction;
  double value = 0.01;  // f, a or t
  // Optional per-rule attention settings (a folded sweep of them): NaN / empty = the config's
  // statistics.attention_threshold and statistics.separators.
  double attention_threshold = std::nan("");
  std::vector<std::string> separators;
  std::string key() const;  // "top_fraction"
  // "top_fraction=0.01" (plus ",beta=0.2" and ",separators=.|," when set): the rule's label in
  // logs and its group in the store.
  std::string name() const;
};

}  // namespace ctxsim
