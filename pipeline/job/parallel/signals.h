// Stop requests: SIGTERM (SLURM's warning before the time limit) and SIGINT (Ctrl-C) set a flag
// that the round loop reads once per round, where every rank can stop at the same point with
// its progress saved. A second Ctrl-C ends the process at once. The handlers are installed for
// the guard's lifetime.
#pragma once

namespace ctxsim {

class StopSignals {
 public:
  StopSignals();   // installs the handlers and clears the flag
  ~StopSignals();  // restores the previous handlers
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool requested() const;
  // "SIGTERM" or "SIGINT" when this process received one, else "a stop signal on another rank".
  const char* which() const;
  static void request();  // what SIGTERM's handler does (also for tests)
};

}  // namespace ctxsim
