#include "stages/base/model_folder.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include <set>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"

namespace ctxsim {

std::string ModelFolder::file(const char* name) const { return (std::filesystem::path(dir_) / name).string(); }

bool ModelFolder::is_gguf() const {
  std::error_code ec;
  return dir_.size() > 5 && dir_.compare(dir_.size() - 5, 5, ".gguf") == 0 && !std::filesystem::is_directory(dir_, ec);
}

bool ModelFolder::has(const char* name) const {
  std::error_code ec;
  return std::filesystem::is_regular_file(file(name), ec);
}

bool ModelFolder::sharded() const { return !is_gguf() && !has(kWeights) && has(kWeightsIndex); }

std::vector<std::string> ModelFolder::weight_files(std::map<std::string, std::string>* weight_map) const {
  if (!sharded()) return {weights()};
  const std::string index = file(kWeightsIndex);
  const std::string fix = "download or save the checkpoint again (save_pretrained writes the index with its shards)";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file_bytes(index, kMaxJsonBytes, "the shard index", "check the model folder"));
  } catch (const nlohmann::json::exception& e) { throw Error(index, std::string("malformed JSON: ") + e.what(), fix); }
  const auto map = j.is_object() ? j.find("weight_map") : j.end();
  if (map == j.end() || !map->is_object() || map->empty()) throw Error(index, "has no weight_map of tensors to shards", fix);
  std::set<std::string> shards;
  for (auto it = map->begin(); it != map->end(); ++it) {
    if (!it->is_string()) throw Error(index + ": weight_map." + it.key(), "is not a file name", fix);
    const std::string shard = it->get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == ".." || shard.find('\0') != std::string::npos)
      throw Error(index + ": weight_map." + it.key(), "'" + shard + "' is not a file name in the folder", fix);
    if (weight_map) (*weight_map)[it.key()] = shard;
    shards.insert(shard);
  }
  std::vector<std::string> out;
  for (const std::string& shard : shards) {
    if (!has(shard.c_str())) throw Error(index, "names the shard " + shard + ", which is not in " + dir_, fix);
    out.push_back(file(shard.c_str()));
  }
  return out;
}

std::string ModelFolder::weights_sha256() const {
  if (!sharded()) return sha256_file(weights());
  std::string text = read_file_bytes(file(kWeightsIndex), kMaxJsonBytes, "the shard index", "check the model folder");
  for (const std::string& shard : weight_files())
    text += "\n" + std::filesystem::path(shard).filename().string() + " " + sha256_file(shard);
  return sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

}  // namespace ctxsim
