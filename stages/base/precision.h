// The floating-point precision a model computes in (SPEC: float64 for count-for-count checks).
// No LibTorch here; stages/model/model.h maps it to a LibTorch dtype.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ctxsim {

enum class Precision { Float32, BFloat16, Float64 };

const char* precision_name(Precision p);                            // "float32"
std::optional<Precision> parse_precision(const std::string& name);  // nullopt for anything else

// Half-precision conversions (IEEE binary16, bfloat16) to float32, exact, for readers that do not
// use LibTorch (safetensors, GGUF).
float half_to_float(uint16_t h);
float bfloat16_to_float(uint16_t b);

}  // namespace ctxsim
