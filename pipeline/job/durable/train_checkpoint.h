// The resume state of `ctxsim pretrain`: the flat parameters, AdamW's two moments, the steps
// done and the loss history, in one safetensors file (<output.dir>/checkpoint.safetensors)
// written by rank 0 through a temporary file, fsync'ed and renamed: a kill at any moment leaves
// the previous checkpoint or the next, never half of one. A SHA-256 of the tensors in its header
// tells damage from a checkpoint; the run's identity (the keys that determine the weights) tells
// another config's. No LibTorch here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ctxsim {

struct TrainCheckpoint {
  std::string identity;                       // identity_yaml(config, job_kind_named("pretrain"))
  int64_t steps_done = 0;                     // optimizer steps applied
  std::vector<float> params, adam_m, adam_v;  // [P] each
  std::string history_json;                   // the loss history so far (pretrain.cpp's rows)
};

std::string train_checkpoint_path(const std::string& output_dir);
void write_train_checkpoint(const std::string& path, const TrainCheckpoint& c);
// nullopt when there is no file; throws ctxsim::Error naming the file when it is not a ctxsim
// training checkpoint or is damaged.
std::optional<TrainCheckpoint> read_train_checkpoint(const std::string& path);

}  // namespace ctxsim
