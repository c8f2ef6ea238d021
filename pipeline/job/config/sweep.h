// Sweeps: a config's sweep: section expanded into the points of a cartesian product (zip groups
// vary together), each a set of overrides with its own output folder. Axes of selection rules,
// the attention threshold and the separator set are folded into each point's rule list instead:
// one forward pass evaluates every rule (SPEC §3).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/job/config/config.h"

namespace ctxsim {

// One point of a sweep: the overrides that make it, and where its store goes.
struct SweepPoint {
  int64_t index = 0;
  std::string name;                    // "model.vector-projected__samples.seq_len-64" ("all" when only folded axes): safe_folder_name
  std::vector<std::string> values;     // the swept keys' key=value (the folded rule axes not among them)
  std::vector<std::string> overrides;  // key=value, applied after the config's own overrides
  std::string output_dir;              // output.dir/<sweep name>/<point name>
};
struct SweepPlan {
  std::string name;
  std::vector<SweepPoint> points;
  std::vector<std::string> folded;  // axes folded into every point's rule list (no extra runs)
};
// Sweeps larger than this are refused (each point is a job).
constexpr size_t kMaxSweepPoints = 100000;

// A folder name safe in every shell and file system: letters, digits, '.', '_' and '-' (anything
// else becomes '_'), not starting with '-' or '.', at most 200 bytes (a longer one keeps its
// start and ends in a digest of the whole).
std::string safe_folder_name(const std::string& name);

// Expands config.sweep. Points get distinct folders (paths are named by as many last components
// as tell them apart); a sweep whose points would still share one is refused. Axes of selection rules do not change the forward pass: they
// are folded into each point's `selection` list (SPEC §3: one pass evaluates every rule).
SweepPlan expand_sweep(const Config& config);

}  // namespace ctxsim
