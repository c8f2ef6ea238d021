// What loading a checkpoint found (model-info prints it): its tensors, those the encoder took, and
// those it left, on purpose or not. Both readers fill it: safetensors (model.cpp) and GGUF
// (gguf_model.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

struct LoadReport {
  int64_t tensors_in_file = 0;
  int64_t encoder_tensors = 0;          // loaded (the pooler included when present)
  std::vector<std::string> ignored;     // task heads (cls.*, vocab_*) and buffers, skipped on purpose
  std::vector<std::string> unexpected;  // neither encoder nor known heads: listed in one warning
};

}  // namespace ctxsim
