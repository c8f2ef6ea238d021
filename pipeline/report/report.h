// `ctxsim report`: the figures of a finished store (PNG + SVG) and one self-contained report.html
// with an explorer of its examples, next to the store or in out_dir. Refuses incomplete or
// damaged stores, and leaves no partial report behind.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ctxsim {

// Figures (PNG + SVG) and a self-contained report.html with an example explorer, next to the
// store or in out_dir. Refuses incomplete or damaged stores.
struct ReportArgs {
  std::string out_dir;                    // default: the store's folder
  int64_t max_bytes = 25 << 20;           // report.html budget
  std::string rule;                       // the store's rule the figures use (default: the first)
  std::vector<std::string> heads;         // "LAYER:HEAD" drawn per example (default: 0, L/2, L-1 at head 0)
};
int cmd_report(const std::string& store, const ReportArgs& args, std::ostream& out);

}  // namespace ctxsim
