// Shared test helpers: the real data files that scripts/setup.sh fetches.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace ctxsim::test {

inline const char* kVocabPath = "data/vocab/bert-base-uncased.txt";
inline const char* kBrownPath = "data/brown";

// Fails (not skips) when setup did not fetch the data: CI runs scripts/setup.sh first.
inline void require_data() {
  ASSERT_TRUE(std::filesystem::exists(kVocabPath) && std::filesystem::exists(kBrownPath))
      << "data missing: run scripts/setup.sh (tests run from the source folder)";
}

// A fresh temporary folder, removed when the object goes.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("ctxsim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& content) const {
    const auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  static int& counter() { static int c = 0; return c; }
};

}  // namespace ctxsim::test
