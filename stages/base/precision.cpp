#include "stages/base/precision.h"

#include <cstring>
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

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace ctxsim
