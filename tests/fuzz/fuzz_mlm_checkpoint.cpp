// The language-model loader's checks (MlmModel::load, stages/model/checkpoint_checks.h) on hostile
// checkpoints: the input is a config.json, a NUL byte, then a model.safetensors. It either passes,
// and then every parameter of the layout has a tensor of its shape inside the input, or throws
// ctxsim::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/base/error.h"
#include "stages/model/checkpoint_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  if (nul == std::string::npos) return 0;
  try {
    const ctxsim::ModelConfig config = ctxsim::ModelConfig::parse(input.substr(0, nul), "config.json");
    const auto h = ctxsim::SafetensorsHeader::parse(data + nul + 1, size - nul - 1, "fuzz.safetensors");
    const auto by_name = ctxsim::mlm_checkpoint_tensors(h.tensors, "fuzz.safetensors", config, "config.json");
    for (const ctxsim::MlmParameter& p : ctxsim::mlm_parameter_layout(config)) {
      const ctxsim::TensorView& v = *by_name.at(p.name);
      if (v.shape != p.shape) __builtin_trap();
      volatile uint8_t sink = 0;
      if (v.nbytes) sink = sink ^ v.data[0] ^ v.data[v.nbytes - 1];
    }
  } catch (const ctxsim::Error&) {}
  return 0;
}
