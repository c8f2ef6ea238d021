// The inputs of a job from its config (pipeline/job/config/inputs.h): models found offline in the
// Hugging Face cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "pipeline/job/config/inputs.h"
#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

TEST(HuggingFaceCache, ResolvesRefsMainAndSaysWhereItLooked) {
  test::TempDir tmp;
  const auto snap = tmp.path / "hub/models--google--bert_uncased/snapshots/abc123";
  std::filesystem::create_directories(snap);
  tmp.write("hub/models--google--bert_uncased/refs/main", "abc123");
  setenv("HF_HUB_CACHE", (tmp.path / "hub").c_str(), 1);
  EXPECT_EQ(resolve_hf_cache("google/bert_uncased"), snap.string());
  try {
    resolve_hf_cache("bert-base-uncased");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), (tmp.path / "hub/models--bert-base-uncased/snapshots").string());
    EXPECT_HAS(e.what(), "model.path");
  }
  unsetenv("HF_HUB_CACHE");
  setenv("HF_HOME", tmp.path.c_str(), 1);
  EXPECT_EQ(resolve_hf_cache("google/bert_uncased"), snap.string());
  unsetenv("HF_HOME");
}

}  // namespace
}  // namespace ctxsim
