// `ctxsim compare STORE|FOLDER … --out DIR`: the runs read and checked, their figures and page
// published together (pipeline/report/compare.h).
#include <filesystem>
#include <iostream>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/store_kinds.h"
#include "pipeline/commands/summary.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/report/compare.h"
#include "pipeline/report/prune_figures.h"
#include "pipeline/report/report_figures.h"
#include "pipeline/report/segment_figures.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/figure.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

// A comparison is made from its stores, in order: their paths, and a digest of their identities
// (so that the same stores copied elsewhere still make "the same" comparison).
report::PageSource compare_source(const std::vector<std::string>& paths, bool replace) {
  std::vector<std::string> names;
  Sha256 identities;
  for (const auto& p : paths) {
    names.push_back(resolved_path(p));
    identities.update_field(store_identity(open_complete_store(p)));
  }
  return {join(names, " + "), identities.hex(), replace};
}

// Stores whose page is their summaries and figures (segmentation and pruning stores: `what`
// names them): the summaries as the page's tables, the figures under them.
int summary_compare(const std::string& what, const std::vector<report::Entry>& figures, const std::string& tables, size_t n,
                    const CompareArgs& a, const report::PageSource& source, std::ostream& out) {
  if (!a.rule.empty())
    throw Error("--rule " + a.rule, what + " stores have no selection rules", "leave --rule out for " + what + " stores");
  make_folder(a.out_dir, "--out");
  const auto [html, bytes] = report::publish_page(
      a.out_dir, "compare.html", "the comparison page", figures,
      [&](const fs::path&) {
        return report::within_budget(report::summary_page(a.title, a.note + "\n" + tables, figures), a.max_bytes, "compare.html");
      },
      source);
  out << "compare: " << html << " (" << bytes / 1024 << " KiB) and " << figures.size() << " figures for " << n << " " << what
      << " stores\n";
  return 0;
}

// The kind every store has, the first's; a store of another kind is refused, naming both.
const StoreKind& common_kind(const std::vector<std::string>& paths) {
  const StoreKind* first = nullptr;
  for (const auto& p : paths) {
    const h5::FileScope scope(p);
    const h5::Id file = open_complete_store(p);
    const StoreKind& k = store_kind(file, p);
    if (!first) first = &k;
    if (&k != first)
      throw Error(
          p,
          std::string("is a ") + k.noun + " store, and " + paths.front() + " a " + first->noun + " store: compare draws stores of one kind",
          "compare the stores of one job with each other (run with run, segment with segment, prune with prune)");
  }
  return *first;
}

}  // namespace

int segment_compare(const std::vector<std::string>& paths, const CompareArgs& a, const report::PageSource& source, std::ostream& out) {
  const std::vector<report::SegmentRun> runs = report::load_segment_runs(paths, a.labels);
  std::string tables;
  for (const auto& r : runs) {
    std::ostringstream one;
    print_segment_summary(r.results, one);
    tables += r.label + " (" + r.path + ")\n" + one.str() + "\n";
  }
  return summary_compare("segmentation", report::segment_figures(runs), tables, runs.size(), a, source, out);
}

int prune_compare(const std::vector<std::string>& paths, const CompareArgs& a, const report::PageSource& source, std::ostream& out) {
  const std::vector<report::PruneRun> runs = report::load_prune_runs(paths, a.labels);
  std::string tables;
  for (const auto& r : runs) {
    std::ostringstream one;
    print_summary(r.path, SummaryOptions{}, one);
    tables += r.label + "\n" + one.str() + "\n";
  }
  return summary_compare("pruning", report::prune_compare_figures(runs, a.title), tables, runs.size(), a, source, out);
}

int run_compare(const std::vector<std::string>& paths, const CompareArgs& a, const report::PageSource& source, std::ostream& out) {
  const std::vector<report::CompareRun> runs = report::load_runs(paths, a);
  const std::vector<report::Entry> figures = report::compare_figures(runs, a.title);
  make_folder(a.out_dir, "--out");
  const auto [html, bytes] = report::publish_page(
      a.out_dir, "compare.html", "the comparison page", figures,
      [&](const fs::path& staging) { return report::compare_page(runs, figures, staging, a); }, source);
  out << "compare: " << html << " (" << bytes / 1024 << " KiB) and " << figures.size() << " figures (PNG + SVG) in "
      << (fs::path(a.out_dir) / "figures").string() << " for " << runs.size() << " runs\n";
  return 0;
}

int cmd_compare(const std::vector<std::string>& inputs, const CompareArgs& a, std::ostream& out) {
  require_figures("ctxsim compare");
  MpiSession::ensure();
  if (a.out_dir.empty()) throw Error("--out", "compare needs a folder for its page and figures", "give --out DIR");
  const std::vector<std::string> paths = report::store_paths(inputs);
  const StoreKind& kind = common_kind(paths);
  return kind.compare(paths, a, compare_source(paths, a.overwrite), out);
}

}  // namespace ctxsim
