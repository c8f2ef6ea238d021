// Work planning and resume state: pure functions, no MPI.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/parallel/work_units.h"
#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

TEST(Plan, UnitsCoverEverySampleOnce) {
  const auto units = make_units(103, 10);
  ASSERT_EQ(units.size(), 11u);
  EXPECT_EQ(units.back().first, 100);
  EXPECT_EQ(units.back().count, 3);
  int64_t next = 0;
  for (const auto& u : units) {
    EXPECT_EQ(u.first, next);
    next += u.count;
  }
  EXPECT_EQ(next, 103);
  EXPECT_TRUE(make_units(0, 10).empty());
}

TEST(Plan, EveryPendingUnitInExactlyOneRoundAndRank) {
  for (int size : {1, 2, 3, 7, 40}) {
    std::vector<uint8_t> done(23, 0);
    done[3] = done[4] = done[19] = 1;
    const auto pending = pending_units(done);
    EXPECT_EQ(pending.size(), 20u);
    std::multiset<int64_t> seen;
    for (int64_t k = 0; k < rounds(pending, size); ++k)
      for (int r = 0; r < size; ++r) {
        const int64_t u = unit_of(pending, k, r, size);
        if (u >= 0) seen.insert(u);
      }
    EXPECT_EQ(seen, std::multiset<int64_t>(pending.begin(), pending.end())) << size << " ranks";
  }
  // More ranks than units: the extra ranks get nothing.
  EXPECT_EQ(unit_of({5}, 0, 3, 4), -1);
  EXPECT_EQ(rounds({}, 3), 0);
}

TEST(Plan, BatchesOfAUnitDoNotDependOnRanks) {
  const WorkUnit u{2, 20, 10};
  const auto b = unit_batches(u, 4);
  EXPECT_EQ(b, (std::vector<std::pair<int64_t, int64_t>>{{20, 4}, {24, 4}, {28, 2}}));
}

TEST(Checkpoint, RoundTripAndDamageDetection) {
  test::TempDir dir;
  const std::string p = (dir.path / "store.h5.progress").string();
  EXPECT_FALSE(read_checkpoint(p).has_value());
  Checkpoint c{"abc", 7, {1, 0, 1}, std::vector<int64_t>(1000, 0)};
  c.acc[3] = 5;
  c.acc[999] = -2;
  write_checkpoint(p, c);
  const auto r = read_checkpoint(p);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->identity, "abc");
  EXPECT_EQ(r->generation, 7);
  EXPECT_EQ(r->done, c.done);
  EXPECT_EQ(r->acc, c.acc);
  EXPECT_LT(std::filesystem::file_size(p), 200u);  // sparse: two non-zero entries
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  // Any flipped byte or truncation is detected, and is an error naming the file: a resume
  // state is never dropped without a word.
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::string bad = bytes;
    bad[i] = char(bad[i] ^ 0x20);
    dir.write("store.h5.progress", bad);
    EXPECT_THROW(read_checkpoint(p), Error) << "byte " << i;
  }
  dir.write("store.h5.progress", bytes.substr(0, bytes.size() - 1));
  try {
    read_checkpoint(p);
    ADD_FAILURE() << "a truncated resume state was accepted";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(p + ": the resume state is damaged"), std::string::npos) << e.what(); }
}

}  // namespace
}  // namespace ctxsim
