// `ctxsim report STORE [--out DIR]`: the study's figures (SVG described once, PNG rasterised
// from it) and one self-contained report.html (no network: images and data are embedded) with
// an explorer of the stored examples: attention, context similarity and attention rollout per
// layer and head, a layer x head "model view", overlays and per-token relevance bars.
//
// Everything is read and checked before anything is written; figures go to a staging folder
// that replaces figures/ only when the whole report succeeded, and report.html is renamed into
// place last, so a failed report never leaves a partial one looking complete.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/store_kinds.h"
#include "pipeline/commands/summary.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/report/prune_figures.h"
#include "pipeline/report/report_data.h"
#include "pipeline/report/report_figures.h"
#include "pipeline/report/report_page.h"
#include "pipeline/report/segment_figures.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/figure.h"
#include "stages/figures/render.h"
#include "stages/stats/rollout.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

using namespace report;

// The store a report is made from: its absolute path and its identity.
PageSource page_source(const std::string& store_path, bool replace) {
  const h5::Id file = open_complete_store(store_path);
  return {resolved_path(store_path), store_identity(file), replace};
}

// The report of a store whose page is its summary and figures (a segmentation or a pruning store:
// `what` names it in messages): the options that only a run store takes are refused.
int figures_report(const std::string& store_path, const ReportArgs& args, const std::string& what, const std::string& title,
                   const std::string& summary, const std::vector<Entry>& figures, std::ostream& out) {
  if (!args.rule.empty()) throw Error("--rule " + args.rule, "a " + what + " has no selection rules", "leave --rule out for a " + what);
  if (!args.heads.empty()) throw Error("--heads", "a " + what + " keeps no per-head examples to draw", "leave --heads out for a " + what);
  if (args.list_figures) {
    for (const auto& f : figures) out << f.stem << "\n";
    return 0;
  }
  const std::string dir = args.out_dir.empty() ? fs::path(store_path).parent_path().string() : args.out_dir;
  make_folder(dir.empty() ? "." : dir, args.out_dir.empty() ? "the store's folder" : "--out");
  const auto [html, bytes] = publish_page(
      dir, "report.html", "the report", figures,
      [&](const fs::path&) { return within_budget(summary_page(title, summary, figures), args.max_bytes, "report.html"); },
      page_source(store_path, args.overwrite));
  out << "report: " << html << " (" << bytes / 1024 << " KiB) and " << figures.size() << " figures (PNG + SVG) in "
      << (fs::path(dir) / "figures").string() << "\n";
  return 0;
}

// A segmentation store's report: its figures and the method table.
}  // namespace

int segment_report(hid_t, const std::string& store_path, const ReportArgs& args, std::ostream& out) {
  const std::vector<SegmentRun> runs = load_segment_runs({store_path}, {});
  std::ostringstream summary;
  print_segment_summary(runs.front().results, summary);
  return figures_report(store_path, args, "segmentation store", "ctxsim segment: " + runs.front().label, summary.str(),
                        segment_figures(runs), out);
}

// A pruning store's report: its curves and per-head maps under its summary.
int prune_report(hid_t file, const std::string& store_path, const ReportArgs& args, std::ostream& out) {
  const PruneStoreData d = read_prune_store(file, store_path);
  std::ostringstream summary;
  print_summary(store_path, SummaryOptions{}, summary);
  std::string label = fs::path(store_path).parent_path().filename().string();
  if (label.empty()) label = store_path;
  return figures_report(store_path, args, "pruning store", "ctxsim prune: " + label, summary.str(),
                        prune_figures(d, "prune " + label + " · model " + fs::path(d.model_path).filename().string()), out);
}

int cmd_report(const std::string& store_path, const ReportArgs& args, std::ostream& out) {
  const h5::FileScope scope(store_path);
  require_figures("ctxsim report");
  MpiSession::ensure();
  if (args.max_bytes < (1 << 20))
    throw Error("--max-bytes", std::to_string(args.max_bytes) + " is too small for a report", "give at least 1048576 (1 MiB)");
  const h5::Id file = open_complete_store(store_path);
  return store_kind(file, store_path).report(file, store_path, args, out);
}

// A run store's report: the aggregate figures, each example's matrices and rollout, the page.
int run_report(hid_t file, const std::string& store_path, const ReportArgs& args, std::ostream& out) {
  const StoreData d = load_store_data(file, store_path, args.rule);
  const auto heads = parse_heads(args.heads, d);

  std::vector<Entry> figures;
  aggregate_figures(d, figures);
  const size_t E = d.example_ids.size();
  std::vector<std::vector<double>> rollouts(E);
  for (size_t e = 0; e < E; ++e) {
    const Example x = load_example(file, d, e);
    rollouts[e] = attention_rollout(x.attention, d.L, d.H, d.T, x.n);
    example_figures(d, x, e, rollouts[e], heads, figures);
  }
  if (args.list_figures) {
    for (const auto& f : figures) out << f.stem << "\n";
    return 0;
  }
  const std::string dir = args.out_dir.empty() ? fs::path(store_path).parent_path().string() : args.out_dir;
  make_folder(dir.empty() ? "." : dir, args.out_dir.empty() ? "the store's folder" : "--out");
  const auto [html, bytes] = publish_page(
      dir, "report.html", "the report", figures,
      [&](const fs::path& staging) {
        std::ostringstream summary;
        print_summary(store_path, SummaryOptions{}, summary);
        return report_page(file, d, figures, staging.string(), rollouts, summary.str(), args.max_bytes);
      },
      page_source(store_path, args.overwrite));
  out << "report: " << html << " (" << bytes / 1024 << " KiB) and " << figures.size() << " figures (PNG + SVG) in "
      << (fs::path(dir) / "figures").string() << "\n";
  return 0;
}

}  // namespace ctxsim
