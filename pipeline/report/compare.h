// Several finished runs drawn together (`ctxsim compare STORE|FOLDER …`) (e.g. a trained model,
// its step-0 init and another random seed on the same samples): per-layer distance distributions
// against chance, same-sentence and repetition lift, distinct anchors, attention on each
// separator, attention overlap and noise share, as PNG + SVG figures and one self-contained
// compare.html. Stores whose layers or sample length differ are refused with the store named.
#pragma once
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "pipeline/report/figure_entry.h"
#include "pipeline/report/layer_figures.h"
#include "pipeline/store/store_reader.h"
#include "stages/figures/render.h"

namespace ctxsim {

struct CompareArgs {
  std::string out_dir;              // required: compare.html and figures/ go here
  std::vector<std::string> labels;  // one per store, in order (default: the store's folder)
  std::string rule;                 // the rule every store must have (default: the first store's first)
  std::string title = "ctxsim compare";
  std::string note;              // a paragraph under the title (what to read in the page)
  int64_t max_bytes = 25 << 20;  // compare.html budget
  bool overwrite = false;        // replace a comparison of other stores in --out
};

namespace report {

// One store as a comparison shows it.
struct CompareRun {
  std::string label, path, model, dtype, windows, split;
  Baseline base;
  RuleStats stats;
  std::vector<Counts> layers;  // all heads of each layer
  Intervals intervals;         // the rule's bootstrap intervals (SPEC §5.1); empty without /units
  Rgb colour;
};

// store.h5 files and folders (searched for complete stores, sorted) as the stores to compare; at
// least two.
std::vector<std::string> store_paths(const std::vector<std::string>& inputs);
// Reads and checks every store before anything is drawn: the rule they share, the same layer
// count and T; colours in order.
std::vector<CompareRun> load_runs(const std::vector<std::string>& paths, const CompareArgs& args);
// The per-layer figures of the runs together.
std::vector<Entry> compare_figures(const std::vector<CompareRun>& runs, const std::string& title);
// compare.html: the runs' table, the figures (read from figure_dir) and their index.
std::string compare_page(const std::vector<CompareRun>& runs, const std::vector<Entry>& figures, const std::filesystem::path& figure_dir,
                         const CompareArgs& args);

}  // namespace report
}  // namespace ctxsim
