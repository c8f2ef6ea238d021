// `ctxsim compare STORE|FOLDER … --out DIR`: the runs read and checked, their figures and page
// published together (pipeline/report/compare.h).
#include <filesystem>
#include <iostream>

#include "pipeline/commands/commands.h"
#include "pipeline/job/dist/comm.h"
#include "pipeline/report/compare.h"
#include "pipeline/report/report_figures.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/figure.h"

namespace fs = std::filesystem;

namespace ctxsim {

int cmd_compare(const std::vector<std::string>& inputs, const CompareArgs& a, std::ostream& out) {
  require_figures("ctxsim compare");
  MpiSession::ensure();
  if (a.out_dir.empty()) throw Error("--out", "compare needs a folder for its page and figures", "give --out DIR");
  const std::vector<report::CompareRun> runs = report::load_runs(report::store_paths(inputs), a);
  const std::vector<report::Entry> figures = report::compare_figures(runs, a.title);
  make_folder(a.out_dir, "--out");
  const auto [html, bytes] = report::publish_page(a.out_dir, "compare.html", "the comparison page", figures,
                                                  [&](const fs::path& staging) { return report::compare_page(runs, figures, staging, a); });
  out << "compare: " << html << " (" << bytes / 1024 << " KiB) and " << figures.size() << " figures (PNG + SVG) in "
      << (fs::path(a.out_dir) / "figures").string() << " for " << runs.size() << " runs\n";
  return 0;
}

}  // namespace ctxsim
