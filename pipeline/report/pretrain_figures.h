// The figure of a pretraining run (`ctxsim pretrain`): training and held-out masked-LM loss and
// held-out accuracy by step, each next to the unigram baseline (predicting the corpus's token
// frequencies), written as loss.svg and loss.png.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim::report {

struct TrainingPoint {
  int64_t step = 0;
  double train_loss = 0;
  double heldout_loss = 0, heldout_accuracy = 0;  // NaN at a step without a held-out evaluation
};
struct Unigram {
  double loss = 0, accuracy = 0;
};

// Writes <dir>/loss.svg and loss.png (nothing without points, or in a build without figures).
// `causal`: the next-token objective's curves (else masked-LM's).
void write_training_curves(const std::string& dir, const std::vector<TrainingPoint>& points, Unigram unigram, int64_t batch, bool causal);

}  // namespace ctxsim::report
