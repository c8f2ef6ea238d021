#include "stages/base/model_folder.h"

#include <filesystem>

#include "stages/base/digest.h"

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

std::string ModelFolder::weights_sha256() const { return sha256_file(weights()); }

}  // namespace ctxsim
