// Where a run's model files are: model.path, or model.name resolved offline in the Hugging
// Face cache, and which vocab.txt and lower-casing the tokenizer uses.
#pragma once
#include <string>

#include "pipeline/job/config.h"
#include "stages/tokenizer.h"

namespace ctxsim {

// The snapshot folder of `name` ("bert-base-uncased", "org/name") in the local HF cache:
// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub, honouring refs/main.
// Throws, saying where it looked, when it is not there.
std::string resolve_hf_cache(const std::string& name);

// model.path, else the cache folder of model.name, else "" (only model.vocab given).
std::string model_dir(const Config& config);

// The tokenizer of a run: model.vocab (else <model dir>/vocab.txt) and do_lower_case
// (config, else tokenizer_config.json, else true).
BertTokenizer make_tokenizer(const Config& config);

}  // namespace ctxsim
