#include "pipeline/job/durable/train_checkpoint.h"

#include <cstring>
#include <filesystem>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/model/safetensors.h"

namespace ctxsim {
namespace {

constexpr const char* kFormat = "ctxsim-pretrain-checkpoint-1";
constexpr const char* kNames[3] = {"adam_m", "adam_v", "params"};  // name order: as the file lays them out

TensorData as_tensor(const std::vector<float>& v) {
  TensorData t;
  t.dtype = DType::F32;
  t.shape = {int64_t(v.size())};
  t.bytes.resize(v.size() * sizeof(float));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// SHA-256 over the three tensors' bytes in name order.
std::string digest(const std::vector<const uint8_t*>& data, const std::vector<size_t>& sizes) {
  std::string all;
  for (size_t i = 0; i < data.size(); ++i) all += sha256_bytes(data[i], sizes[i]);
  return sha256_bytes(reinterpret_cast<const uint8_t*>(all.data()), all.size());
}

}  // namespace

std::string train_checkpoint_path(const std::string& output_dir) {
  return (std::filesystem::path(output_dir) / "checkpoint.safetensors").string();
}

void write_train_checkpoint(const std::string& path, const TrainCheckpoint& c) {
  std::map<std::string, TensorData> tensors = {
      {"adam_m", as_tensor(c.adam_m)}, {"adam_v", as_tensor(c.adam_v)}, {"params", as_tensor(c.params)}};
  std::vector<const uint8_t*> data;
  std::vector<size_t> sizes;
  for (const char* name : kNames) {
    data.push_back(tensors.at(name).bytes.data());
    sizes.push_back(tensors.at(name).bytes.size());
  }
  write_safetensors(path, tensors,
                    {{"format", kFormat},
                     {"identity", c.identity},
                     {"steps_done", std::to_string(c.steps_done)},
                     {"history", c.history_json},
                     {"sha256", digest(data, sizes)}},
                    /*durable=*/true);
}

std::optional<TrainCheckpoint> read_train_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const std::string fix = "delete " + path + " to train from the start, or restore it from a copy";
  const SafetensorsFile file(path);
  const auto meta = [&](const char* key) {
    const auto it = file.metadata().find(key);
    if (it == file.metadata().end())
      throw Error(path, std::string("not a ctxsim training checkpoint (no '") + key + "' in its header)", fix);
    return it->second;
  };
  if (meta("format") != kFormat) throw Error(path, "not a ctxsim training checkpoint of this version (" + meta("format") + ")", fix);
  TrainCheckpoint c;
  c.identity = meta("identity");
  c.history_json = meta("history");
  try {
    c.steps_done = std::stoll(meta("steps_done"));
  } catch (const std::exception&) { throw Error(path, "its steps_done is not a number", fix); }
  std::vector<const uint8_t*> data;
  std::vector<size_t> sizes;
  std::vector<float>* into[3] = {&c.adam_m, &c.adam_v, &c.params};
  for (int i = 0; i < 3; ++i) {
    const TensorView* v = file.find(kNames[i]);
    if (!v || v->dtype != DType::F32 || v->shape.size() != 1)
      throw Error(path, std::string("not a ctxsim training checkpoint (tensor '") + kNames[i] + "' missing or misshapen)", fix);
    if (v->shape[0] != file.find(kNames[0])->shape[0])
      throw Error(path, "not a ctxsim training checkpoint (its tensors differ in length)", fix);
    data.push_back(v->data);
    sizes.push_back(v->nbytes);
    into[i]->resize(size_t(v->shape[0]));
    std::memcpy(into[i]->data(), v->data, v->nbytes);
  }
  if (digest(data, sizes) != meta("sha256")) throw Error(path, "the checkpoint is damaged (its checksum does not match)", fix);
  return c;
}

}  // namespace ctxsim
