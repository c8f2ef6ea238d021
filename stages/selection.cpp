#include "stages/selection.h"

#include <sstream>

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
  return s.str();
}

}  // namespace ctxsim
