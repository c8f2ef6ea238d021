// Work planning, pure and without communication: samples → fixed units of runtime.unit_size
// consecutive samples → dealt round-robin over the pending units, so every rank computes the
// same plan from the same inputs and a unit's batches never depend on the rank count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

struct WorkUnit {
  int64_t index = 0;  // 0 … units-1
  int64_t first = 0;  // first sample
  int64_t count = 0;  // samples (the last unit may be short)
};

std::vector<WorkUnit> make_units(int64_t samples, int64_t unit_size);

// The units not yet done, in order.
std::vector<int64_t> pending_units(const std::vector<uint8_t>& done);

// Round k gives rank r the pending unit pending[k * size + r] (or nothing): returns that unit
// index or -1. rounds(pending, size) rounds cover every pending unit exactly once.
int64_t unit_of(const std::vector<int64_t>& pending, int64_t round, int rank, int size);
int64_t rounds(const std::vector<int64_t>& pending, int size);

// Empty when every rank gets a unit; else a warning that says how many ranks would idle and the
// fix ("4 ranks for 1 work unit (16 samples of 64): 3 would idle; …").
std::string idle_ranks_warning(int64_t samples, int64_t unit_size, int64_t ranks);

// Batches of one unit: [first, first + count) cut into runs of batch_size.
std::vector<std::pair<int64_t, int64_t>> unit_batches(const WorkUnit& unit, int64_t batch_size);

}  // namespace ctxsim
