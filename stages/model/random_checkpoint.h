// Seeded random BERT checkpoints in the Hugging Face format (config.json, model.safetensors,
// vocab.txt) with BERT's initialisation: the test fixtures and the study's random-init control.
// Same config and seed give byte-identical files. No LibTorch here.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "stages/model/bert_config.h"
#include "stages/model/safetensors.h"

namespace ctxsim {

// BERT's initial value of one tensor, as F32: weights N(0, 0.02) (embeddings included), biases 0,
// LayerNorm weight 1 and bias 0, judged by its name. The values come from a SplitMix64 stream of
// (seed, name) alone.
TensorData bert_initial_tensor(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed);

// Weights N(0, 0.02) (embeddings included), biases 0, LayerNorm weight 1 and bias 0, as F32.
// Each tensor has its own SplitMix64 stream derived from (seed, name), so the values of a
// tensor do not depend on which other tensors exist.
std::map<std::string, TensorData> random_bert_weights(const BertConfig& config, uint64_t seed);

// Writes config.json, model.safetensors and a copy of vocab_path into out_dir (created).
// config.vocab_size is taken from the vocabulary's line count.
void write_random_checkpoint(BertConfig config, uint64_t seed, const std::string& vocab_path,
                             const std::string& out_dir);

}  // namespace ctxsim
