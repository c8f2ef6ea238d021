// The statistics options of a run from its config and vocabulary, shared by `run` and the
// calibration of `plan` so that both measure the same arithmetic.
#pragma once
#include "pipeline/job/config.h"
#include "stages/statistics.h"
#include "stages/tokenizer.h"

namespace ctxsim {

// Rules, thresholds, separator ids (global and per rule) and special ids. Throws, naming the key,
// when a separator is not a token of the vocabulary.
StatisticsOptions statistics_options(const Config& config, const Vocab& vocab);

}  // namespace ctxsim
