// Stop requests from a job's scheduler: SIGTERM (SLURM's warning before the time limit) sets a
// flag that the round loop reads once per round, where every rank can stop at the same point
// with its progress saved. The handler is installed for the guard's lifetime.
#pragma once

namespace ctxsim {

class StopSignals {
 public:
  StopSignals();   // installs the handler and clears the flag
  ~StopSignals();  // restores the previous handler
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool requested() const;
  static void request();  // what the handler does (also for tests)
};

}  // namespace ctxsim
