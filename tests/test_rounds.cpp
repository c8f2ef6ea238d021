// The job scaffold in one process: agree() on scripted votes of other ranks, and the round loop
// over a recording UnitWork — order, flush cadence (by units and by time), a resume, a user's
// error and a bug on this rank or another, and a stop signal.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <regex>
#include <stdexcept>
#include <thread>

#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/rounds.h"
#include "stages/base/error.h"

namespace ctxsim {
namespace {

// A world of `size` ranks seen from rank 0: each all-reduce folds in what the script says the
// other ranks contributed (by default nothing: a sum of zeros, a min of "no failure").
class ScriptedComm final : public Communicator {
 public:
  using Script = std::function<void(int call, int64_t* data, size_t n, ReduceOp op)>;
  ScriptedComm(int size, Script script) : size_(size), script_(std::move(script)) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string name() const override { return "scripted"; }
  void allreduce(int64_t* data, size_t n, ReduceOp op) override {
    if (script_) script_(calls_, data, n, op);
    ++calls_;
  }
  void reduce_sum_to_root(int64_t*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void sum_to_all(float*, size_t) override {}
  void sum_to_all(double*, size_t) override {}
  void barrier() override {}
  MPI_Comm mpi() const override { return MPI_COMM_SELF; }

 private:
  int size_, calls_ = 0;
  Script script_;
};

// Records what the loop asks of it; fails or raises a stop signal at chosen units.
struct RecordingWork final : UnitWork {
  std::vector<int64_t> computed, written;
  int writes_of_nothing = 0;
  std::vector<std::vector<uint8_t>> durable;  // the `done` of every durable point
  int64_t fail_at = -1, bug_at = -1, stop_at = -1;
  void compute(const WorkUnit& u) override {
    computed.push_back(u.index);
    if (u.index == fail_at) throw Error("unit " + std::to_string(u.index), "bad input", "fix it");
    if (u.index == bug_at) throw std::logic_error("broken invariant");
    if (u.index == stop_at) StopSignals::request();
  }
  void write(const WorkUnit* u) override {
    if (u)
      written.push_back(u->index);
    else
      ++writes_of_nothing;
  }
  void make_durable(const std::vector<uint8_t>& done) override { durable.push_back(done); }
};

int64_t count_done(const std::vector<uint8_t>& d) { return std::count(d.begin(), d.end(), uint8_t(1)); }

struct Job {
  std::vector<WorkUnit> units = make_units(100, 10);  // 10 units of 10 samples
  std::vector<uint8_t> done = std::vector<uint8_t>(10, 0);
  RecordingWork work;
  RoundOptions options;
  Progress progress{100, 1e9, false};
  int exit_code = -1;
  RoundTimes run(Communicator& world) {
    const StopSignals stop;
    try {
      return run_rounds(world, units, done, options, work, stop, progress);
    } catch (const JobExit& e) { exit_code = e.code(); }
    return {};
  }
  // Runs the job and returns what it printed to stderr.
  std::string run_capturing(Communicator& world) {
    testing::internal::CaptureStderr();
    run(world);
    return testing::internal::GetCapturedStderr();
  }
};

// Runs the job and checks that it stopped with `code` and said `message` on stderr.
void expect_exit(Job& job, Communicator& world, int code, const std::string& message) {
  const std::string err = job.run_capturing(world);
  EXPECT_EQ(job.exit_code, code);
  EXPECT_NE(err.find(message), std::string::npos) << err;
}

TEST(Agree, SumsVotesAndNamesTheLowestFailingRank) {
  // Ranks 1 and 2 failed (codes 3 and 1), rank 2 saw SIGTERM, the others did 7 samples.
  ScriptedComm world(3, [](int call, int64_t* d, size_t n, ReduceOp op) {
    if (call == 0) {
      ASSERT_EQ(n, 4u);
      ASSERT_EQ(op, ReduceOp::Sum);
      d[0] += 2, d[1] += 1, d[2] += 7;
    } else {
      ASSERT_EQ(op, ReduceOp::Min);
      d[0] = std::min(d[0], int64_t(1) * 256 + kExitInternal);  // rank 1's key is lower than rank 2's
    }
  });
  Vote mine;
  mine.samples = 5;
  const Verdict v = agree(world, mine);
  EXPECT_TRUE(v.failed());
  EXPECT_EQ(v.failed_rank, 1);
  EXPECT_EQ(v.exit_code, kExitInternal);
  EXPECT_TRUE(v.stop);
  EXPECT_EQ(v.samples, 12);
  // Rank 0 did not fail: it prints nothing and stops with rank 1's code.
  testing::internal::CaptureStderr();
  try {
    stop_on_failure(v, mine, world);
    ADD_FAILURE() << "no JobExit";
  } catch (const JobExit& e) { EXPECT_EQ(e.code(), kExitInternal); }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(Agree, TheLowestFailingRankPrintsItsMessageOnce) {
  LocalComm world;
  testing::internal::CaptureStderr();
  try {
    on_every_rank(world, [] { throw Error("corpus.path", "does not exist", "point at the corpus"); });
    ADD_FAILURE() << "no JobExit";
  } catch (const JobExit& e) { EXPECT_EQ(e.code(), kExitUserError); }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("corpus.path: does not exist; fix: point at the corpus"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NO_THROW(on_every_rank(world, [] {}));
}

TEST(Rounds, ComputeWriteAndMakeDurableAtTheFlushCadence) {
  LocalComm world;
  Job job;
  job.options.flush_units = 3;
  job.run(world);
  EXPECT_EQ(job.exit_code, -1);
  EXPECT_EQ(job.work.computed, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(job.work.written, job.work.computed);
  ASSERT_EQ(job.work.durable.size(), 4u);  // after units 3, 6, 9 and the last
  EXPECT_EQ(count_done(job.work.durable[0]), 3);
  EXPECT_EQ(count_done(job.work.durable[2]), 9);
  EXPECT_EQ(count_done(job.work.durable[3]), 10);
  EXPECT_EQ(count_done(job.done), 10);
}

TEST(Rounds, FlushSecondsMakeEveryRoundDurable) {
  LocalComm world;
  Job job;
  job.options.flush_units = 1000;
  job.options.flush_seconds = 1e-9;
  job.run(world);
  EXPECT_EQ(job.work.durable.size(), 10u);
}

// Shared units (training steps): in a world of 3, rank 0 takes part in every pending unit in
// order, marks each done once and counts its samples once.
TEST(Rounds, SharedUnitsAreComputedByEveryRankInOrder) {
  int64_t reported_samples = 0;
  ScriptedComm world(3, [&](int, int64_t* d, size_t n, ReduceOp op) {
    if (op == ReduceOp::Sum && n == 4) reported_samples += d[2];  // the vote's samples, before the others' zeros
  });
  Job job;
  job.options.shared = true;
  job.options.flush_units = 4;
  job.done[2] = 1;
  job.run(world);
  EXPECT_EQ(job.exit_code, -1);
  EXPECT_EQ(job.work.computed, (std::vector<int64_t>{0, 1, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(job.work.written, job.work.computed);
  EXPECT_EQ(job.work.writes_of_nothing, 0);
  EXPECT_EQ(reported_samples, 90);
  ASSERT_EQ(job.work.durable.size(), 3u);  // after 4 and 8 more units, and the last
  EXPECT_EQ(count_done(job.work.durable[0]), 5);
  EXPECT_EQ(count_done(job.done), 10);
}

TEST(Rounds, AResumeComputesOnlyThePendingUnits) {
  LocalComm world;
  Job job;
  for (int u : {0, 1, 2, 5}) job.done[size_t(u)] = 1;
  job.run(world);
  EXPECT_EQ(job.work.computed, (std::vector<int64_t>{3, 4, 6, 7, 8, 9}));
  EXPECT_EQ(count_done(job.done), 10);
}

TEST(Rounds, AFailureLosesOnlyTheRoundInFlight) {
  LocalComm world;
  Job job;
  job.work.fail_at = 4;
  expect_exit(job, world, kExitUserError, "unit 4: bad input; fix: fix it");
  EXPECT_EQ(job.work.written, (std::vector<int64_t>{0, 1, 2, 3}));  // unit 4 is never written …
  ASSERT_FALSE(job.work.durable.empty());
  EXPECT_EQ(count_done(job.work.durable.back()), 4);  // … nor vouched for
}

TEST(Rounds, ABugStopsWithTheInternalExitCode) {
  LocalComm world;
  Job job;
  job.work.bug_at = 2;
  expect_exit(job, world, kExitInternal, "internal error");
}

TEST(Rounds, AFailureOnAnotherRankStopsThisOne) {
  // Three ranks; rank 0 deals units 0, 3, 6, 9. In the second round rank 2 fails.
  ScriptedComm world(3, [](int call, int64_t* d, size_t, ReduceOp op) {
    if (call == 1) d[0] += 1;  // round 2's vote: one failure
    if (call == 2 && op == ReduceOp::Min) d[0] = std::min(d[0], int64_t(2) * 256 + kExitUserError);
  });
  Job job;
  EXPECT_EQ(job.run_capturing(world), "");  // rank 2 reports, not rank 0
  EXPECT_EQ(job.exit_code, kExitUserError);
  EXPECT_EQ(job.work.computed, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(job.work.written, (std::vector<int64_t>{0}));
  EXPECT_EQ(count_done(job.done), 3);  // round 1: units 0, 1, 2 of the three ranks
}

TEST(Rounds, AStopSignalSavesProgressAndExitsToBeResumed) {
  LocalComm world;
  Job job;
  job.options.flush_units = 100;
  job.work.stop_at = 2;
  const std::string err = job.run_capturing(world);
  EXPECT_EQ(job.exit_code, kExitInterrupted);
  EXPECT_EQ(job.work.computed, (std::vector<int64_t>{0, 1, 2}));  // the round in flight completes
  ASSERT_EQ(job.work.durable.size(), 1u);
  EXPECT_EQ(count_done(job.work.durable[0]), 3);
  EXPECT_NE(err.find("progress saved (30 of 100 samples); rerun the same command to resume"), std::string::npos) << err;
  // The rerun continues where it stopped.
  Job again;
  again.done = job.done;
  again.run(world);
  EXPECT_EQ(again.work.computed, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9}));
}

// A resumed job's progress lines: its rate counts only the samples this process computes (a job
// resumed at 70 of 100 had printed 70 samples in its first moments, and an ETA far too short).
TEST(Rounds, AResumedJobsRateCountsOnlyWhatItComputes) {
  struct SlowWork final : UnitWork {
    void compute(const WorkUnit&) override { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }
    void write(const WorkUnit*) override {}
    void make_durable(const std::vector<uint8_t>&) override {}
  } work;
  LocalComm world;
  std::vector<WorkUnit> units = make_units(100, 10);
  std::vector<uint8_t> done(10, 0);
  std::fill(done.begin(), done.begin() + 7, uint8_t(1));
  Progress progress{100, 0, true};
  testing::internal::CaptureStderr();
  run_rounds(world, units, done, RoundOptions{}, work, StopSignals{}, progress);
  const std::string err = testing::internal::GetCapturedStderr();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(samples 100/100 \(100\.0%, 70 resumed\)  ([0-9.e+-]+) samples/s)"))) << err;
  const double rate = std::stod(m[1].str());
  EXPECT_GT(rate, 0) << err;
  EXPECT_LE(rate, 30 / 0.9 + 0.01) << err;                        // 30 samples in at least 0.9 s; counting the resumed 70 gives 100 / 0.9
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 4) << err;  // a line a round, and the last
}

}  // namespace
}  // namespace ctxsim
