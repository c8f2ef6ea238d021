// Shared test helpers: the real data files that scripts/setup.sh fetches.
#pragma once
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "stages/base/error.h"

namespace ctxsim::test {

// The message of the ctxsim Error that `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

inline const char* kVocabPath = "data/vocab/bert-base-uncased.txt";
inline const char* kBrownPath = "data/brown";

// Whether scripts/setup.sh fetched the real data (the Brown corpus and the vocabulary).
inline bool data_available() { return std::filesystem::exists(kVocabPath) && std::filesystem::exists(kBrownPath); }

// Whether OpenBLAS runs its AVX2 kernel sets (Haswell, Zen), whose float32 products round a row
// by the thread count and by the rows that share its call (docs/PERFORMANCE.md); false for its
// AVX-512 sets and for another BLAS.
inline bool openblas_avx2_kernels() {
  const auto corename = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* core = corename ? corename() : "";
  return strcasecmp(core, "haswell") == 0 || strcasecmp(core, "zen") == 0;
}

// A fresh temporary folder, removed when the object goes.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("ctxsim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
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
  static int& counter() {
    static int c = 0;
    return c;
  }
};

}  // namespace ctxsim::test

// A message (an exception's what(), a log) holds `part`; on failure the whole message is shown.
#define EXPECT_HAS(msg, part) EXPECT_NE(std::string(msg).find(part), std::string::npos) << "message: " << (msg)

// Skips the test (label integration: it reads the real data) when setup has not fetched it.
#define CTXSIM_REQUIRE_DATA()                                                                          \
  if (!::ctxsim::test::data_available())                                                               \
  GTEST_SKIP() << "needs the Brown corpus and the bert-base-uncased vocabulary: run scripts/setup.sh " \
                  "(tests run from the source folder)"
