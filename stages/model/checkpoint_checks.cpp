#include "stages/model/checkpoint_checks.h"

#include <algorithm>
#include <charconv>

#include "stages/base/error.h"
#include "stages/model/family.h"

namespace ctxsim {

void check_layer_count(const std::map<std::string, TensorView>& tensors, const std::string& weights_path, const ModelConfig& config,
                       const std::string& config_path) {
  const FamilySpec& f = family_spec(config.family);
  const std::string prefix = f.layer_prefix;
  int64_t layers = 0;
  for (const auto& [key, view] : tensors) {
    const std::string name = canonical_tensor_name(f, key);
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t n = -1;
    const char* first = name.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, name.data() + name.size(), n);
    if (ec == std::errc() && end != first && *end == '.' && n >= 0 && n < (int64_t(1) << 20)) layers = std::max(layers, n + 1);
  }
  if (layers == 0) {
    // No tensor of this family's layers: often another family's checkpoint under this config.json.
    std::string guess;
    for (const FamilySpec* other : all_families()) {
      if (other == &f) continue;
      for (const auto& [key, view] : tensors)
        if (canonical_tensor_name(*other, key).compare(0, std::string(other->layer_prefix).size(), other->layer_prefix) == 0) {
          guess = "; its tensors look like a " + std::string(other->display) + " checkpoint's (" + key + ")";
          break;
        }
      if (!guess.empty()) break;
    }
    throw Error(config_path + ": model_type",
                "declares a " + std::string(f.display) + " model ('" + f.model_type + "'" +
                    (f.family == Family{} ? ", the default when the key is absent" : "") + "), but " + weights_path + " holds no " +
                    f.display + " layer (no tensor " + prefix + "0.…)" + guess,
                "use the config.json that belongs to these weights (its model_type picks the family)");
  }
  if (layers != config.num_layers)
    throw Error(config_path + ": " + f.keys.layers,
                "declares " + std::to_string(config.num_layers) + " layer(s), but " + weights_path + " holds " + std::to_string(layers) +
                    " (" + prefix + "0 … " + prefix + std::to_string(layers - 1) + ")",
                "use the config.json that belongs to these weights");
}

std::vector<MlmParameter> mlm_parameter_layout(const ModelConfig& c) {
  const FamilySpec& f = family_spec(c.family);
  CTXSIM_CHECK(f.lm_head.objective != LmObjective::None, "mlm_parameter_layout: a family without a language-model head");
  std::map<std::string, std::vector<int64_t>> shapes = lm_head_shapes(c);
  for (const auto& [name, shape] : encoder_tensor_shapes(c)) shapes[f.model_prefix + name] = shape;
  std::vector<MlmParameter> out;
  int64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    MlmParameter p;
    p.name = name;
    p.shape = shape;
    p.numel = 1;
    for (auto d : shape) p.numel *= d;
    p.offset = offset;
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    p.decays = !bias && name.find("LayerNorm") == std::string::npos;
    offset += p.numel;
    out.push_back(std::move(p));
  }
  return out;
}

void require_lm_head(const ModelConfig& config, const std::string& config_path) {
  const FamilySpec& f = family_spec(config.family);
  if (f.lm_head.objective == LmObjective::None)
    throw Error(config_path + ": model_type", std::string("is ") + f.model_type + ", whose language-model head ctxsim does not evaluate",
                "give a folder of a family with a head (" + lm_model_types() + ")");
}

std::map<std::string, const TensorView*> mlm_checkpoint_tensors(const std::map<std::string, TensorView>& tensors,
                                                                const std::string& weights_path, const ModelConfig& config,
                                                                const std::string& config_path) {
  require_lm_head(config, config_path);
  const FamilySpec& f = family_spec(config.family);
  check_layer_count(tensors, weights_path, config, config_path);
  const std::map<std::string, std::vector<int64_t>> head = lm_head_shapes(config);
  std::map<std::string, const TensorView*> by_name;
  for (const auto& [key, view] : tensors) {
    std::string name = legacy_norm_name(key);
    if (!head.count(name)) {
      const std::string bare = canonical_tensor_name(f, key);
      if (bare.empty()) continue;  // a head or buffer ctxsim does not use (position_ids, …), whatever its dtype
      name = f.model_prefix + bare;
    }
    if (const auto [it, fresh] = by_name.emplace(name, &view); !fresh)
      throw Error(weights_path, "holds two tensors for the parameter " + name + ": '" + it->second->name + "' and '" + key + "'",
                  "keep one of them (re-save the checkpoint from the model that should be analysed)");
  }
  for (const auto& [name, shape] : head)
    if (!by_name.count(name))
      throw Error(weights_path,
                  std::string("has no ") + f.display + " language-model head (" + name + " is missing): the " +
                      (f.lm_head.objective == LmObjective::Causal ? "next-token" : "masked-LM") + " loss needs one",
                  std::string("give a ") + f.mlm_class + " folder (e.g. what 'ctxsim init-model --mlm' or 'ctxsim pretrain' writes)");
  for (const MlmParameter& p : mlm_parameter_layout(config)) {
    const auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw Error(weights_path, "lacks the tensor " + p.name, std::string("give a complete ") + f.mlm_class + " checkpoint");
    if (it->second->shape != p.shape)
      throw Error(weights_path + ": " + it->second->name, "has the shape of another model than config.json's",
                  "use the config.json of these weights");
  }
  return by_name;
}

}  // namespace ctxsim
