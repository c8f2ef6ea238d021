// The rounds of an MPI job over its work units. In round k every rank computes the k-th of its
// pending units (or nothing); then all ranks agree (pipeline/job/parallel/agree.h) on errors, a stop signal and
// whether progress is due to become durable; they write the round's results together; and, when
// due, they make everything so far durable. A failure stops every rank with the failing rank's
// message and exit code, and loses only the round in flight; a stop signal makes progress
// durable and stops with kExitInterrupted. What a unit computes, writes and keeps is the job's.
#pragma once
#include <cstdint>
#include <vector>

#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/progress.h"
#include "pipeline/job/parallel/signals.h"
#include "pipeline/job/parallel/work_units.h"

namespace ctxsim {

// What a job does with its units (run: the analysis; pretrain: training steps).
class UnitWork {
 public:
  virtual ~UnitWork() = default;
  // Computes this rank's unit; its results wait for write(). Throws ctxsim::Error on bad input.
  virtual void compute(const WorkUnit& unit) = 0;
  // Collective: the results of the unit this rank computed in the round (nullptr: none).
  virtual void write(const WorkUnit* unit) = 0;
  // Collective: everything written so far, and `done`, must survive a kill from here on.
  virtual void make_durable(const std::vector<uint8_t>& done) = 0;
};

struct RoundOptions {
  int64_t flush_units = 1;    // durable every N completed units …
  double flush_seconds = 60;  // … or every N seconds of rank 0's clock, whichever comes first
  // false: units are dealt round-robin, one per rank and round (run). true: every rank takes
  // part in every unit, one unit per round in order (a training step, its batch split over the
  // ranks inside compute and write).
  bool shared = false;
};

// Seconds this rank spent computing, writing and making progress durable.
struct RoundTimes {
  double compute = 0, write = 0, durable = 0;
};

// Runs every unit whose done[u] is 0 (a resumed job has some at 1) and marks it done. Throws
// JobExit on a failure or a stop signal, as above.
RoundTimes run_rounds(Communicator& world, const std::vector<WorkUnit>& units, std::vector<uint8_t>& done, const RoundOptions& options,
                      UnitWork& work, const StopSignals& stop, Progress& progress);

}  // namespace ctxsim
