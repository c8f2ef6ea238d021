// A Hugging Face model folder as ctxsim reads and writes it: the one place that spells the names
// of its files (config.json, model.safetensors, the tokenizer's) and digests its weights. It
// knows names and paths only: what the files hold is read by stages/model and stages/text. A
// GGUF file (llama.cpp's: config, weights and tokenizer in one file) stands in for a folder: its
// weights are the file itself.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ctxsim {

class ModelFolder {
 public:
  // The file names, for code that lists or checks a folder's files by name.
  static constexpr const char* kConfig = "config.json";
  static constexpr const char* kWeights = "model.safetensors";
  static constexpr const char* kWeightsIndex = "model.safetensors.index.json";  // a checkpoint in shards
  static constexpr const char* kTokenizerConfig = "tokenizer_config.json";
  static constexpr const char* kVocabTxt = "vocab.txt";    // WordPiece
  static constexpr const char* kVocabJson = "vocab.json";  // byte-level BPE, with kMerges
  static constexpr const char* kMerges = "merges.txt";
  static constexpr const char* kTokenizerJson = "tokenizer.json";  // the tokenizers library's

  explicit ModelFolder(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string file(const char* name) const;  // dir/name
  std::string config() const { return file(kConfig); }
  std::string weights() const { return is_gguf() ? dir_ : file(kWeights); }
  // The path names a GGUF file (it ends in .gguf and is no folder).
  bool is_gguf() const;
  std::string tokenizer_config() const { return file(kTokenizerConfig); }
  bool has(const char* name) const;  // a regular file of that name is there
  // The files of the weights: model.safetensors, or the shards its index names (weight_map's
  // files, sorted; each a file name in this folder that exists), the map into *weight_map; a GGUF
  // file itself. An index that is not JSON, has no weight_map or names a path or a missing file is
  // an Error naming it.
  std::vector<std::string> weight_files(std::map<std::string, std::string>* weight_map = nullptr) const;
  bool sharded() const;  // no model.safetensors, and an index
  // SHA-256 of the weights' bytes (hex): the identity of a model in stores and records. Of a
  // sharded checkpoint: of its index and each shard's name and SHA-256.
  std::string weights_sha256() const;

 private:
  std::string dir_;
};

}  // namespace ctxsim
