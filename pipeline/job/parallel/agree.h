// The one cross-rank decision point of a job. Every decision all ranks must share — stop on an
// error, stop on a signal, make progress durable now — goes through agree(): one small
// all-reduce of what each rank saw, so that no rank takes a branch the others do not.
// Precondition: every rank calls it at the same point of the job.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "pipeline/job/parallel/comm.h"
#include "stages/base/error.h"

namespace ctxsim {

// Thrown on every rank when the job stops for a reason all ranks agreed on (an error already
// reported by one rank, a signal): main exits with code() and prints nothing more.
class JobExit : public std::runtime_error {
 public:
  explicit JobExit(int code);
  int code() const { return code_; }

 private:
  int code_;
};

// A failure on this rank: the message main would print and the exit code it stands for.
struct Failure {
  std::string message;
  int exit_code = 0;  // kExitUserError (ctxsim::Error) or kExitInternal (a bug)
};

// Runs fn and returns what it threw, if anything, as a Failure (Error: the user's; anything
// else: ctxsim's own bug).
template <class Fn>
std::optional<Failure> capture_failure(Fn&& fn) {
  try {
    fn();
  } catch (const JobExit&) {
    throw;  // already agreed
  } catch (const Error& e) { return Failure{e.what(), kExitUserError}; } catch (const InternalError& e) {
    return Failure{std::string("internal error at ") + e.what() + " (a bug: please report it with the command line)", kExitInternal};
  } catch (const std::exception& e) {
    return Failure{std::string("internal error: ") + e.what() + " (please report it with the command line)", kExitInternal};
  }
  return std::nullopt;
}

// What one rank saw in a round.
struct Vote {
  std::optional<Failure> failure;
  bool stop = false;    // a stop signal arrived (SIGTERM)
  int64_t samples = 0;  // samples it completed
  bool flush = false;   // progress should become durable now (rank 0's clock)
};

// What all ranks agree on.
struct Verdict {
  int failed_rank = -1;  // the lowest rank that failed, or -1
  int exit_code = 0;     // that rank's exit code
  bool stop = false;     // any rank saw a stop signal
  int64_t samples = 0;   // summed
  bool flush = false;    // any rank asked
  bool failed() const { return failed_rank >= 0; }
};

Verdict agree(Communicator& world, const Vote& mine);

// When the verdict is a failure: the failing rank prints its message (once), and every rank
// throws JobExit with its exit code. Returns otherwise.
void stop_on_failure(const Verdict& verdict, const Vote& mine, const Communicator& world);

// Runs fn on every rank; if it fails on any rank, the lowest failing rank prints its message and
// every rank stops with that rank's exit code (no rank is left waiting in a collective).
template <class Fn>
void on_every_rank(Communicator& world, Fn&& fn) {
  Vote mine;
  mine.failure = capture_failure(fn);
  stop_on_failure(agree(world, mine), mine, world);
}

// The same string on every rank: rank root's.
std::string broadcast_string(Communicator& world, std::string s, int root = 0);

}  // namespace ctxsim
