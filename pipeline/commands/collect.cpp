// `ctxsim collect SWEEP_DIR`: one CSV row per (point, rule, layer, head) with the headline
// statistics of every complete store under the folder, next to their chance rates, for plotting.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string_view>

#include "pipeline/commands/commands.h"
#include "pipeline/job/dist/comm.h"
#include "pipeline/job/dist/log.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/stats/metrics.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

// A text cell (a sweep folder's name, a rule, vocabulary tokens): quoted as RFC 4180 asks when it
// holds a comma, quote or line break, and, as OWASP recommends against CSV formula injection, one
// that a spreadsheet would run as a formula (beginning with = + - @, a tab or a carriage return)
// gets a leading ' and quotes, so it is shown as the text it is.
std::string csv_field(const std::string& s) {
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos;
  if (!formula && s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = formula ? "\"'" : "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

int cmd_collect(const std::string& dir, const std::string& out_path, std::ostream& out) {
  if (!fs::is_directory(dir)) throw Error(dir, "not a folder", "give the sweep's folder: output.dir/<sweep name>");
  MpiSession::ensure();
  const std::vector<std::string> stores = stores_under(dir);
  const std::string target = out_path.empty() ? (fs::path(dir) / "collect.csv").string() : out_path;
  std::ostringstream csv;
  // Every row of the metric table (stages/stats/metrics.h), then the bounds of the head's 95%
  // bootstrap interval of each that has one (SPEC §5.1; empty cells for a store without units),
  // the per-token separator masses and the head's top anchor.
  csv << "point,rule,layer,head,samples";
  for (const Metric& m : metrics()) csv << "," << m.name;
  for (const Metric& m : metrics())
    if (m.interval) csv << "," << m.name << "_lo," << m.name << "_hi";
  csv << ",separator_mass_by_token,top_anchor,top_anchor_samples\n";
  csv << std::setprecision(6);
  int64_t used = 0, rows = 0;
  for (const fs::path path : stores) {
    const std::string point = fs::relative(path.parent_path(), dir).string();
    const h5::FileScope scope(path.string());
    const StoreInfo info = inspect_store(path.string());
    if (!info.complete) {
      log_info("collect: skipping " + path.string() +
               (info.kind == StoreInfo::Kind::NotAStore ? " (" + info.what + ")" : " (not complete; rerun its point to finish it)"));
      continue;
    }
    const h5::Id file = open_complete_store(path.string());
    if (is_segment_store(file))
      throw Error(path.string(), "is a segmentation store (ctxsim segment); collect gathers the run stores of a sweep",
                  "move it out of " + dir + ", and draw segmentations together with 'ctxsim compare STORE STORE … --out DIR'");
    const auto vocab = store_vocab(file);
    const StoreStats stats = read_store_stats(file, path.string(), int64_t(vocab.size()));
    const Baseline base = baseline_of(stats);
    for (size_t ri = 0; ri < stats.rules.size(); ++ri) {
      const std::string& rule = stats.rules[ri];
      const RuleStats r = rule_stats_of(stats, ri);
      const Intervals iv = store_intervals(file, path.string(), stats, ri);
      for (int64_t l = 0; l < r.L; ++l)
        for (int64_t h = 0; h < r.H; ++h) {
          const Counts c = r.head(l, h);
          const auto top = r.top_anchors(l, h, 1);
          std::ostringstream by_token;  // "[SEP]=0.052;.=0.021": stores of a sweep may measure different separators
          by_token << std::setprecision(6);
          for (size_t u = 0; u < base.separator_tokens.size(); ++u)
            by_token << (u ? ";" : "") << base.separator_tokens[u] << "=" << base.separator_token_attention(l, h, u);
          csv << csv_field(point) << "," << csv_field(rule) << "," << l << "," << h << "," << base.samples();
          for (const Metric& m : metrics()) {
            if (m.whole)
              csv << "," << int64_t(m.value(c, base));
            else
              csv << "," << m.value(c, base);
          }
          for (const Metric& m : metrics()) {
            if (!m.interval) continue;
            if (const Interval* i = iv.of(m, int(l), int(h)))
              csv << "," << i->lo << "," << i->hi;
            else
              csv << ",,";
          }
          csv << "," << csv_field(by_token.str()) << "," << csv_field(top.empty() ? std::string() : token_text(vocab, top[0])) << ","
              << (top.empty() ? 0 : r.anchor_count(l, h, top[0])) << "\n";
          ++rows;
        }
    }
    ++used;
  }
  if (used == 0)
    throw Error(dir, "no complete store.h5 under this folder (" + std::to_string(stores.size()) + " found)",
                "run the sweep's points first (ctxsim run CONFIG, or ctxsim submit CONFIG)");
  atomic_write(target, csv.str());
  out << "collect: " << rows << " rows from " << used << " store(s) into " << target << "\n";
  return 0;
}

}  // namespace ctxsim
