#include "pipeline/job/parallel/agree.h"

#include "pipeline/job/parallel/log.h"

namespace ctxsim {

JobExit::JobExit(int code) : std::runtime_error("job stopped with exit code " + std::to_string(code)), code_(code) {}

Verdict agree(Communicator& world, const Vote& mine) {
  // [failed ranks, stop signals, samples, flush requests]: one all-reduce in the common case.
  int64_t sums[4] = {mine.failure ? 1 : 0, mine.stop ? 1 : 0, mine.samples, mine.flush ? 1 : 0};
  world.allreduce(sums, 4, ReduceOp::Sum);
  Verdict v;
  v.stop = sums[1] > 0;
  v.samples = sums[2];
  v.flush = sums[3] > 0;
  if (sums[0] > 0) {
    // Only after a failure: which rank (the lowest) and its exit code, as one key.
    int64_t key = mine.failure ? int64_t(world.rank()) * 256 + mine.failure->exit_code : int64_t(world.size()) * 256;
    world.allreduce(&key, 1, ReduceOp::Min);
    v.failed_rank = int(key / 256);
    v.exit_code = int(key % 256);
  }
  return v;
}

void stop_on_failure(const Verdict& verdict, const Vote& mine, const Communicator& world) {
  if (!verdict.failed()) return;
  if (world.rank() == verdict.failed_rank && mine.failure) log_error(mine.failure->message);
  throw JobExit(verdict.exit_code);
}

std::string broadcast_string(Communicator& world, std::string s, int root) {
  int64_t n = int64_t(s.size());
  world.broadcast(&n, sizeof n, root);
  s.resize(size_t(n));
  if (n) world.broadcast(s.data(), size_t(n), root);
  return s;
}

}  // namespace ctxsim
