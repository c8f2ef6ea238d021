// A model from a GGUF file (llama.cpp's format, stages/base/gguf.h) in the family its architecture
// is (llama, qwen2, qwen3: a row of the table in gguf_model.cpp): its config from the metadata
// (`<arch>.block_count`, `<arch>.attention.head_count_kv`, ...), its tensors under the Hugging Face
// names of that family, dequantised to float32, and the rows of Q and K put back in Hugging Face's
// order where llama.cpp's converter interleaved the rotary halves (its `permute`). No MPI, no HDF5.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <string>

#include "stages/base/gguf.h"
#include "stages/model/load_report.h"
#include "stages/model/model_config.h"

namespace ctxsim {

// The config of the model in `header` (read from `path`): an Error naming the file and the key for
// an architecture ctxsim does not read, a missing or contradictory key, or a rope scaling it does
// not compute.
ModelConfig gguf_model_config(const GgufHeader& header, const std::string& path);

// The encoder's tensors (bare Hugging Face names, float32, shapes as config implies) and, with
// `head`, the language-model head's (lm_head.weight when the file has an untied output.weight).
// Errors name the file and the tensor: a type ctxsim does not dequantise, a shape, a non-finite
// value, a missing tensor.
std::map<std::string, at::Tensor> read_gguf_tensors(const GgufHeader& header, const ModelConfig& config, const std::string& path,
                                                    LoadReport& report, bool head = false);

}  // namespace ctxsim
