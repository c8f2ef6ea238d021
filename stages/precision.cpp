#include "stages/precision.h"

namespace ctxsim {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Float32: return "float32";
    case Precision::BFloat16: return "bfloat16";
    case Precision::Float64: return "float64";
  }
  return "?";
}

std::optional<Precision> parse_precision(const std::string& name) {
  for (Precision p : {Precision::Float32, Precision::BFloat16, Precision::Float64})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

}  // namespace ctxsim
