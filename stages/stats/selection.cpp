#include "stages/stats/selection.h"

#include <sstream>

#include "stages/base/files.h"

namespace ctxsim {

std::string SelectionRule::key() const {
  switch (kind) {
    case Kind::TopFraction: return "top_fraction";
    case Kind::RelativeToMax: return "relative_to_max";
    case Kind::Absolute: return "absolute";
  }
  return "?";
}

std::string SelectionRule::name() const {
  std::ostringstream s;
  s << key() << "=" << value;
  if (!std::isnan(attention_threshold)) s << ",beta=" << attention_threshold;
  if (!separators.empty()) {
    s << ",separators=";
    s << join(separators, "|");
  }
  return s.str();
}

}  // namespace ctxsim
