#include "stages/base/precision.h"

#include <utility>

namespace ctxsim {

namespace {

constexpr std::pair<Precision, const char*> kNames[] = {
    {Precision::Float32, "float32"}, {Precision::BFloat16, "bfloat16"}, {Precision::Float64, "float64"}};

}  // namespace

const char* precision_name(Precision p) {
  for (const auto& [value, name] : kNames)
    if (value == p) return name;
  return "?";
}

std::optional<Precision> parse_precision(const std::string& name) {
  for (const auto& [value, spelling] : kNames)
    if (name == spelling) return value;
  return std::nullopt;
}

}  // namespace ctxsim
