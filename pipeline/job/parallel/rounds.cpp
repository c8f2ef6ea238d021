#include "pipeline/job/parallel/rounds.h"

#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/log.h"
#include "stages/base/error.h"
#include "stages/base/stopwatch.h"

namespace ctxsim {

RoundTimes run_rounds(Communicator& world, const std::vector<WorkUnit>& units, std::vector<uint8_t>& done, const RoundOptions& options,
                      UnitWork& work, const StopSignals& stop, Progress& progress) {
  CTXSIM_CHECK(done.size() == units.size(), "rounds: done and units differ in length");
  const int rank = world.rank(), size = world.size();
  const std::vector<int64_t> pending = pending_units(done);
  const int64_t n_rounds = options.shared ? int64_t(pending.size()) : rounds(pending, size);
  // The unit rank r takes part in during round k, or -1.
  const auto unit_for = [&](int64_t k, int r) { return options.shared ? pending[size_t(k)] : unit_of(pending, k, r, size); };
  int64_t samples_done = 0, samples_total = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    samples_total += units[u].count;
    if (done[u]) samples_done += units[u].count;
  }
  progress.resume_from(samples_done);
  RoundTimes times;
  int64_t units_since_flush = 0;
  Stopwatch since_flush;
  for (int64_t k = 0; k < n_rounds; ++k) {
    const int64_t u = unit_for(k, rank);
    const WorkUnit* mine = u >= 0 ? &units[size_t(u)] : nullptr;
    Vote vote;
    Stopwatch clock;
    if (mine) vote.failure = capture_failure([&] { work.compute(*mine); });
    times.compute += clock.seconds();
    vote.stop = stop.requested();
    vote.samples = mine && !vote.failure && (!options.shared || rank == 0) ? mine->count : 0;  // a shared unit counts once
    vote.flush = rank == 0 && since_flush.seconds() >= options.flush_seconds;
    const Verdict verdict = agree(world, vote);
    stop_on_failure(verdict, vote, world);  // the units of earlier rounds are already durable

    clock.restart();
    work.write(mine);
    times.write += clock.seconds();
    for (int r = 0; r < (options.shared ? 1 : size); ++r) {
      const int64_t v = unit_for(k, r);
      if (v < 0) continue;
      done[size_t(v)] = 1;
      ++units_since_flush;
    }
    samples_done += verdict.samples;
    const bool last = k + 1 == n_rounds;
    if (last || verdict.stop || verdict.flush || units_since_flush >= options.flush_units) {
      clock.restart();
      work.make_durable(done);  // the units' results, then the state that vouches for them
      times.durable += clock.seconds();
      units_since_flush = 0;
      since_flush.restart();
    }
    progress.update(samples_done);
    if (verdict.stop && !last) {
      progress.finish();
      log_info(std::string(stop.which()) + ": progress saved (" + std::to_string(samples_done) + " of " + std::to_string(samples_total) +
               " " + progress.what() + "); rerun the same command to resume. Exit code " + std::to_string(kExitInterrupted) + ".");
      throw JobExit(kExitInterrupted);
    }
  }
  progress.finish();
  return times;
}

}  // namespace ctxsim
