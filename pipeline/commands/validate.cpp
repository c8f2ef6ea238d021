// `ctxsim validate`, `sweep` and `status`: a config and its sweep checked and listed, and how
// far a run got.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>
#include "pipeline/commands/commands.h"
#include "pipeline/commands/store_kinds.h"

#include "ctxsim_revision.h"
#include "pipeline/job/config/sweep.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/model/compute_build.h"

namespace ctxsim {

std::string version_string() { return std::string("ctxsim ") + CTXSIM_VERSION + " (git " + CTXSIM_GIT_REVISION + ")"; }

std::string version_report() { return version_string() + "\n" + compute_build_line() + "\n" + reduction_build_line(); }

int cmd_validate(const std::string& path, const std::vector<std::string>& overrides, std::ostream& out) {
  const Config c = load_config(path, overrides);
  check_paths(c);
  out << "# " << path << " is valid; the effective config (defaults filled in):\n" << to_yaml(c);
  return 0;
}

int cmd_sweep(const std::string& path, const std::vector<std::string>& overrides, std::ostream& out) {
  const Config c = load_config(path, overrides);
  const SweepPlan plan = expand_sweep(c);
  out << "sweep " << plan.name << ": " << plan.points.size() << " point(s)";
  if (c.sweep.empty()) out << " (the config has no sweep: section)";
  out << "\n";
  for (const auto& f : plan.folded)
    out << "  folded into every point's rule list (one forward pass evaluates them all, no extra job): " << f << "\n";
  for (const auto& p : plan.points) {
    out << "  [" << p.index << "] " << p.name << "\n      output: " << p.output_dir << "\n      overrides:";
    for (const auto& o : p.overrides)
      if (o.rfind("output.dir=", 0) != 0) out << " " << o;
    out << "\n";
  }
  return 0;
}

int cmd_status(const std::string& store, std::ostream& out) {
  MpiSession::ensure();  // parallel HDF5 needs MPI even to read
  const StoreInfo info = inspect_store(store);
  if (!info.exists()) throw Error(store, "no store here", "give the store.h5 of a run (output.dir/store.h5)");
  if (info.kind == StoreInfo::Kind::NotAStore)
    throw Error(store, "not a ctxsim store: " + info.what, "give the store.h5 of a run (output.dir/store.h5)");
  if (info.complete) {
    // Complete means readable: every check its readers make (summary's, and the report's of the
    // samples and examples), so that status never vouches for a store they would refuse. stdout
    // stays the one word scripts compare with; what was checked goes to the log.
    std::string holds;
    {
      const h5::FileScope scope(store);
      const h5::Id file = open_complete_store(store);
      holds = store_kind(file, store).verify(file, store);
    }
    log_info(store + ": " + holds + "; every check passed");
    out << "complete\n";
    return 0;
  }
  const auto c = read_checkpoint(checkpoint_path(store));  // an unreadable one is an error
  if (!c) {
    out << "started, no unit done yet (no resume state beside it)\n";
    return 0;
  }
  const auto n = std::count(c->done.begin(), c->done.end(), uint8_t(1));
  out << "units done: " << n << " of " << c->done.size() << " (generation " << c->generation << ")\n";
  return 0;
}

}  // namespace ctxsim
