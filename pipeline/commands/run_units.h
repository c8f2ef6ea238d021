// The work units of `ctxsim run` for the round loop (job/rounds.h): a unit's batches through the
// analysis into this rank's accumulator, its per-sample results and stored examples into the
// store, and the durable point (store flush, accumulators reduced to rank 0, resume state).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/rounds.h"
#include "pipeline/store/store.h"
#include "stages/stats/analysis.h"

namespace ctxsim {

// Where the run's resume state goes and what it vouches for.
struct ResumeTarget {
  std::string path;        // <store>.progress
  std::string identity;    // sha256 of the results-determining config
  int64_t generation = 0;  // of the last state written
};

class AnalysisUnits final : public UnitWork {
 public:
  // examples: the sample ids stored with their full matrices; acc: this rank's accumulator (on
  // rank 0 the running total).
  AnalysisUnits(const Analysis& analysis, const SampleSet& samples, int64_t batch_size, std::vector<int64_t> examples, Store& store,
                Accumulator& acc, Communicator& world, Communicator& reducer, ResumeTarget resume);

  void compute(const WorkUnit& unit) override;
  void write(const WorkUnit* unit) override;
  void make_durable(const std::vector<uint8_t>& done) override;

  const BatchTimes& batch_times() const { return batch_times_; }

 private:
  // Example rows of a batch: [layer] tensors of attention, similarity [H, T, T] and selections [R, H, T, T].
  void store_examples(const std::vector<std::pair<int64_t, int64_t>>& in_batch, const std::vector<std::vector<at::Tensor>>& attention,
                      const std::vector<std::vector<at::Tensor>>& similarity, const std::vector<std::vector<at::Tensor>>& selected);
  const Analysis& analysis_;
  const SampleSet& samples_;
  const int64_t batch_size_;
  const std::vector<int64_t> examples_;
  Store& store_;
  Accumulator& acc_;
  Communicator& world_;
  Communicator& reducer_;
  ResumeTarget resume_;
  int64_t R_, L_, H_, T_;
  // The per-sample results of the unit computed this round: [R, unit samples, L, H].
  std::vector<int32_t> anchor_token_, high_pairs_;
  std::vector<float> anchor_share_;
  std::vector<int64_t> unit_row_;  // the unit's partial sums (Accumulator::unit_row), for /units
  BatchTimes batch_times_;
  at::Tensor device_acc_;  // a GPU rank's counts on its device (laid out as acc_'s buffer); undefined on the CPU path
};

// Test hooks, never set in production: CTXSIM_FAULT=<where>@<rank> makes that rank fail at
// "setup" or in its first "unit"; CTXSIM_UNIT_DELAY_MS slows every unit down.
bool fault_here(const std::string& where, int rank);
void unit_delay_for_tests();

}  // namespace ctxsim
