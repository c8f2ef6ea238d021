// A model's config.json: a ModelConfig within ctxsim's limits, or one ctxsim::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/base/error.h"
#include "stages/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ctxsim::ModelConfig c = ctxsim::ModelConfig::parse(std::string(reinterpret_cast<const char*>(data), size), "config.json");
    (void)ctxsim::encoder_tensor_shapes(c);  // bounded by the limits parse checks
    (void)c.to_json();
    (void)c.flops_per_sample(128);
  } catch (const ctxsim::Error&) {}
  return 0;
}
