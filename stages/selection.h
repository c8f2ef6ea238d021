// Selection rules of SPEC §3: which pairs of one (sample, layer, head) count as high-similarity.
#pragma once
#include <string>

namespace ctxsim {

struct SelectionRule {
  enum class Kind { TopFraction, RelativeToMax, Absolute };
  Kind kind = Kind::TopFraction;
  double value = 0.01;       // f, a or t
  std::string key() const;   // "top_fraction"
  std::string name() const;  // "top_fraction=0.01": the rule's label in logs and the store
};

}  // namespace ctxsim
