// What a checkpoint must be before a byte of it is copied, without LibTorch (so that the fuzz
// targets run these checks under the sanitizers): the layers config.json declares, and for the
// language-model loader (MlmModel::load) its parameters by name, one tensor each, with their shapes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/model/model_config.h"
#include "stages/model/safetensors.h"

namespace ctxsim {

// The layers the checkpoint's tensors hold (<layer_prefix>N.*) must be the layers config.json
// declares: fewer would be missing tensors, more a model silently cut short. Errors name
// `config_path` and `weights_path` (and guess the family of a checkpoint of another one).
void check_layer_count(const std::map<std::string, TensorView>& tensors, const std::string& weights_path, const ModelConfig& config,
                       const std::string& config_path);

// One parameter's place in the flat buffer, by its Hugging Face name.
struct MlmParameter {
  std::string name;  // "bert.encoder.layer.0.attention.self.query.weight", "cls.predictions.bias"
  std::vector<int64_t> shape;
  int64_t offset = 0, numel = 0;
  bool decays = true;  // AdamW weight decay (not on biases and LayerNorm, as BERT)
};

// The parameters of the family's language-model class in name order (the tied decoder weight is
// the word embeddings).
std::vector<MlmParameter> mlm_parameter_layout(const ModelConfig& config);

// A family whose language-model head ctxsim evaluates (SPEC §8), or an Error naming config_path.
void require_lm_head(const ModelConfig& config, const std::string& config_path);

// The checkpoint's tensor of each parameter of mlm_parameter_layout(config): the encoder's under
// the family's prefix or bare (legacy LayerNorm gamma/beta read as weight/bias), the head's as
// they are, the tied decoder skipped, any tensor ctxsim does not use ignored whatever its dtype.
// Errors name the file: the layer count, two tensors for one parameter, no head, a missing tensor,
// a shape of another model.
std::map<std::string, const TensorView*> mlm_checkpoint_tensors(const std::map<std::string, TensorView>& tensors,
                                                                const std::string& weights_path, const ModelConfig& config,
                                                                const std::string& config_path);

}  // namespace ctxsim
