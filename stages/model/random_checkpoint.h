// Seeded random checkpoints in the Hugging Face format (config.json, model.safetensors,
// vocab.txt) with BERT's initialisation, in the layout of the config's family: the bare model
// (BertModel with the pooler, RobertaModel, GPT2Model), or its language-model class for a row with
// init_writes_mlm (DistilBertForMaskedLM: under `distilbert.`, with its head).
// The test fixtures and the study's random-init control. Same config and seed give byte-identical
// files. No LibTorch here.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stages/model/model_config.h"
#include "stages/model/safetensors.h"

namespace ctxsim {

// The initial value of one tensor of a `family` checkpoint, as F32: weights N(0, 0.02) (embeddings
// included), biases 0, a norm's weight 1 (LayerNorm or RMSNorm: a module the family's row names a
// norm, as transformers' _init_weights). The values come from a SplitMix64 stream of (seed, name) alone.
TensorData initial_tensor(const FamilySpec& family, const std::string& name, const std::vector<int64_t>& shape, uint64_t seed,
                          double stddev = 0.02);

// Every tensor of the family's checkpoint by its name in the file (see the header). Each tensor
// has its own SplitMix64 stream derived from (seed, its bare-model name), so the values of a
// tensor do not depend on which other tensors exist.
std::map<std::string, TensorData> random_checkpoint_weights(const ModelConfig& config, uint64_t seed);
// The same encoder in the family's language-model class (mlm_class): its tensors under
// model_prefix, then the head's own (lm_head_shapes), each from the same streams.
std::map<std::string, TensorData> random_lm_weights(const ModelConfig& config, uint64_t seed);

// Writes config.json, model.safetensors and the tokenizer of vocab_path into out_dir (created): a
// vocab.txt copied (WordPiece families: BERT, DistilBERT), or vocab.json + merges.txt from a byte-level BPE's files
// (GPT-2, RoBERTa; RoBERTa's specials added to GPT-2's tokens, see random_checkpoint.cpp).
// config.vocab_size is the vocabulary's size. A tokenizer of another kind than the family's is an
// Error naming vocab_path.
// `dtype` F32 or BF16 (each value rounded to nearest, ties to even): the file as large models ship.
void write_random_checkpoint(ModelConfig config, uint64_t seed, const std::string& vocab_path, const std::string& out_dir,
                             DType dtype = DType::F32);
// The tensors in `dtype` (F32 as they are, BF16 rounded to nearest even).
std::map<std::string, TensorData> in_dtype(std::map<std::string, TensorData> tensors, DType dtype);

// The tokenizer files (name, bytes) a model folder of `family` holds when made from vocab_path, as
// write_random_checkpoint writes them, and in *size the vocabulary size they give (more than
// vocab_path's own when the family's special tokens were added).
std::vector<std::pair<std::string, std::string>> model_tokenizer_files(Family family, const std::string& vocab_path, int64_t* size);

}  // namespace ctxsim
